"""Where model weights come from: one registry for every model role.

Resolution never touches the network; only :func:`pull_reranker` downloads, and
only when the user asks for it (``sensetree models pull``).
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from ..errors import ModelError

HF_BASE_URL = "https://huggingface.co"
"""Download host; the ``HF_ENDPOINT`` environment variable (a mirror) overrides it."""


@dataclass(frozen=True)
class RerankerSpec:
    """A cross-encoder we know how to fetch: ``repo`` holds ``onnx_file`` plus a root ``tokenizer.json``."""

    name: str
    repo: str
    onnx_file: str
    languages: str
    size_mb: int
    licence: str


# bge-reranker-v2-m3 and bge-reranker-base: the BAAI repos hold no int8 export (v2-m3 has no ONNX at
# all, base only a 1.1 GB fp32 one), so we use the Transformers.js exports (onnx-community / Xenova),
# whose int8 files are ~4x smaller and ~2-3x faster on a CPU. Jina ships its own int8 export.
RERANKERS: dict[str, RerankerSpec] = {
    spec.name: spec
    for spec in (
        RerankerSpec(
            name="BAAI/bge-reranker-v2-m3",
            repo="onnx-community/bge-reranker-v2-m3-ONNX",
            onnx_file="onnx/model_quantized.onnx",
            languages="multilingual (100+)",
            size_mb=571,
            licence="apache-2.0",
        ),
        RerankerSpec(
            name="BAAI/bge-reranker-base",
            repo="Xenova/bge-reranker-base",
            onnx_file="onnx/model_quantized.onnx",
            languages="English, Chinese",
            size_mb=279,
            licence="mit",
        ),
        RerankerSpec(
            name="jinaai/jina-reranker-v2-base-multilingual",
            repo="jinaai/jina-reranker-v2-base-multilingual",
            onnx_file="onnx/model_quantized.onnx",
            languages="multilingual",
            size_mb=280,
            licence="cc-by-nc-4.0 (non-commercial)",
        ),
    )
}
DEFAULT_RERANKER = "BAAI/bge-reranker-v2-m3"

# Python packages that ship a reranker's weights: model name -> (import name, folder inside the
# package). None is published yet; a `pip install` of one would make the model work offline.
RERANKER_PACKAGES: dict[str, tuple[str, str]] = {}

# The ONNX file names a cross-encoder folder may use, in order of preference; they cover
# every RerankerSpec.onnx_file above and the layouts of optimum and Transformers.js exports.
ONNX_CANDIDATES = ("model.onnx", "onnx/model.onnx", "model_quantized.onnx", "onnx/model_quantized.onnx")
TOKENIZER_FILE = "tokenizer.json"
_OPTIONAL_FILES = ("config.json",)


class ModelDownloadError(ModelError):
    """A model could not be downloaded; the message says why and what to do instead."""


def onnx_model_file(folder: Path) -> Path | None:
    """The ONNX graph of a cross-encoder folder, or None."""
    for candidate in ONNX_CANDIDATES:
        path = folder / candidate
        if path.is_file() and path.stat().st_size > 0:
            return path
    return None


def is_cross_encoder_folder(folder: Path) -> bool:
    """True when ``folder`` has everything the reranker needs to load (an ONNX graph and tokenizer.json)."""
    return folder.is_dir() and onnx_model_file(folder) is not None and (folder / TOKENIZER_FILE).is_file()


def folder_name(name: str) -> str:
    """The folder under the models dir for model ``name``: '/' is not allowed in a folder name."""
    return name.replace("/", "--")


def hf_hub_cache() -> Path:
    """The Hugging Face hub cache, resolved the way huggingface_hub does it."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg).expanduser() / "huggingface" / "hub"


def _hf_snapshot(repo: str) -> Path | None:
    """A complete snapshot of ``repo`` in the HF cache: the one refs/main names first, else the newest."""
    repo_dir = hf_hub_cache() / f"models--{folder_name(repo)}"
    snapshots = repo_dir / "snapshots"
    if not snapshots.is_dir():
        return None
    candidates = sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
    ref = repo_dir / "refs" / "main"
    if ref.is_file():
        candidates.insert(0, snapshots / ref.read_text().strip())
    return next((c for c in candidates if is_cross_encoder_folder(c)), None)


