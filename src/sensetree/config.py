"""Settings: one TOML file in the data dir, with the keys described in design §8.

Settings are a contract: every key has a type and a range (``BOUNDS`` for numbers, ``CHOICES`` for
words, plain text without control characters otherwise), checked by ``check`` wherever a value comes
in (``config set``, ``PUT /api/settings``, the file), the range said in the refusal; NaN and
infinities are refused. Missing keys take their defaults; a key out of range in the file takes its
default with a ``problem`` said. A file that is not valid TOML is reported (``Settings.problem``,
with the line) and the last good settings are used: each successful load or save keeps a copy,
``settings.last-good.toml``. Without one, the defaults are used, ``Settings.unreadable`` is set, and
nothing that would wipe the index on that guess runs (``Context.follow_model``: the index keeps its model).
"""

from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs
import tomlkit

from .errors import BadInput, DataDirUnusable

SETTINGS_FILE = "settings.toml"
LAST_GOOD_FILE = "settings.last-good.toml"  # a copy of the last file that read whole
TEXT_LIMIT = 4096  # characters in a text setting (a URL, a key, a model name or folder)

# key -> (default, help). The dotted key is the TOML table and field.
DEFAULTS: dict[str, tuple[Any, str]] = {
    "retrieval.hybrid": (True, "off = dense only; loses exact-token robustness"),
    "retrieval.rerank": (True, "off = faster, no cross-encoder loaded, lower precision"),
    "retrieval.fusion": (
        "both",
        "how the legs are merged: both (every candidate judged by its meaning and its keywords, the dense share from how the keyword leg's first hits agree with the query's meaning), evidence (files, legs weighted per query from what each returned: BM25 cut when its files are in another language than the query), weighted (the same without that) or rrf (the seed's plain RRF on chunks)",
    ),
    "retrieval.on_demand_seconds": (
        0.8,
        "seconds a search may spend embedding its keyword candidates that have no vector yet (kept for the semantic phase); 0 = never",
    ),
    "retrieval.spelling": (
        "both",
        "a query word no file has, one or two edits from an indexed word, is searched as that word: by both legs, the BM25 leg only, or off",
    ),
    "retrieval.collapse_duplicates": (True, "files with identical content show once, with their other places listed"),
    "retrieval.reranker_model": ("BAAI/bge-reranker-v2-m3", "the cross-encoder (name or local folder)"),
    "indexing.chunk_size": (1000, "characters per chunk; affects files indexed afterwards"),
    "indexing.overlap": (200, "characters of overlap, less than the chunk size (the default is capped at half of it)"),
    "indexing.max_file_mb": (50, "larger files are indexed by context only"),
    "indexing.batch_size": (32, "texts per embedding call"),
    "indexing.qualify_documents": (True, "write a sense for documents with a language model"),
    "indexing.qualify_context": (True, "write a sense for context-only files"),
    "indexing.ocr": (True, "read scanned PDF pages and images with OCR (bundled RapidOCR, offline)"),
    "indexing.ocr_engine": (
        "rapidocr",
        "rapidocr (bundled: Latin scripts, Chinese, Japanese) or tesseract (if installed)",
    ),
    "indexing.ocr_languages": ("", "Tesseract's language codes, comma-separated (e.g. rus,eng); rapidocr needs none"),
    "indexing.ocr_max_pages": (200, "pages OCR reads per file; a longer scan is indexed by its first pages"),
    "indexing.ocr_page_timeout": (60.0, "seconds OCR may take for one page; a slower page is skipped, the rest kept"),
    "indexing.file_timeout": (
        120.0,
        "seconds one file may take to read; a slower one is indexed by its name and place",
    ),
    "indexing.watch_polling": (
        "auto",
        "how `index --watch` and `serve` see changes: auto (poll network drives, "
        "whose events are missed; the system's events elsewhere), on (poll all), off",
    ),
    "indexing.reuse_vectors": (
        True,
        "a text embedded before under the same model takes its stored vector (off: every "
        "copy goes to the model, for measuring)",
    ),
    "indexing.low_priority": (
        True,
        "indexing and its worker processes yield the CPU to everything else (nice 10, "
        "below normal on Windows); off = normal priority, e.g. on a dedicated machine",
    ),
    "indexing.on_battery": (
        "slow",
        "on battery power: pause (wait for the charger), slow (rest 3 s per second of work) or run (full speed)",
    ),
    "indexing.endpoint_wait": (
        600.0,
        "seconds `sensetree index` waits for a down embedding endpoint, then stops (files stay pending)",
    ),
    "embedding.model": ("intfloat/multilingual-e5-small", "embedding model; changing it re-indexes everything"),
    "embedding.base_url": ("", "OpenAI-compatible /v1 endpoint; empty = run the model locally"),
    "embedding.api_key": ("", "API key for the embedding endpoint"),
    "embedding.dimensions": (0, "vector size for an endpoint model (0 = ask the endpoint)"),
    "embedding.threads": (2, "CPU threads for a local model"),
    "sense.base_url": ("", "OpenAI-compatible /v1 endpoint that writes senses; empty = excerpt fallback"),
    "sense.model": ("", "model name at the sense endpoint"),
    "sense.api_key": ("", "API key for the sense endpoint"),
    "sense.timeout": (60.0, "seconds before a sense request gives up (the excerpt is used)"),
    "chat.base_url": ("", "OpenAI-compatible /v1 endpoint for the assistant"),
    "chat.model": ("", "model name at the chat endpoint"),
    "chat.api_key": ("", "API key for the chat endpoint"),
    "chat.context_window": (4096, "tokens the chat model sees, when its server does not say"),
    "chat.max_tokens": (512, "longest answer, in tokens"),
    "chat.timeout": (300.0, "seconds before a chat request gives up"),
    "chat.threads": (2, "CPU threads for the embedded chat model"),
    "storage.uri": ("", "where the chunks table lives: empty = the data dir; a folder, or s3://bucket/prefix"),
    "storage.endpoint": (
        "",
        "S3-compatible endpoint URL (empty = AWS, or AWS_ENDPOINT_URL); credentials come from "
        "the environment or the AWS config files",
    ),
    "storage.region": ("", "S3 region (empty = AWS_REGION or the AWS config files)"),
    "storage.refresh_seconds": (2.0, "how stale a search node's view of an object-storage index may be"),
    "cluster.worker_threads": (
        1,
        "CPU threads per Ray worker (`index --ray`); each reserves that many of the cluster's CPUs",
    ),
    "chat.runtime": ("", "what serves the embedded model: xllamacpp or llama-cpp-python (empty = the first installed)"),
    "chat.first_token_s": (
        8.0,
        "seconds a server that reports its speed may spend reading the prompt; "
        "the excerpts are cut to their best sentences to fit (0 = the context window only)",
    ),
    "compute.device": (
        "auto",
        "where the models run: auto (an accelerator onnxruntime has and that agrees with the "
        "CPU, else the CPU), cpu, cuda, directml, coreml or openvino",
    ),
    "compute.embedder_device": ("", "the embedding model's device (empty = compute.device)"),
    "compute.reranker_device": ("", "the reranker's device (empty = compute.device)"),
    "compute.ocr_device": ("", "OCR's device (empty = compute.device; rapidocr knows cuda, directml and coreml)"),
}

