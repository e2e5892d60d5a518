"""No POSIX-only call outside a guard, and the process rules of every system (design §4).

The scan reads the source's syntax tree: a call only POSIX has (``fcntl``, ``resource``, ``/proc``,
``os.getuid``, ``pass_fds``...) must sit under a test of ``os.name``/``sys.platform``, after an early
return on one, or inside a ``try`` that catches its failure.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sensetree import system

SOURCE = Path(__file__).resolve().parents[1] / "src" / "sensetree"

POSIX_MODULES = {"fcntl", "resource", "termios", "pwd", "grp", "pty", "tty", "posix", "syslog"}
POSIX_ATTRIBUTES = {
    ("os", name) for name in ("getuid", "geteuid", "getgid", "getegid", "fork", "forkpty", "setsid", "killpg",
                              "getpgid", "setpgid", "sysconf", "uname", "getloadavg", "nice", "sched_getaffinity",
                              "mkfifo", "getppid_posix", "statvfs", "geteuid", "chown", "lchown")
} | {("signal", name) for name in ("SIGKILL", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGQUIT", "SIGCHLD",
                                      "SIGPIPE", "SIGSTOP", "SIGCONT", "alarm", "pause", "setitimer", "siginterrupt")}
POSIX_KEYWORDS = {"pass_fds", "preexec_fn", "start_new_session", "process_group"}
GUARD_NAMES = {"os.name", "sys.platform", "platform.system", "hasattr"}
CAUGHT = {"OSError", "ImportError", "ModuleNotFoundError", "AttributeError", "Exception", "FileNotFoundError"}


def _mentions_platform(node: ast.AST) -> bool:
    return any(ast.unparse(n) in GUARD_NAMES or (isinstance(n, ast.Call) and ast.unparse(n.func) == "hasattr")
               for n in ast.walk(node))


def _catches(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(ast.unparse(n) in CAUGHT for n in names)


def _guarded(chain: list[ast.AST]) -> bool:
    """``chain``: the nodes from the module down to the finding."""
    for depth, node in enumerate(chain[:-1]):
        child = chain[depth + 1]
        if isinstance(node, (ast.If, ast.IfExp, ast.While)) and _mentions_platform(node.test) and child is not node.test:
            return True
        if isinstance(node, ast.Try) and child in node.body and any(_catches(h) for h in node.handlers):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            body = node.body
            before = body[:body.index(child)] if child in body else []
            if any(isinstance(s, ast.If) and _mentions_platform(s.test) and isinstance(s.body[-1], (ast.Return, ast.Raise))
                   for s in before):
                return True
    return False


def _findings(tree: ast.AST) -> list[tuple[int, str]]:
    found = []

    def visit(node: ast.AST, chain: list[ast.AST]) -> None:
        chain = [*chain, node]
        what = None
        if isinstance(node, ast.Import):
            what = next((a.name for a in node.names if a.name.split(".")[0] in POSIX_MODULES), None)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in POSIX_MODULES and not node.level:
            what = node.module
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and (node.value.id, node.attr) in POSIX_ATTRIBUTES:
            what = f"{node.value.id}.{node.attr}"
        elif isinstance(node, ast.keyword) and node.arg in POSIX_KEYWORDS and not (
                isinstance(node.value, ast.IfExp) and _mentions_platform(node.value.test)):
            what = f"{node.arg}="
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("/proc/") \
                and not isinstance(chain[-2], ast.Expr):  # a docstring
            what = node.value
        elif isinstance(node, ast.JoinedStr) and ast.unparse(node).startswith(("f'/proc/", 'f"/proc/')):
            what = "/proc/..."
        if what and not _guarded(chain):
            found.append((getattr(node, "lineno", 0), what))
        for child in ast.iter_child_nodes(node):
            visit(child, chain)

    visit(tree, [])
    return found


def test_no_posix_only_call_outside_a_guard():
    problems = []
    for file in sorted(SOURCE.rglob("*.py")):
        for line, what in _findings(ast.parse(file.read_text(encoding="utf-8"))):
            problems.append(f"{file.relative_to(SOURCE)}:{line}: {what}")
    assert problems == []


@pytest.mark.parametrize("code, flagged", [
    ("import fcntl", True),
    ("try:\n    import fcntl\nexcept ImportError:\n    fcntl = None", False),
    ("if os.name == 'posix':\n    os.getuid()", False),
    ("x = os.getuid() if sys.platform != 'win32' else 0", False),
    ("def f():\n    if sys.platform == 'win32':\n        return 0\n    return os.getuid()", False),
    ("def f():\n    return os.getuid()", True),
    ("subprocess.run(['x'], pass_fds=(3,))", True),
    ("subprocess.run(['x'], preexec_fn=f if os.name == 'posix' else None)", False),
    ("open(f'/proc/{pid}/statm')", True),
    ("try:\n    open('/proc/self/mounts')\nexcept OSError:\n    pass", False),
    ("os.kill(pid, signal.SIGKILL)", True),
    ("if hasattr(signal, 'SIGHUP'):\n    signal.signal(signal.SIGHUP, h)", False),
])
def test_the_scan_tells_guarded_from_unguarded(code, flagged):
    assert bool(_findings(ast.parse(code))) is flagged


# --- processes ------------------------------------------------------------------------------------


def test_process_alive():
    assert system.process_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not system.process_alive(child.pid)
    assert not system.process_alive(0) and not system.process_alive(-5)


def test_worker_pools_spawn():
    """Forking a process full of threads (models, the web server) can deadlock: every pool spawns."""
    text = (SOURCE / "ingest" / "workers.py").read_text(encoding="utf-8")
    assert 'get_context("spawn")' in text
    for file in SOURCE.rglob("*.py"):
        source = file.read_text(encoding="utf-8")
        assert "get_context(\"fork\")" not in source and "set_start_method" not in source, file
        assert "os.fork(" not in source, file


@pytest.mark.parametrize("platform, program", [("linux", "xdg-open"), ("darwin", "open")])
def test_a_file_opens_in_the_system_viewer(tmp_path, monkeypatch, platform, program):
    """The opener each system has (``os.startfile`` on Windows is its own call), run for real from PATH."""
    from sensetree.handlers.files import open_with_system as _open_with_system
    from tests.support.waiting import wait_for

    bin_dir, called = tmp_path / "bin", tmp_path / "called"
    bin_dir.mkdir()
    (bin_dir / program).write_text(f'#!/bin/sh\nprintf "%s" "$*" > {called}\n', encoding="utf-8")
    (bin_dir / program).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(sys, "platform", platform)
    document = tmp_path / "My Report.pdf"
    document.write_bytes(b"%PDF-1.4")
    assert _open_with_system(str(document), None) is None
    assert wait_for(lambda: called.exists() and called.read_text(encoding="utf-8") == str(document), timeout=10)
