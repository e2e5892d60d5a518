"""A killed indexer resumes where it stopped and ends with the index a clean run gives."""

from __future__ import annotations

import signal
import time

import pytest

from sensetree.engine import Engine
from tests.support.index import catalog_rows, table_rows

pytestmark = pytest.mark.slow  # kills and restarts indexing processes


def _documents(files=60) -> dict[str, str]:
    return {f"part{i % 4}/doc{i:03d}.txt": "\n\n".join(f"Document {i}, section {s}: notes on topic {i * 7 % 13} "
                                                         f"with figures {i * s}." * 12 for s in range(3))
            for i in range(files)}


def _snapshot(engine: Engine) -> tuple[dict, list]:
    rows = table_rows(engine, "path", "chunk_index", "text")
    keys = sorted((r["path"], r["chunk_index"]) for r in rows)
    statuses = {r.path: (r.status, r.chunks) for r in catalog_rows(engine)}
    return statuses, keys


def test_sigkill_mid_run_then_resume_matches_a_clean_index(tmp_path, write_tree, make_engine, cli):
    tree = tmp_path / "tree"
    write_tree(tree, _documents())
    data = tmp_path / "data"
    make_engine(data, tree, index=False).close()
    kills = 0
    for _ in range(3):
        process = cli.start(data, "index", "--quiet")
        deadline = time.monotonic() + 120
        with Engine(data) as probe:
            while time.monotonic() < deadline and probe.catalog.files.counts()["indexed"] < 10 * (kills + 1):
                if process.poll() is not None:
                    break
                time.sleep(0.3)
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait()
    assert kills >= 1
    with Engine(data) as engine:
        engine.index()
        resumed = _snapshot(engine)
    assert len(resumed[1]) == len(set(resumed[1])), "no duplicate (path, chunk_index)"

    clean = tmp_path / "clean"
    with make_engine(clean, tree) as engine:
        expected = _snapshot(engine)
    assert resumed == expected
    assert all(status == "indexed" and chunks > 0 for status, chunks in resumed[0].values())