DEVICES = ("auto", "cpu", "cuda", "directml", "coreml", "openvino")  # models/devices.py

# Keys that take one of a few words.
CHOICES: dict[str, tuple[str, ...]] = {
    "retrieval.fusion": ("both", "evidence", "weighted", "rrf"),
    "retrieval.spelling": ("both", "bm25", "off"),
    "compute.device": DEVICES,
    "indexing.on_battery": ("pause", "slow", "run"),
    "indexing.watch_polling": ("auto", "on", "off"),
    **{f"compute.{role}_device": ("", *DEVICES) for role in ("embedder", "reranker", "ocr")},
}


# The range of each number, inclusive; a key missing here (one added later) takes 0 to 1e9.
BOUNDS: dict[str, tuple[float, float]] = {
    "indexing.chunk_size": (32, 100_000),
    "indexing.overlap": (0, 50_000),  # and below indexing.chunk_size
    "indexing.max_file_mb": (1, 1_000_000),
    "indexing.batch_size": (1, 4096),
    "indexing.ocr_max_pages": (1, 1_000_000),
    "indexing.ocr_page_timeout": (1.0, 86_400.0),
    "indexing.file_timeout": (1.0, 86_400.0),
    "indexing.endpoint_wait": (0.0, 604_800.0),
    "embedding.dimensions": (0, 65_536),
    "embedding.threads": (1, 256),
    "sense.timeout": (0.5, 3600.0),
    "chat.context_window": (512, 10_000_000),
    "chat.max_tokens": (1, 1_000_000),
    "chat.timeout": (0.5, 86_400.0),
    "chat.threads": (1, 256),
    "storage.refresh_seconds": (0.0, 86_400.0),
    "cluster.worker_threads": (1, 1024),
    "chat.first_token_s": (0.0, 3600.0),
    "retrieval.on_demand_seconds": (0.0, 60.0),
}
DEFAULT_BOUNDS = (0, 1_000_000_000)

