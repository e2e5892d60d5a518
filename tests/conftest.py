"""What most tests share: a tree of files, an engine over it, and the ``sensetree`` command.

Each is a fixture that hands out a function, so that a module-scoped fixture can build once what its
tests then read. The helpers of fewer tests (the corpus, stand-in servers, odd files) are in
tests/support/.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from click.testing import Result
from hypothesis import settings
from typer.testing import CliRunner

from sensetree.engine import Engine
from sensetree.operations import AddRootParams, SetParams

COMMAND = [sys.executable, "-m", "sensetree.interfaces.cli"]

# Property tests judge what a function answers, not how fast: on two cores shared with an indexer, hypothesis's
# default deadline (200 ms an example) failed pure functions that take 5 ms on a quiet machine.
settings.register_profile("sensetree", deadline=None)
settings.load_profile("sensetree")

# The tests index at full speed whatever the machine's battery says (tests/test_pace.py injects its
# own power source); every process they start inherits it.
os.environ.setdefault("SENSETREE_POWER", "mains")


def _write_tree(root: Path, files: Mapping[str, str | bytes]) -> dict[str, Path]:
    """Write each relative path's text (as UTF-8) or bytes under ``root``; returns where each went."""
    written = {}
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        written[relative] = path
    return written


def _make_engine(data: Path, *roots: Path, model: str | None = "minilm", settings: Mapping[str, object] | None = None,
                 index: bool = True) -> Engine:
    """An engine on ``data`` over ``roots``, indexed once unless ``index=False``; the caller closes it.

    MiniLM unless ``model`` names another (None keeps the default E5): it is small and quick, and
    ships in a package. ``settings`` are set first, so that an endpoint's URL is there before its model.
    """
    engine = Engine(data)
    for key, value in (settings or {}).items():
        engine.run(SetParams(key, value))
    if model is not None:
        engine.run(SetParams("embedding.model", model))
    for root in roots:
        engine.run(AddRootParams(str(root)))
    if index:
        engine.index()
    return engine


class CommandLine:
    """``sensetree`` on one data folder: as a process, as a user runs it, or in this process (typer's
    CliRunner) where a test needs no process of its own.

    A process is told its folder by ``SENSETREE_HOME``, so that any arguments, ``--`` included, reach
    the command as written; wide columns keep rich from wrapping its lines.
    """

    def run(self, data: Path, *args: str | bytes | Path, check: bool = True, text: bool = True,
            timeout: float = 600) -> subprocess.CompletedProcess:
        """Run a command to its end; it never prints a traceback, and with ``check`` it succeeds."""
        result = subprocess.run([*COMMAND, *map(_arg, args)], capture_output=True, text=text,
                                env=_environment(data), timeout=timeout)
        stderr = result.stderr if text else result.stderr.decode(errors="replace")
        assert "Traceback" not in stderr, stderr
        if check and result.returncode != 0:
            raise AssertionError(f"sensetree {' '.join(map(str, args))} failed ({result.returncode}):\n"
                                 f"{result.stdout}\n{stderr}")
        return result

    def start(self, data: Path, *args: str | Path) -> subprocess.Popen:
        """Start a command and return at once (for the tests that stop or kill it)."""
        return subprocess.Popen([*COMMAND, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=_environment(data))

    def invoke(self, data: Path, *args: str | Path, input: str | None = None) -> Result:
        """Run a command in this process, its folder given by ``--data-dir``."""
        from sensetree.interfaces.cli import app

        return CliRunner().invoke(app, [*map(str, args), "--data-dir", str(data)], input=input)


def _environment(data: Path) -> dict[str, str]:
    return {**os.environ, "SENSETREE_HOME": str(data), "COLUMNS": "400"}


def _arg(value: str | bytes | Path) -> str | bytes:
    return value if isinstance(value, bytes) else str(value)


@pytest.fixture(scope="session")
def write_tree():
    return _write_tree


@pytest.fixture(scope="session")
def make_engine():
    return _make_engine


@pytest.fixture(scope="session")
def cli() -> CommandLine:
    return CommandLine()
