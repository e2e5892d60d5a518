"""Crash consistency: SIGKILL the indexer at random moments, change the tree between kills,
and the index it finally reaches equals a clean index of the same final tree.

Each run is a real ``sensetree index`` process killed 0.5-3 s after it starts (a start,
imports and model load included, takes about 1.5 s here), so kills land in the imports,
the scan, extraction, embedding, LanceDB commits, catalog transactions and the final
compaction. Between kills the tree changes (edits, deletes, additions, renames, a whole
folder removed, a file reverted to content indexed before), sometimes while the indexer
runs, so recovery meets deletes and moves too. The RNG is seeded: a failure replays.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sensetree.engine import Engine
from tests.support.index import status_counts, stored_chunks
from tests.support.realtree import KINDS, build_tree, snapshot, write_file

pytestmark = pytest.mark.slow  # a fault suite

FILES = 240
KILLS = 50


# With the fast English model: chunks of 400 characters, so that short files still have several.
SMALL_CHUNKS = {"indexing.chunk_size": 400, "indexing.overlap": 80}


def _files(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*") if p.is_file())


class Mutator:
    """Seeded edits, deletes, additions and renames, remembering old contents to revert to."""

    def __init__(self, tree: Path, rng: random.Random):
        self.tree, self.rng = tree, rng
        self.before: dict[Path, bytes] = {}
        self.added = 0
        self.log: list[str] = []

    def mutate(self) -> None:
        rng = self.rng
        files = _files(self.tree)
        for path in rng.sample(files, 2):  # edit, remembering what was there
            self.before.setdefault(path, path.read_bytes())
            write_file(path, rng)
            self.log.append(f"edit {path.name}")
        reverted = [p for p in self.before if p.exists()]
        if reverted:  # back to content an earlier run may have indexed
            path = rng.choice(reverted)
            path.write_bytes(self.before.pop(path))
            self.log.append(f"revert {path.name}")
        victim = rng.choice(_files(self.tree))
        victim.unlink()
        self.before.pop(victim, None)
        self.log.append(f"delete {victim.name}")
        for _ in range(2):
            self.added += 1
            path = self.tree / f"area{rng.randrange(7)}" / f"new{self.added:03d}.{rng.choice(KINDS)}"
            write_file(path, rng)
            self.log.append(f"add {path.name}")
        source = rng.choice(_files(self.tree))
        target = self.tree / "moved" / f"m{self.added:03d}_{source.name}"
        target.parent.mkdir(exist_ok=True)
        os.rename(source, target)
        self.before.pop(source, None)
        self.log.append(f"rename {source.name} -> moved/{target.name}")

    def drop_folder(self) -> None:
        folders = sorted(p for p in self.tree.glob("area*/box*") if p.is_dir())
        folder = self.rng.choice(folders)
        shutil.rmtree(folder)
        self.before = {p: b for p, b in self.before.items() if p.exists()}
        self.log.append(f"rmtree {folder.relative_to(self.tree)}")


# `sensetree index`, with keyword batches of 16 files or chunks instead of 256: a run then commits
# every few tenths of a second (the semantic phase does so by itself), so the kills also land
# between LanceDB's delete and append, between LanceDB and SQLite, between the keyword and the
# semantic phase, and inside the final compaction, not only before the first batch.
INDEX = ("import sys; import sensetree.ingest.keyword as keyword; keyword.BATCH_CHUNKS = keyword.BATCH_FILES = 16; "
         "from sensetree.interfaces.cli import main; sys.argv[0] = 'sensetree'; main()")


# A worker process that was still starting when its parent got SIGKILL finds the parent's pipe closed
# and says so from multiprocessing's own bootstrap, before any of our code runs (maybe half-written
# when the log is read): the operating system's doing, not the indexer's.
_ORPHANED_WORKER = re.compile(r'Traceback \(most recent call last\):\n\s*File "<string>", line 1, in <module>\n'
                              r'\s*File "[^"]*multiprocessing[/\\]spawn\.py", line \d+, in spawn_main\n', re.S)


def _own_output(log: str, killed: bool) -> str:
    """What the indexer wrote: for a killed run, up to an orphaned worker's start-up traceback."""
    orphan = _ORPHANED_WORKER.search(log) if killed else None
    return log[:orphan.start()] if orphan else log


def _run_index(data: Path, log: Path) -> subprocess.Popen:
    command = [sys.executable, "-c", INDEX, "index", "--quiet", "--data-dir", str(data)]
    with open(log, "wb") as err:
        return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)