# Settings that name a place: checked when set (``place_problem``), a folder read against the data dir (``place``).
PLACES = ("storage.uri",)
PLACE_RANGE = "empty (the data dir), a folder (relative to the data dir) or s3://bucket/prefix"

# Changing these wipes the index (its vectors and keyword text) when it holds anything: every file is
# read and embedded again. They ask for a confirmation (``NeedsConfirmation``).
WIPES_INDEX = ("embedding.model", "embedding.base_url")


def default_data_dir() -> Path:
    """``SENSETREE_HOME`` wins over the platform's user data folder."""
    env = os.environ.get("SENSETREE_HOME")
    return Path(env).expanduser() if env else Path(platformdirs.user_data_dir("sensetree", appauthor=False))


def made_data_dir(data_dir: Path) -> Path:
    """``data_dir``, made if it is not there yet; ``DataDirUnusable`` with the way out when it cannot be:
    a path holding control characters (the index's LanceDB refuses them, and a service unit or a log
    line would break on them), or a parent that is a file (a HOME that is a file)."""
    text = str(data_dir)
    control = sorted({c for c in text if ord(c) < 32 or ord(c) == 127})
    if control:
        shown = ", ".join(repr(c) for c in control)
        raise DataDirUnusable(
            f"the data dir's path holds control characters ({shown}): {text!r}; choose "
            "another with --data-dir or SENSETREE_HOME"
        )
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise DataDirUnusable(
            f"the data dir {data_dir} cannot be made: {file_in_the_way(data_dir)}; "
            "choose another with --data-dir or SENSETREE_HOME"
        ) from None
    if not data_dir.is_dir():
        raise DataDirUnusable(
            f"the data dir {data_dir} is not a folder; choose another with --data-dir or SENSETREE_HOME"
        )
    _refuse_another_users(data_dir)
    return data_dir


def file_in_the_way(folder: Path) -> str:
    """Why ``folder`` cannot be made, in words: the file on its path (said when HOME is that file)."""
    blocking = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), folder)
    home = " (HOME is set to a file)" if str(blocking) == os.environ.get("HOME") else ""
    return f"{blocking} is a file, not a folder{home}"


def _refuse_another_users(data_dir: Path) -> None:
    """Root may not work in another user's data dir (``sudo sensetree search``): the catalog's journal, the
    vectors and the models it wrote there would be root's, and the owner's own commands could no longer
    write them. Refused, with the way out, rather than changing whose files they are behind the user's back."""
    if not hasattr(os, "geteuid"):  # Windows: no root to leave files behind
        return
    owner = data_dir.stat().st_uid
    if os.geteuid() != 0 or owner == 0:
        return
    try:
        import pwd

        name = pwd.getpwuid(owner).pw_name
    except KeyError:
        name = f"uid {owner}"
    raise DataDirUnusable(
        f"the data dir {data_dir} belongs to {name}, and this command runs as root: what it wrote there would "
        f"be root's, and {name}'s own commands could not change it. Run it as {name} (`sudo -u {name} "
        "sensetree ...`), or give root its own data dir with --data-dir or SENSETREE_HOME"
    )