def _packaged(name: str) -> Path | None:
    if name not in RERANKER_PACKAGES:
        return None
    module, subfolder = RERANKER_PACKAGES[name]
    if importlib.util.find_spec(module) is None:
        return None
    folder = Path(str(importlib.resources.files(module) / subfolder))
    return folder if is_cross_encoder_folder(folder) else None


def find_reranker(name: str, models_dir: Path) -> Path | None:
    """The folder holding reranker ``name``, or None; never downloads.

    Looks, in order, in: a Python package that ships it, ``name`` as a path to a folder,
    ``<models_dir>/<ORG--NAME>``, and the Hugging Face cache (the spec's ONNX repo, then ``name``).
    """
    found = _packaged(name)
    if found:
        return found
    as_path = Path(name).expanduser()
    if is_cross_encoder_folder(as_path):
        return as_path
    local = Path(models_dir) / folder_name(name)
    if is_cross_encoder_folder(local):
        return local
    spec = RERANKERS.get(name)
    for repo in dict.fromkeys([spec.repo, name] if spec else [name]):
        found = _hf_snapshot(repo)
        if found:
            return found
    return None


Progress = Callable[[str, int, int], None]


def _download(client: httpx.Client, url: str, dest: Path, label: str, progress: Progress | None) -> None:
    """Stream ``url`` into ``dest`` through a .part file, so a dropped download never looks finished."""
    part = dest.with_name(dest.name + ".part")
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        with client.stream("GET", url) as response:
            response.raise_for_status()
            total = int(response.headers.get("Content-Length", 0))
            done = 0
            with part.open("wb") as out:
                for chunk in response.iter_bytes(1 << 20):
                    out.write(chunk)
                    done += len(chunk)
                    if progress:
                        progress(label, done, total)
        if done == 0 or (total and done != total):
            raise ModelDownloadError(f"Download of {url} is incomplete ({done} of {total or '?'} bytes).")
        part.replace(dest)
    finally:
        part.unlink(missing_ok=True)


def pull_reranker(
    name: str,
    models_dir: Path,
    progress: Progress | None = None,
) -> Path:
    """Download reranker ``name`` into ``<models_dir>/<ORG--NAME>/`` and return that folder.

    ``progress(file, done_bytes, total_bytes)`` is called as bytes arrive (total 0 when unknown).
    Files already downloaded are kept, so a rerun after a failure only fetches what is missing.
    """
    spec = RERANKERS.get(name)
    if spec is None:
        known = ", ".join(RERANKERS)
        raise ModelDownloadError(
            f"Unknown reranker {name!r}; known ones: {known}. For another model, put its ONNX "
            f"cross-encoder folder (model.onnx + tokenizer.json) into {models_dir}."
        )
    folder = Path(models_dir) / folder_name(name)
    base = (os.environ.get("HF_ENDPOINT") or HF_BASE_URL).rstrip("/")
    files = [(TOKENIZER_FILE, True), *((f, False) for f in _OPTIONAL_FILES), (spec.onnx_file, True)]
    timeout = httpx.Timeout(30.0, connect=10.0)
    with httpx.Client(follow_redirects=True, timeout=timeout) as client:
        for file, required in files:
            dest = folder / file
            if dest.is_file() and dest.stat().st_size > 0:
                continue
            url = f"{base}/{spec.repo}/resolve/main/{file}"
            try:
                _download(client, url, dest, file, progress)
            except httpx.HTTPStatusError as exc:
                if required or exc.response.status_code != 404:
                    raise ModelDownloadError(f"Could not download {url}: HTTP {exc.response.status_code}.") from exc
            except httpx.HTTPError as exc:
                raise ModelDownloadError(
                    f"Could not download {name} from {base} ({type(exc).__name__}: {exc}). "
                    f"Check the network connection, or fetch {spec.repo}/{spec.onnx_file} and "
                    f"tokenizer.json by hand into {folder}."
                ) from exc
    return folder


def list_rerankers(models_dir: Path) -> list[dict]:
    """One row per known reranker, for ``sensetree models list``."""
    rows = []
    for spec in RERANKERS.values():
        where = find_reranker(spec.name, models_dir)
        rows.append(
            {
                "name": spec.name,
                "installed": where is not None,
                "where": str(where) if where else None,
                "size": f"{spec.size_mb} MB",
                "licence": spec.licence,
                "languages": spec.languages,
                "default": spec.name == DEFAULT_RERANKER,
            }
        )
    return rows