def test_fifty_random_sigkills_with_a_changing_tree_end_equal_to_a_clean_index(tmp_path, make_engine):
    rng = random.Random(20260615)
    tree = tmp_path / "tree"
    build_tree(tree, FILES)
    data = tmp_path / "data"
    make_engine(data, tree, settings=SMALL_CHUNKS, index=False).close()

    mutator = Mutator(tree, rng)
    kills = finished = 0
    attempt = 0
    while kills < KILLS:
        attempt += 1
        assert attempt < KILLS * 3, "the indexer keeps finishing before it can be killed"
        log = tmp_path / f"run{attempt:03d}.log"
        process = _run_index(data, log)
        delay = rng.uniform(0.5, 3.0)
        if attempt % 4 == 0:  # change the tree under a running indexer
            time.sleep(delay * rng.random())
            mutator.mutate()
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
        killed = process.poll() is None
        if killed:
            process.send_signal(signal.SIGKILL)
            kills += 1
        else:
            finished += 1
            assert process.returncode == 0, log.read_text(errors="replace")
        process.wait()
        errors = _own_output(log.read_text(errors="replace"), killed)
        assert "Traceback" not in errors and "error:" not in errors, f"run {attempt}:\n{errors}"
        if attempt % 4 == 2:  # change the tree between a kill and the restart
            mutator.mutate()
        if attempt == 20:
            mutator.drop_folder()

    final = subprocess.run([sys.executable, "-c", INDEX, "index", "--quiet", "--data-dir", str(data)],
                           capture_output=True, text=True, timeout=600)
    assert final.returncode == 0 and "Traceback" not in final.stderr, final.stderr
    with Engine(data) as engine:
        assert status_counts(engine)["pending"] == 0
        recovered = snapshot(engine)

    with make_engine(tmp_path / "clean", tree, settings=SMALL_CHUNKS) as engine:
        expected = snapshot(engine)

    on_disk = {os.path.normpath(str(p)) for p in _files(tree)}
    assert set(expected) == on_disk
    assert recovered == expected, "\n".join(mutator.log)
    assert all(status == "indexed" and chunks > 0 for status, chunks in recovered.values())
    assert kills >= KILLS
    print(f"{kills} kills, {finished} runs finished on their own, {len(mutator.log)} tree changes")


# The indexer killed at an exact point of a vector swap: right after LanceDB's delete commit,
# or after the append but before SQLite marks the file indexed.
KILL_INSIDE_SWAP = """
import os, signal
from sensetree.store.writes import ChunkWrites
real_replace = ChunkWrites.replace_files

def replace_then_die(self, paths, rows, model, dimension):
    if os.environ["KILL_MOMENT"] == "after-delete":
        self.delete_paths(paths)
    else:
        real_replace(self, paths, rows, model, dimension)
    os.kill(os.getpid(), signal.SIGKILL)

ChunkWrites.replace_files = replace_then_die
from sensetree.interfaces.cli import main
main()
"""


@pytest.mark.parametrize("moment", ["after-delete", "after-append"])
def test_kill_inside_a_vector_swap_then_the_file_reverts(tmp_path, moment, make_engine):
    """The file goes back to the content indexed before the kill: its old hash must not vouch for vectors
    that were deleted or replaced by the interrupted swap."""
    tree = tmp_path / "tree"
    tree.mkdir()
    kept = tree / "kept.txt"
    kept.write_text("The lighthouse keeper logs the storm at midnight.", encoding="utf-8")
    (tree / "other.txt").write_text("The orchard harvest starts in September.", encoding="utf-8")
    data = tmp_path / "data"
    make_engine(data, tree, settings=SMALL_CHUNKS).close()
    original = kept.read_bytes()
    kept.write_text("The violin workshop moved to the old railway station. " * 30, encoding="utf-8")
    killed = subprocess.run([sys.executable, "-c", KILL_INSIDE_SWAP, "index", "--quiet", "--data-dir", str(data)],
                            capture_output=True, text=True, timeout=300, env={**os.environ, "KILL_MOMENT": moment})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    kept.write_bytes(original)
    with Engine(data) as engine:
        engine.index()
        recovered = snapshot(engine)
        assert "lighthouse" in stored_chunks(engine, str(kept))[0]["text"]
    with make_engine(tmp_path / "clean", tree, settings=SMALL_CHUNKS) as engine:
        assert recovered == snapshot(engine)