class SettingsError(BadInput):
    """An unknown key or a value of the wrong type or out of its range."""

    status = 422


class NeedsConfirmation(SettingsError):
    """A change that would wipe the index, asked without a confirmation: nothing was changed."""


def place_problem(uri: str) -> str | None:
    """Why ``uri`` (a ``storage.uri``) names no place an index can live; None when it names one."""
    if "://" not in uri:
        return None
    scheme, _, rest = uri.partition("://")
    if scheme != "s3":
        return f"only folders and s3:// are supported, not {scheme}://"
    bucket = rest.partition("/")[0]
    if not bucket:
        return "it names no bucket; write s3://bucket/prefix"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}", bucket):
        return f"{bucket!r} is no bucket name (letters, digits, dots, hyphens and underscores)"
    return None


def place(uri: str, data_dir: Path) -> str:
    """The place a ``storage.uri`` names, a folder read against ``data_dir``: not against the working folder of
    whichever command reads it, where the same setting would name another folder each time."""
    if not uri or "://" in uri:
        return uri
    return str(data_dir / os.path.expanduser(uri))  # an absolute path stays as it is; "~nobody" too


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def value_range(key: str) -> str:
    """The key's type and range, as a refusal says it."""
    default = DEFAULTS[key][0]
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, (int, float)):
        low, high = BOUNDS.get(key, DEFAULT_BOUNDS)
        kind = "a whole number" if isinstance(default, int) else "a number"
        extra = " and less than indexing.chunk_size" if key == "indexing.overlap" else ""
        return f"{kind} from {_number(low)} to {_number(high)}{extra}"
    if key in CHOICES:
        return " or ".join(repr(c) if not c else c for c in CHOICES[key])
    if key in PLACES:
        return f"{PLACE_RANGE}, up to {TEXT_LIMIT} characters without control characters"
    return f"text of up to {TEXT_LIMIT} characters, without control characters"


def check(key: str, value: Any) -> Any:
    """``value`` in the key's type (an int widened for a float key) when it is within the key's range;
    ``SettingsError`` saying the range otherwise."""
    if key not in DEFAULTS:
        raise SettingsError(f"unknown setting {key!r}; known: {', '.join(sorted(DEFAULTS))}")
    default = DEFAULTS[key][0]
    wrong = SettingsError(f"{key} takes {value_range(key)}, not {_shown(value)}")
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise wrong
        return value
    if isinstance(default, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong
        if isinstance(default, int) and not isinstance(value, int):
            raise wrong
        if isinstance(default, float):
            try:
                value = float(value)
            except OverflowError:
                raise wrong from None
        if not math.isfinite(value):
            raise wrong
        low, high = BOUNDS.get(key, DEFAULT_BOUNDS)
        if not low <= value <= high:
            raise wrong
        return value
    if not isinstance(value, str):
        raise wrong
    if key in CHOICES:
        if value not in CHOICES[key]:
            raise wrong
        return value
    if len(value) > TEXT_LIMIT or any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 or 0xD800 <= ord(c) < 0xE000 for c in value):
        raise wrong
    problem = place_problem(value) if key in PLACES else None
    if problem:
        raise SettingsError(f"{key} takes {value_range(key)}, not {_shown(value)}: {problem}")
    return value


def check_together(values: dict[str, Any]) -> None:
    """What one key's range owes another: the overlap is less than the chunk size."""
    size, overlap = values["indexing.chunk_size"], values["indexing.overlap"]
    if overlap >= size:
        raise SettingsError(
            f"indexing.overlap ({overlap}) must be less than indexing.chunk_size ({size}); "
            "lower indexing.overlap first, or raise indexing.chunk_size"
        )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


