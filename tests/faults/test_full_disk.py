"""A full disk (issue 24, defect 15): indexing stops with one clear line and loses nothing; reads go on.

The data dir is a real small filesystem (a tmpfs of a few MB) mounted in a mount namespace of
its own, held open by a sleeping process that each command joins (``nsenter``), so nothing is
mounted outside the test. The disk is then filled to the last byte with a plain file, one of a
bounded size: should the small disk not be there, the real one must not be filled instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import _environment

pytestmark = pytest.mark.slow  # real processes, a real mount, a fault injected

LAUNCHER = [sys.executable, "-m", "sensetree.interfaces.launcher"]


FILLER_LIMIT_MB = 16  # twice the small disk: enough to fill it, little on a disk it missed


class SmallDisk:
    """A tmpfs over ``folder``, seen only by the commands run through ``enter``."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.holder = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sleep", "600"])
        self._wait_for_own_namespace()

    def _wait_for_own_namespace(self) -> None:
        """Until ``unshare`` has made its namespace, the holder is in ours: a mount joined then would
        land outside the test (and a filler written in the new one, without it, on the real disk)."""
        ours = os.readlink("/proc/self/ns/mnt")
        deadline = time.monotonic() + 10
        while os.readlink(f"/proc/{self.holder.pid}/ns/mnt") == ours:
            if time.monotonic() > deadline or self.holder.poll() is not None:
                raise RuntimeError("unshare made no mount namespace")
            time.sleep(0.01)

    def enter(self, command: list[str], **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(["nsenter", "-t", str(self.holder.pid), "-m", *command], **kwargs)

    def mount(self, size: str) -> bool:
        mounted = self.enter(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(self.folder)],
                             capture_output=True).returncode == 0
        return mounted and self.file_system() == "tmpfs"

    def file_system(self) -> str:
        return self.enter(["stat", "-f", "-c", "%T", str(self.folder)], capture_output=True,
                          text=True).stdout.strip()

    def fill(self) -> None:
        """Write a filler file until the disk refuses (dd then fails, as expected)."""
        assert self.file_system() == "tmpfs", "the small disk is gone: not filling the real one"
        self.enter(["dd", "if=/dev/zero", f"of={self.folder / 'filler'}", "bs=1M", f"count={FILLER_LIMIT_MB}"],
                   capture_output=True)

    def free(self) -> None:
        self.enter(["rm", "-f", str(self.folder / "filler")], check=True)

    def sensetree(self, *args: str) -> subprocess.CompletedProcess:
        result = self.enter([*LAUNCHER, *args], capture_output=True, text=True, env=_environment(self.folder),
                            timeout=300)
        assert "Traceback" not in result.stderr, result.stderr
        return result

    def close(self) -> None:
        self.enter(["rm", "-f", str(self.folder / "filler")])
        self.holder.kill()
        self.holder.wait()


@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("nsenter")):
        pytest.skip("no private tmpfs here (needs root, unshare and nsenter)")
    data = tmp_path / "data"
    data.mkdir()
    disk = SmallDisk(data)
    try:
        if not disk.mount("8m"):
            pytest.skip("tmpfs cannot be mounted here")
        yield disk
    finally:
        disk.close()


def test_a_full_disk_stops_indexing_in_one_line_and_reads_go_on(small_disk, tmp_path):
    """Defect 15: a full disk gave tracebacks, and status and search crashed on SQLite's
    "database or disk is full"; worse, the catalog that failed to open was moved aside as damaged."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(3):
        (tree / f"note{i}.txt").write_text(f"Note {i}: harbour ledger orchard and a violin.\n", encoding="utf-8")
    assert small_disk.sensetree("add", str(tree)).returncode == 0
    assert small_disk.sensetree("index").returncode == 0

    small_disk.fill()
    for command in (["status"], ["search", "harbour"], ["tree", "harbour"], ["queue"]):
        result = small_disk.sensetree(*command)
        assert result.returncode == 0, (command, result.stderr)
        assert "note" in result.stdout if command[0] in ("search", "tree") else result.stdout.strip()
    assert "indexed: 3" in small_disk.sensetree("status").stdout

    (tree / "note3.txt").write_text("Note 3: a pelican on the quay.\n", encoding="utf-8")
    refused = small_disk.sensetree("index")
    assert refused.returncode == 4, refused.stderr
    assert "disk is full" in " ".join(refused.stderr.split())
    assert len(refused.stderr.strip().splitlines()) <= 2  # one line (rich may wrap it once)
    listing = small_disk.enter(["ls", str(small_disk.folder)], capture_output=True, text=True).stdout
    assert "damaged" not in listing  # a full disk is not damage: nothing was moved aside

    small_disk.free()
    assert small_disk.sensetree("index").returncode == 0
    found = small_disk.sensetree("search", "pelican")
    assert "note3.txt" in found.stdout
    assert "indexed: 4" in small_disk.sensetree("status").stdout


def test_a_disk_that_fills_during_indexing_leaves_status_search_and_settings_working(small_disk, tmp_path):
    """Issue 33: the disk filled in the middle of a run, which left the catalog's write-ahead log long;
    the next status and search checked that log by checkpointing it into the catalog, which needs room,
    and failed with exit 4 and a message saying that status and search keep working. ``config get``
    also joined the 469 MB embedded chat model into the data dir."""
    tree = tmp_path / "tree"
    tree.mkdir()
    words = "harbour ledger orchard violin pelican quay lantern beacon tide anchor rope sail mast keel".split()
    for i in range(200):  # about 8 MB of text that no chunking shrinks: more than the small disk holds
        numbered = " ".join(f"{words[(i * 7 + k) % len(words)]}{(i * 7919 + k * 104729) % 99991}" for k in range(3000))
        # "harbour" as a word of its own: the numbered words match no query, so without it the search below
        # found a note only when the disk filled late enough for some files to have vectors (CI, stop 37)
        (tree / f"note{i}.txt").write_text(f"Harbour log {i}. {numbered}", encoding="utf-8")
    assert small_disk.sensetree("config", "set", "embedding.model", "minilm").returncode == 0
    assert small_disk.sensetree("add", str(tree)).returncode == 0
    refused = small_disk.sensetree("index")
    assert refused.returncode == 4 and "disk is full" in " ".join(refused.stderr.split()), refused.stderr
    assert small_disk.enter(["stat", "-f", "-c", "%a", str(small_disk.folder)], capture_output=True,
                            text=True).stdout.strip() == "0"  # the run filled it to the last block

    for command in (["status"], ["search", "harbour"], ["tree", "harbour"], ["queue"], ["config", "get"]):
        result = small_disk.sensetree(*command)
        assert result.returncode == 0, (command, result.stderr)
        assert result.stdout.strip() and "disk is full" not in result.stderr, (command, result.stderr)
    assert "note" in small_disk.sensetree("search", "harbour").stdout
    listing = small_disk.enter(["ls", str(small_disk.folder)], capture_output=True, text=True).stdout
    assert "damaged" not in listing and ".gguf" not in small_disk.enter(
        ["find", str(small_disk.folder)], capture_output=True, text=True).stdout
