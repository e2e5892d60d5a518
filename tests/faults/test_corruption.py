"""Power-cut damage: torn or corrupt LanceDB files, a damaged SQLite WAL, a damaged catalog.

Every case damages a real index the way a power cut or a bad disk would, then drives it as a
user does, through real ``sensetree`` processes: ``status``, ``search`` and ``index`` must answer
without a traceback, say what was damaged and repaired, and the index must end equal to a
clean index of the same tree.

Not covered, on purpose: bytes flipped inside the vector pages of a data file. Lance files
carry no checksums over their data pages, so such a flip reads back as other floats and
cannot be told from real data; what is tested is what can be detected (torn, truncated,
missing files, damaged footers and manifests).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sensetree.engine import Engine
from tests.support.realtree import build_tree, snapshot

pytestmark = pytest.mark.slow  # a fault suite


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, make_engine):
    """A tree, its index (closed cleanly, so no WAL is left), and the snapshot a clean index gives."""
    base = tmp_path_factory.mktemp("corruption")
    tree = base / "tree"
    build_tree(tree, 40)
    data = base / "data"
    with make_engine(data, tree) as engine:
        # A second write, so the newest fragment and manifest hold only the latest change.
        (tree / "late.txt").write_text("A late note about the volcano tram schedule.", encoding="utf-8")
        engine.index()
        expected = snapshot(engine)
    return tree, data, expected


def _copy(pristine, tmp_path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(pristine[1], data)
    return data


def _newest(files) -> Path:
    return max(files, key=lambda p: p.stat().st_mtime_ns)


def _latest_manifest(data: Path) -> Path:
    manifests = list((data / "lancedb" / "chunks.lance" / "_versions").glob("*.manifest"))
    return min(manifests, key=lambda p: int(p.stem))  # named u64::MAX - version: the newest sorts first


def _fragment(data: Path) -> Path:
    return _newest((data / "lancedb" / "chunks.lance" / "data").glob("*.lance"))


def _truncate_half(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def _overwrite(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as handle:
        handle.seek(offset if offset >= 0 else path.stat().st_size + offset)
        handle.write(data)


VECTOR_DAMAGE = {
    "newest fragment truncated": lambda data: _truncate_half(_fragment(data)),
    "newest fragment footer overwritten": lambda data: _overwrite(_fragment(data), -64, b"\xff" * 64),
    "newest fragment metadata zeroed": lambda data: _overwrite(
        _fragment(data), _fragment(data).stat().st_size // 3, b"\0" * (_fragment(data).stat().st_size // 3)),
    "newest fragment lost": lambda data: _fragment(data).unlink(),
    "latest manifest garbage": lambda data: _latest_manifest(data).write_bytes(os.urandom(300)),
    "latest manifest zero bytes": lambda data: os.truncate(_latest_manifest(data), 0),
    "latest manifest truncated": lambda data: _truncate_half(_latest_manifest(data)),
}


def _converges(cli, data: Path, expected: dict) -> None:
    cli.run(data, "index", "--json")
    with Engine(data) as engine:
        assert snapshot(engine) == expected


@pytest.mark.parametrize("damage", list(VECTOR_DAMAGE))
def test_damaged_vector_table_is_rolled_back_and_reindexed(pristine, tmp_path, damage, cli):
    _, _, expected = pristine
    data = _copy(pristine, tmp_path)
    VECTOR_DAMAGE[damage](data)

    status = json.loads(cli.run(data, "status", "--json").stdout)
    found = json.loads(cli.run(data, "search", "volcano tram schedule", "--json").stdout)
    told = [n for n in status["notices"] + found["notices"] if "vector index was damaged" in n]
    assert len(told) == 1, (status["notices"], found["notices"])
    assert "rolled back" in told[0]
    assert found["results"], "search answers from the version it rolled back to"
    _converges(cli, data, expected)


def test_damage_found_by_index_first(pristine, tmp_path, cli):
    """The indexer meets the torn fragment before any search does (compaction reads it)."""
    _, _, expected = pristine
    data = _copy(pristine, tmp_path)
    VECTOR_DAMAGE["newest fragment footer overwritten"](data)
    stderr = cli.run(data, "index", "--json").stderr
    assert "vector index was damaged" in stderr
    with Engine(data) as engine:
        assert snapshot(engine) == expected


# --- the catalog ----------------------------------------------------------------------------------


def _files_table_root_page(database: Path) -> int:
    import sqlite3

    with sqlite3.connect(database) as db:
        return db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'files'").fetchone()[0]


def _garble_page(database: Path, page: int) -> None:
    _overwrite(database, (page - 1) * 4096, os.urandom(4096))


CATALOG_DAMAGE = {
    "header overwritten": (lambda db: _overwrite(db, 0, os.urandom(100)), False),
    "files table garbled": (lambda db: _garble_page(db, _files_table_root_page(db)), True),
    "truncated": (lambda db: os.truncate(db, 4096 * 2), False),
}


@pytest.mark.parametrize("damage", list(CATALOG_DAMAGE))
def test_damaged_catalog_is_salvaged(pristine, tmp_path, damage, cli):
    tree, _, expected = pristine
    data = _copy(pristine, tmp_path)
    garble, roots_survive = CATALOG_DAMAGE[damage]
    garble(data / "catalog.sqlite")

    shown = cli.run(data, "status", "--json")  # notices found on opening go to stderr
    status, stderr = json.loads(shown.stdout), shown.stderr
    told = [n for n in [*status["notices"], stderr] if "catalog was damaged" in n]
    assert told, (status["notices"], stderr)
    assert list((data).glob("catalog.damaged-*.sqlite")), "the damaged file is kept aside"
    cli.run(data, "search", "volcano tram schedule", "--json")
    if roots_survive:
        assert status["roots"] == [str(tree)]
    else:
        assert "add your folders again" in told[0]
        cli.run(data, "add", tree)
    _converges(cli, data, expected)


# A catalog whose WAL holds a whole indexing run: the indexer is killed before it can close.
INDEX_THEN_DIE = """
import os, signal, sys
from sensetree.engine import Engine
engine = Engine(sys.argv[1])
engine.index()
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture(scope="module")
def unclosed(pristine, tmp_path_factory, make_engine):
    tree, _, _ = pristine
    data = tmp_path_factory.mktemp("wal") / "data"
    make_engine(data, tree, index=False).close()
    killed = subprocess.run([sys.executable, "-c", INDEX_THEN_DIE, str(data)], capture_output=True, text=True,
                            timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    wal = Path(f"{data / 'catalog.sqlite'}-wal")
    assert wal.stat().st_size > 40_000, "the run's commits are in the log"
    return data


def _wal(data: Path) -> Path:
    return Path(f"{data / 'catalog.sqlite'}-wal")


WAL_DAMAGE = {
    "frames overwritten in the middle": (lambda wal: _overwrite(wal, wal.stat().st_size // 2, os.urandom(5000)), True),
    "header overwritten": (lambda wal: _overwrite(wal, 0, os.urandom(32)), True),
    "torn in the middle of a frame": (lambda wal: os.truncate(wal, wal.stat().st_size * 3 // 5 + 100), False),
    "lost entirely": (lambda wal: wal.unlink(), False),
}


@pytest.mark.parametrize("damage", list(WAL_DAMAGE))
def test_damaged_wal_is_detected_and_the_catalog_reconciled(pristine, unclosed, tmp_path, damage, cli):
    """SQLite drops the frames from the first bad checksum on, silently: the catalog opens, older.

    A damaged header or committed frames past what SQLite kept are detected and reported; a log
    cut short (or gone) is indistinguishable from commits never made. Either way the next index
    ends equal to a clean one, and nothing in between crashes.
    """
    _, _, expected = pristine
    data = tmp_path / "data"
    shutil.copytree(unclosed, data)
    corrupt, detectable = WAL_DAMAGE[damage]
    corrupt(_wal(data))

    shown = cli.run(data, "status", "--json")
    json.loads(shown.stdout)  # the status still answers
    stderr = shown.stderr
    if detectable:
        assert "write-ahead log was damaged" in stderr, stderr
    cli.run(data, "search", "volcano tram schedule", "--json")
    _converges(cli, data, expected)