WHOLE = re.compile(r"[+-]?[0-9]+", re.ASCII)
DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", re.ASCII)


def parse_value(key: str, raw: str) -> Any:
    """Turn the text a user typed into the type of the key's default, checked against its range."""
    if key not in DEFAULTS:
        raise SettingsError(f"unknown setting {key!r}; known: {', '.join(sorted(DEFAULTS))}")
    default = DEFAULTS[key][0]
    if isinstance(default, bool):
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise SettingsError(f"{key} takes true or false, not {_shown(raw)}")
    if isinstance(default, (int, float)):
        # plain ASCII decimals only: Python's int() and float() also read "١٢" (Arabic-Indic digits) and "1_000"
        written = WHOLE if isinstance(default, int) else DECIMAL
        if not written.fullmatch(raw.strip()):
            raise SettingsError(
                f"{key} takes {value_range(key)}, not {_shown(raw)} (written with the digits 0-9"
                + (")" if isinstance(default, int) else ", a point and an exponent such as 1.5e3)")
            )
        try:
            return check(key, int(raw) if isinstance(default, int) else float(raw))
        except (OverflowError, ValueError):  # more digits than Python converts
            raise SettingsError(f"{key} takes {value_range(key)}, not {_shown(raw)}") from None
    value = raw.strip() if key in CHOICES else raw
    return check(key, value)


@dataclass
class Settings:
    """The effective settings: file values over defaults."""

    path: Path
    values: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None  # set when the file could not be read
    unreadable: bool = False  # the file is not valid TOML and no last good copy stood in: these are defaults

    @classmethod
    def load(cls, data_dir: Path) -> Settings:
        path = data_dir / SETTINGS_FILE
        settings = cls(path=path)
        if not path.exists():
            return settings
        try:
            text = path.read_text(encoding="utf-8")
            document = tomlkit.parse(text)
        except Exception as exc:  # any parse or decode error: report it, use the last good settings
            settings._stand_in(exc)
            return settings
        settings._read(document)
        if settings.problem is None:
            settings._keep_last_good(text)
        return settings

    def _read(self, document: Any) -> None:
        """The known keys of a parsed file, each checked; one of the wrong type or out of range takes its default."""
        for key, (default, _) in DEFAULTS.items():
            table, name = key.split(".", 1)
            section = document.get(table)
            if not isinstance(section, dict) or name not in section:
                continue
            value = section[name]
            value = value.unwrap() if hasattr(value, "unwrap") else value
            if isinstance(default, bool) != isinstance(value, bool) or not isinstance(value, type(default)):
                if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
                    value = float(value)
                else:
                    self.problem = f"{self.path}: {key} should be {type(default).__name__}; using the default"
                    continue
            if key in CHOICES and value not in CHOICES[key]:
                self.problem = f"{self.path}: {key} should be {' or '.join(CHOICES[key])}; using the default"
                continue
            try:
                self.values[key] = check(key, value)
            except SettingsError:
                self.problem = (
                    f"{self.path}: {key} should be {value_range(key)}, not {_shown(value)}; using the default"
                )
        try:
            check_together(self.as_dict())
        except SettingsError as exc:
            self.values.pop("indexing.overlap", None)  # the default, capped at half the chunk size
            self.problem = f"{self.path}: {exc}; using {self['indexing.overlap']}"

    @property
    def last_good(self) -> Path:
        return self.path.with_name(LAST_GOOD_FILE)

    def _keep_last_good(self, text: str) -> None:
        """A copy of a file that read whole, to stand in should it be broken later; nothing where it is unwritable."""
        try:
            if self.last_good.exists() and self.last_good.read_text(encoding="utf-8") == text:
                return
            tmp = self.last_good.with_suffix(".tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self.last_good)
        except OSError:
            pass

    def _stand_in(self, exc: Exception) -> None:
        """The file is not valid TOML: the last good copy's values, or the defaults marked ``unreadable``."""
        reason = _which_line(self.path, exc)
        try:
            document = tomlkit.parse(self.last_good.read_text(encoding="utf-8"))
        except Exception:
            document = None
        if document is not None:
            self._read(document)
            saved = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.last_good.stat().st_mtime))
            self.problem = (
                f"{self.path} is not valid TOML ({reason}); using the last good settings, "
                f"{self.last_good.name} (saved {saved}), until it is fixed"
            )
            return
        self.values = {}
        self.unreadable = True
        self.problem = (
            f"{self.path} is not valid TOML ({reason}); using defaults, but nothing that would "
            "wipe the index on that guess (a change of embedding model) runs until it is fixed"
        )

    def get(self, key: str) -> Any:
        if key not in DEFAULTS:
            raise SettingsError(f"unknown setting {key!r}")
        if key == "indexing.overlap" and key not in self.values:  # the default, capped at half the chunk size
            return min(DEFAULTS[key][0], self.get("indexing.chunk_size") // 2)
        return self.values.get(key, DEFAULTS[key][0])

    def __getitem__(self, key: str) -> Any:
        return self.get(key)

    def set(self, key: str, value: Any) -> None:
        """Set one key and write the file, keeping the user's comments and layout. The value is checked
        against its range (and the others': the overlap stays below the chunk size) before anything is written."""
        self.set_many({key: value})

    def set_many(self, changes: dict[str, Any]) -> None:
        """``set`` for several keys at once, checked together (a smaller chunk size with a smaller overlap)."""
        for key in changes:
            if key not in DEFAULTS:
                raise SettingsError(f"unknown setting {key!r}")
        changes = {key: check(key, value) for key, value in changes.items()}
        check_together(Settings(self.path, {**self.values, **changes}).as_dict())
        if not changes:
            return
        try:
            document = (
                tomlkit.parse(self.path.read_text(encoding="utf-8")) if self.path.exists() else tomlkit.document()
            )
        except Exception:
            # a broken file is kept beside, and replaced by the settings in use (the last good ones, or none)
            self._set_broken_aside()
            document = self._document_of_values()
        for key, value in changes.items():
            table, name = key.split(".", 1)
            if table not in document:
                document[table] = tomlkit.table()
            document[table][name] = value
        text = tomlkit.dumps(document)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.path)
        self.values.update(changes)
        self.problem = None
        self.unreadable = False
        self._keep_last_good(text)

    def _set_broken_aside(self) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        try:
            os.replace(self.path, self.path.with_name(f"settings.broken-{stamp}.toml"))
        except OSError:
            pass

    def _document_of_values(self) -> Any:
        document = tomlkit.document()
        for key, value in self.values.items():
            table, name = key.split(".", 1)
            if table not in document:
                document[table] = tomlkit.table()
            document[table][name] = value
        return document

    def as_dict(self) -> dict[str, Any]:
        return {key: self.get(key) for key in DEFAULTS}


