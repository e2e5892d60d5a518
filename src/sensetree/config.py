"""Settings: one TOML file in the data dir, with the keys described in design §8.

Missing keys take their defaults; a corrupt file is reported (``Settings.problem``) and
the defaults are used, so a hand-edited typo never stops the product from starting.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs
import tomlkit

from .errors import BadInput

SETTINGS_FILE = "settings.toml"

# key -> (default, help). The dotted key is the TOML table and field.
DEFAULTS: dict[str, tuple[Any, str]] = {
    "retrieval.hybrid": (True, "off = dense only; loses exact-token robustness"),
    "retrieval.rerank": (True, "off = faster, no cross-encoder loaded, lower precision"),
    "retrieval.fusion": ("evidence", "how the legs are merged: evidence (files, legs weighted per query from what each returned: BM25 cut when its files are in another language than the query), weighted (the same without that) or rrf (the seed's plain RRF on chunks)"),
    "retrieval.spelling": ("both", "a query word no file has, one or two edits from an indexed word, is searched as that word: by both legs, the BM25 leg only, or off"),
    "retrieval.collapse_duplicates": (True, "files with identical content show once, with their other places listed"),
    "retrieval.reranker_model": ("BAAI/bge-reranker-v2-m3", "the cross-encoder (name or local folder)"),
    "indexing.chunk_size": (1000, "characters per chunk; affects files indexed afterwards"),
    "indexing.overlap": (200, "characters of overlap (capped at half the chunk size)"),
    "indexing.max_file_mb": (50, "larger files are indexed by context only"),
    "indexing.batch_size": (32, "texts per embedding call"),
    "indexing.qualify_documents": (True, "write a sense for documents with a language model"),
    "indexing.qualify_context": (True, "write a sense for context-only files"),
    "indexing.ocr": (True, "read scanned PDF pages and images with OCR (bundled RapidOCR, offline)"),
    "indexing.ocr_engine": ("rapidocr", "rapidocr (bundled: Latin scripts, Chinese, Japanese) or tesseract (if installed)"),
    "indexing.ocr_languages": ("", "Tesseract's language codes, comma-separated (e.g. rus,eng); rapidocr needs none"),
    "indexing.ocr_max_pages": (200, "pages OCR reads per file; a longer scan is indexed by its first pages"),
    "indexing.ocr_page_timeout": (60.0, "seconds OCR may take for one page; a slower page is skipped, the rest kept"),
    "indexing.file_timeout": (120.0, "seconds one file may take to read; a slower one is indexed by its name and place"),
    "indexing.watch_polling": ("auto", "how `index --watch` and `serve` see changes: auto (poll network drives, "
                                       "whose events are missed; the system's events elsewhere), on (poll all), off"),
    "indexing.reuse_vectors": (True, "a text embedded before under the same model takes its stored vector (off: every "
                                     "copy goes to the model, for measuring)"),
    "indexing.low_priority": (True, "indexing and its worker processes yield the CPU to everything else (nice 10, "
                                    "below normal on Windows); off = normal priority, e.g. on a dedicated machine"),
    "indexing.on_battery": ("slow", "on battery power: pause (wait for the charger), slow (rest 3 s per second of "
                                    "work) or run (full speed)"),
    "indexing.endpoint_wait": (600.0, "seconds `sensetree index` waits for a down embedding endpoint, then stops (files stay pending)"),
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
    "storage.endpoint": ("", "S3-compatible endpoint URL (empty = AWS, or AWS_ENDPOINT_URL); credentials come from "
                             "the environment or the AWS config files"),
    "storage.region": ("", "S3 region (empty = AWS_REGION or the AWS config files)"),
    "storage.refresh_seconds": (2.0, "how stale a search node's view of an object-storage index may be"),
    "cluster.worker_threads": (1, "CPU threads per Ray worker (`index --ray`); each reserves that many of the cluster's CPUs"),
    "chat.runtime": ("", "what serves the embedded model: xllamacpp or llama-cpp-python (empty = the first installed)"),
    "chat.first_token_s": (8.0, "seconds a server that reports its speed may spend reading the prompt; "
                                "the excerpts are cut to their best sentences to fit (0 = the context window only)"),
    "compute.device": ("auto", "where the models run: auto (an accelerator onnxruntime has and that agrees with the "
                               "CPU, else the CPU), cpu, cuda, directml, coreml or openvino"),
    "compute.embedder_device": ("", "the embedding model's device (empty = compute.device)"),
    "compute.reranker_device": ("", "the reranker's device (empty = compute.device)"),
    "compute.ocr_device": ("", "OCR's device (empty = compute.device; rapidocr knows cuda, directml and coreml)"),
}

DEVICES = ("auto", "cpu", "cuda", "directml", "coreml", "openvino")  # models/devices.py

# Keys that take one of a few words.
CHOICES: dict[str, tuple[str, ...]] = {"retrieval.fusion": ("evidence", "weighted", "rrf"),
                                        "retrieval.spelling": ("both", "bm25", "off"), "compute.device": DEVICES,
                                       "indexing.on_battery": ("pause", "slow", "run"),
                                       "indexing.watch_polling": ("auto", "on", "off"),
                                       **{f"compute.{role}_device": ("", *DEVICES) for role in ("embedder", "reranker", "ocr")}}


def default_data_dir() -> Path:
    """``SENSETREE_HOME`` wins over the platform's user data folder."""
    env = os.environ.get("SENSETREE_HOME")
    return Path(env).expanduser() if env else Path(platformdirs.user_data_dir("sensetree", appauthor=False))


