"""`index --watch`: creations, edits, renames and deletions reach the index within seconds."""

from __future__ import annotations

import os
import threading

from tests.support.waiting import wait_for
from sensetree.answers import Indexed
from sensetree.operations import IndexParams, SearchParams
from tests.support.index import catalog_row, status, stored_chunks, texts


def test_watch_keeps_the_index_true_to_the_disk(tmp_path, write_tree, make_engine):
    tree = tmp_path / "tree"
    write_tree(tree, {"first.txt": "Notes about the lighthouse keeper's logbook."})
    engine = make_engine(tmp_path / "data", tree, index=False)
    stop = threading.Event()
    rounds = []
    worker = threading.Thread(target=engine.run, args=(IndexParams(watch=True),), kwargs={  # each round's Indexed
        "stop": stop, "on_progress": lambda event: rounds.append(event) if isinstance(event, Indexed) else None})
    worker.start()
    try:
        assert wait_for(lambda: len(rounds) >= 1)
        path = lambda name: os.path.join(str(tree), name)  # noqa: E731
        assert status(engine, path("first.txt")) == "indexed"

        (tree / "second.txt").write_text("A recipe for sourdough bread with rye flour.", encoding="utf-8")
        assert wait_for(lambda: status(engine, path("second.txt")) == "indexed")

        (tree / "second.txt").write_text("A recipe for focaccia with rosemary.", encoding="utf-8")
        assert wait_for(lambda: "focaccia" in (texts(engine, path("second.txt")) or [""])[0])

        os.rename(tree / "first.txt", tree / "renamed.txt")
        assert wait_for(lambda: catalog_row(engine, path("first.txt")) is None and status(engine, path("renamed.txt")) == "indexed")

        os.remove(tree / "second.txt")
        assert wait_for(lambda: catalog_row(engine, path("second.txt")) is None and not stored_chunks(engine, path("second.txt")))
        assert [r.path for r in engine.run(SearchParams("lighthouse", rerank=False)).results] == [path("renamed.txt")]
    finally:
        stop.set()
        worker.join(30)
        engine.close()
    assert not worker.is_alive()
