"""A killed indexer resumes where it stopped and ends with the index a clean run gives."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from sensetree.engine import Engine

pytestmark = pytest.mark.slow  # kills and restarts indexing processes


def _tree(root, files=60):
    for i in range(files):
        folder = root / f"part{i % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        paragraphs = [f"Document {i}, section {s}: notes on topic {i * 7 % 13} with figures {i * s}." * 12
                      for s in range(3)]
        (folder / f"doc{i:03d}.txt").write_text("\n\n".join(paragraphs), encoding="utf-8")


def _snapshot(engine: Engine) -> tuple[dict, list]:
    rows = engine.store.table.search().select(["path", "chunk_index", "text"]).limit(1_000_000).to_list()
    keys = sorted((r["path"], r["chunk_index"]) for r in rows)
    statuses = {r.path: (r.status, r.chunks) for r in engine.catalog.iter_rows()}
    return statuses, keys


def test_sigkill_mid_run_then_resume_matches_a_clean_index(tmp_path):
    tree = tmp_path / "tree"
    _tree(tree)
    data = tmp_path / "data"
    with Engine(data) as engine:
        engine.set_setting("embedding.model", "minilm")
        engine.add_root(str(tree))
    env = {**os.environ, "SENSETREE_HOME": str(data)}
    kills = 0
    for _ in range(3):
        process = subprocess.Popen([sys.executable, "-m", "sensetree.interfaces.cli", "index", "--quiet"], env=env)
        deadline = time.monotonic() + 120
        with Engine(data) as probe:
            while time.monotonic() < deadline and probe.catalog.counts()["indexed"] < 10 * (kills + 1):
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
    with Engine(clean) as engine:
        engine.set_setting("embedding.model", "minilm")
        engine.add_root(str(tree))
        engine.index()
        expected = _snapshot(engine)
    assert resumed == expected
    assert all(status == "indexed" and chunks > 0 for status, chunks in resumed[0].values())