def _which_line(path: Path, exc: Exception) -> str:
    """The parse error with the line it is on, and that line's text: for a table or key written twice, the
    second time it is written (tomlkit reports where it noticed, which may be a line later)."""
    import re

    message = re.sub(r" at line \d+ col \d+$", "", str(exc))
    line = getattr(exc, "line", None)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return str(exc)
    twice = re.match(r'Key "(.+)" already exists', message)
    if twice and line:
        name = re.escape(twice.group(1))
        seen = [n for n, text in enumerate(lines[:line], 1) if re.match(rf"\s*(\[\s*{name}\s*\]|{name}\s*=)", text)]
        if len(seen) >= 2:
            line = seen[1]
    if not line or line > len(lines):
        return message
    text = lines[line - 1].strip()
    return f"line {line}, {text[:60]!r}: {message}"


def describe(settings: Settings) -> list[dict[str, Any]]:
    """Every setting with its value, default, help and type, and whether changing it re-indexes everything."""
    return [
        {
            "key": key,
            "value": settings[key],
            "default": default,
            "help": about,
            "type": type(default).__name__,
            "secret": key.endswith("api_key"),
            "reindex": key in WIPES_INDEX,
            "range": value_range(key),
        }
        for key, (default, about) in DEFAULTS.items()
    ]
