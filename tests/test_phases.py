"""Keyword first, meaning after: every file is findable by its words before its vectors exist,
vectors come in a useful order, and indexing stops when asked."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from sensetree.engine import Engine
from sensetree.ingest import semantic
from sensetree.operations import SearchParams, TreeParams
from sensetree.operations import AddRootParams
from sensetree.handlers.files import prioritize
from tests.support.index import catalog_rows, chunk_count, embedded_chunks, status_counts

WORDS = ["harbour", "ledger", "orchard", "glacier", "violin", "lantern", "meadow", "compass", "quarry", "saffron"]


def _tree(root: Path, files: int = 12) -> list[Path]:
    """Files with one unique code word each, modified a minute apart (file 0 the oldest)."""
    made = []
    for i in range(files):
        path = root / f"area{i % 3}" / f"note{i:02d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = " ".join(f"{WORDS[(i + k) % len(WORDS)]} {k}" for k in range(40))
        path.write_text(f"Field note {i} with the code word zx{i:02d}q.\n\n{body}\n", encoding="utf-8")
        os.utime(path, (1_700_000_000 + 60 * i, 1_700_000_000 + 60 * i))
        made.append(path)
    return made


def _stop_when_semantic(stop: threading.Event):
    def update(progress) -> None:
        if progress.phase == "semantic":
            stop.set()
    return update


def test_every_file_is_findable_by_keyword_before_it_has_vectors(tmp_path, make_engine):
    files = _tree(tmp_path / "tree")
    # meaning on demand off: the keyword phase alone, and nothing embedded by the searches themselves
    with make_engine(tmp_path / "data", tmp_path / "tree",
                     settings={"retrieval.rerank": False, "retrieval.on_demand_seconds": 0.0},
                     index=False) as engine:
        stop = threading.Event()
        progress = engine.index(on_update=_stop_when_semantic(stop), stop=stop)
        assert (progress.files, progress.keyword, progress.semantic) == (12, 12, 0)
        assert status_counts(engine)["keyword"] == 12 and embedded_chunks(engine) == 0
        for i, path in enumerate(files):
            response = engine.run(SearchParams(f"zx{i:02d}q", limit=3))
            assert response.results[0].path == str(path) and response.results[0].legs == ["bm25"]
            assert response.coverage and (response.coverage.files, response.coverage.embedded) == (12, 0)
        tree = engine.run(TreeParams("harbour ledger"))
        node, notices = tree.tree, tree.notices
        assert node is None or not node.children
        assert any("covers 0 of 12 files" in n for n in notices)

        engine.index()  # resumes with the vectors only: nothing is extracted again
        assert status_counts(engine)["indexed"] == 12 and embedded_chunks(engine) == chunk_count(engine)
        response = engine.run(SearchParams("zx05q", limit=3))
        assert response.results[0].path == str(files[5]) and "dense" in response.results[0].legs
        assert response.coverage is None
        tree = engine.run(TreeParams("harbour ledger"))
        _, notices = tree.tree, tree.notices
        assert not any("covers" in n for n in notices)


def test_vectors_come_for_the_newest_files_first_and_for_what_the_user_looks_at(tmp_path, monkeypatch, make_engine):
    files = _tree(tmp_path / "tree")
    monkeypatch.setattr(semantic, "FIRST_BATCH", 1)  # chunks per batch: one file at a time
    monkeypatch.setattr(semantic, "MAX_BATCH", 1)
    with make_engine(tmp_path / "data", tmp_path / "tree",
                     settings={"retrieval.rerank": False, "retrieval.on_demand_seconds": 0.0},
                     index=False) as engine:
        stop = threading.Event()
        engine.index(on_update=_stop_when_semantic(stop), stop=stop)
        scoped = engine.run(SearchParams("harbour", scope=str(tmp_path / "tree" / "area1")))  # area1: notes 1, 4, 7, 10
        assert scoped.coverage and (scoped.coverage.files, scoped.coverage.embedded) == (4, 0)
        prioritize(engine, str(files[0]))  # the oldest file, previewed: it goes first of all

        def indexed() -> set[str]:
            return {r.path for r in catalog_rows(engine) if r.status == "indexed"}

        already = indexed()  # a batch the first run had begun before it saw the stop
        order: list[str] = []

        def record(progress) -> None:
            order.extend(sorted(indexed() - already - set(order)))
            if len(order) >= 6:
                stop.set()

        stop.clear()
        engine.index(on_update=record, stop=stop)
        names = [Path(p).name for p in order[:5]]
        assert names[0] == "note00.txt"
        assert names[1:5] == ["note10.txt", "note07.txt", "note04.txt", "note01.txt"]  # the scope, newest first
        rest = [str(p) for p in reversed(files) if str(p) not in already and str(p) not in order[:5]]
        assert order[5] == rest[0]  # then the rest, newest first


@pytest.mark.slow  # an indexing process on the default model, stopped by a signal
@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT])
def test_index_stops_within_seconds_and_keeps_what_it_finished(tmp_path, sent, cli):
    """On the slow default model, in the middle of the semantic phase, the process exits at once
    (it used to finish a batch of 256 chunks first: minutes) and the next run resumes."""
    tree = tmp_path / "tree"
    _tree(tree, files=40)
    data = tmp_path / "data"
    with Engine(data) as engine:
        engine.run(AddRootParams(str(tree)))
    process = cli.start(data, "index", "--quiet")
    deadline = time.monotonic() + 120
    with Engine(data) as probe:
        while probe.catalog.files.counts()["keyword"] < 40 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.2)
    assert process.poll() is None, process.communicate()
    time.sleep(1.0)  # inside an embedding call
    sent_at = time.monotonic()
    process.send_signal(sent)
    _, stderr = process.communicate(timeout=60)
    exit_seconds = time.monotonic() - sent_at
    assert exit_seconds < 10, f"took {exit_seconds:.1f} s to stop"
    # it used to abort in onnxruntime at exit ("terminate called without an active exception", 134)
    assert process.returncode == 0 and "terminate called" not in stderr and "Traceback" not in stderr, stderr
    with Engine(data) as engine:
        counts = status_counts(engine)
        assert counts["pending"] == 0 and counts["keyword"] + counts["indexed"] == 40
        assert engine.run(SearchParams("zx33q", rerank=False)).results[0].name == "note33.txt"
        engine.index()
        assert status_counts(engine)["indexed"] == 40