class SettingsError(BadInput):
    """An unknown key or a value of the wrong type."""

    status = 422


def parse_value(key: str, raw: str) -> Any:
    """Turn the text a user typed into the type of the key's default."""
    if key not in DEFAULTS:
        raise SettingsError(f"unknown setting {key!r}; known: {', '.join(sorted(DEFAULTS))}")
    default = DEFAULTS[key][0]
    if isinstance(default, bool):
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise SettingsError(f"{key} takes true or false, not {raw!r}")
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            raise SettingsError(f"{key} takes a whole number, not {raw!r}") from None
    if isinstance(default, float):
        try:
            return float(raw)
        except ValueError:
            raise SettingsError(f"{key} takes a number, not {raw!r}") from None
    if key in CHOICES and raw.strip() not in CHOICES[key]:
        raise SettingsError(f"{key} takes {' or '.join(CHOICES[key])}, not {raw!r}")
    return raw.strip() if key in CHOICES else raw


@dataclass
class Settings:
    """The effective settings: file values over defaults."""

    path: Path
    values: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None  # set when the file could not be read

    @classmethod
    def load(cls, data_dir: Path) -> Settings:
        path = data_dir / SETTINGS_FILE
        settings = cls(path=path)
        if not path.exists():
            return settings
        try:
            document = tomlkit.parse(path.read_text(encoding="utf-8"))
        except Exception as exc:  # any parse or decode error: report it, use defaults
            settings.problem = f"{path} is not valid TOML ({exc}); using defaults"
            return settings
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
                    settings.problem = f"{path}: {key} should be {type(default).__name__}; using the default"
                    continue
            if key in CHOICES and value not in CHOICES[key]:
                settings.problem = f"{path}: {key} should be {' or '.join(CHOICES[key])}; using the default"
                continue
            settings.values[key] = value
        return settings

    def get(self, key: str) -> Any:
        if key not in DEFAULTS:
            raise SettingsError(f"unknown setting {key!r}")
        return self.values.get(key, DEFAULTS[key][0])

    def __getitem__(self, key: str) -> Any:
        return self.get(key)

    def set(self, key: str, value: Any) -> None:
        """Set one key and write the file, keeping the user's comments and layout."""
        if key not in DEFAULTS:
            raise SettingsError(f"unknown setting {key!r}")
        if key in CHOICES and value not in CHOICES[key]:
            raise SettingsError(f"{key} takes {' or '.join(CHOICES[key])}, not {value!r}")
        self.values[key] = value
        try:
            document = tomlkit.parse(self.path.read_text(encoding="utf-8")) if self.path.exists() else tomlkit.document()
        except Exception:
            document = tomlkit.document()  # the corrupt file is replaced by a valid one
        table, name = key.split(".", 1)
        if table not in document:
            document[table] = tomlkit.table()
        document[table][name] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(tomlkit.dumps(document), encoding="utf-8")
        os.replace(tmp, self.path)
        self.problem = None

    def as_dict(self) -> dict[str, Any]:
        return {key: self.get(key) for key in DEFAULTS}


def describe(settings: Settings) -> list[dict[str, Any]]:
    """Every setting with its value, default, help and type, and whether changing it re-indexes everything."""
    return [{"key": key, "value": settings[key], "default": default, "help": about,
             "type": type(default).__name__, "secret": key.endswith("api_key"),
             "reindex": key in ("embedding.model", "embedding.base_url")}
            for key, (default, about) in DEFAULTS.items()]
