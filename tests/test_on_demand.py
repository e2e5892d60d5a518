"""Meaning from the first minute (design §2.5): a search embeds its keyword candidates that have no vector yet,
keeps them for the semantic phase when it may write, and the semantic phase gives every file its first chunk
before the rest of any file. Real files, the real MiniLM and LanceDB."""

from __future__ import annotations

import threading
from pathlib import Path

from sensetree.ingest import semantic
from sensetree.operations import QueueParams, SearchParams
from tests.support.index import catalog_row, chunk_count, embedded_chunks, stores, texts

TOPICS = ["harbour ledger tides cargo", "orchard apples pruning frost", "violin strings bow rosin",
          "glacier ice moraine valley", "bread dough yeast oven", "comet orbit telescope night"]
# a budget no busy machine overruns, for the tests of what is kept (tests/faults/test_endpoint_faults.py holds it)
WAITING = {"retrieval.rerank": False, "retrieval.on_demand_seconds": 30.0}


def _tree(root: Path, paragraphs: int = 1) -> list[Path]:
    """One file a topic, ``paragraphs`` long paragraphs each (several chunks when more than one)."""
    made = []
    for i, topic in enumerate(TOPICS):
        path = root / f"notes{i}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(" ".join(f"{word} {p}{k}" for k in range(60) for word in topic.split()) for p in range(paragraphs))
        path.write_text(f"Notes about {topic}.\n\n{body}\n", encoding="utf-8")
        made.append(path)
    return made


def _keyword_phase_only(engine, monkeypatch) -> None:
    """The keyword phase, and at most the semantic phase's first chunk (the newest file's) before it stops."""
    monkeypatch.setattr(semantic, "FIRST_BATCH", 1)
    stop = threading.Event()
    engine.index(on_update=lambda p: stop.set() if p.phase == "semantic" else None, stop=stop)


def test_a_search_embeds_its_keyword_hits_and_keeps_them_for_the_semantic_phase(tmp_path, monkeypatch, make_engine):
    files = _tree(tmp_path / "tree")
    with make_engine(tmp_path / "data", tmp_path / "tree", settings=WAITING, index=False) as engine:
        _keyword_phase_only(engine, monkeypatch)
        before = embedded_chunks(engine)
        response = engine.run(SearchParams("what does a glacier leave in the valley", limit=3))
        first = response.results[0]
        assert first.path == str(files[3])
        assert first.signals["meaning"] == "on demand" and first.signals["cosine"] is not None
        assert response.fusion["method"] == "both" and response.fusion["on_demand"]["kept"] >= 1
        assert embedded_chunks(engine) > before  # kept: the same model, the same text
        assert catalog_row(engine, str(files[3])).status == "indexed"  # its one chunk: the file is done
        assert response.coverage is not None and "meaning for" in response.as_dict()["coverage"]["meaning"]

        kept = embedded_chunks(engine)
        progress = engine.index()  # the semantic phase embeds the rest, and not what the search kept
        assert progress.embedding.count == chunk_count(engine) - kept
        assert embedded_chunks(engine) == chunk_count(engine)
        again = engine.run(SearchParams("what does a glacier leave in the valley", limit=3))
        assert again.results[0].path == str(files[3]) and again.results[0].signals["meaning"] == "leg"


def test_a_search_that_may_not_write_uses_the_vectors_once(tmp_path, monkeypatch, make_engine):
    """The writer lock is taken (here by this process's own indexing, as in a server): the vectors serve the
    query and are not kept, the files move forward in the semantic queue instead, and the report names who
    holds the lock."""
    files = _tree(tmp_path / "tree")
    with make_engine(tmp_path / "data", tmp_path / "tree", settings=WAITING, index=False) as engine:
        _keyword_phase_only(engine, monkeypatch)
        embedded_before = embedded_chunks(engine)
        held, release = threading.Event(), threading.Event()

        def other_writer() -> None:  # a writer lock held on another thread is another owner, as another process is
            with engine.writer():
                held.set()
                release.wait(30)

        thread = threading.Thread(target=other_writer)
        thread.start()
        held.wait(10)
        try:
            response = engine.run(SearchParams("how to put rosin on a violin bow", limit=3))
        finally:
            release.set()
            thread.join()
        assert response.results[0].path == str(files[2])
        assert response.results[0].signals["meaning"] == "on demand"
        report = response.fusion["on_demand"]
        assert report["kept"] == 0
        assert report["why_not_kept"] == f"this sensetree process is already indexing {engine.data_dir}"
        assert embedded_chunks(engine) == embedded_before
        assert engine.run(QueueParams(limit=1)).keyword[0].path == str(files[2])  # first in line now


def test_every_file_gets_its_first_chunk_before_the_rest_of_any_file(tmp_path, monkeypatch, make_engine):
    _tree(tmp_path / "tree", paragraphs=6)
    monkeypatch.setattr(semantic, "MAX_BATCH", 2)  # two chunks a batch: the order shows batch by batch
    with make_engine(tmp_path / "data", tmp_path / "tree",
                     settings={"retrieval.rerank": False, "retrieval.on_demand_seconds": 0.0},
                     index=False) as engine:
        _keyword_phase_only(engine, monkeypatch)
        monkeypatch.setattr(semantic, "FIRST_BATCH", 2)
        assert chunk_count(engine) > 2 * len(TOPICS)  # several chunks a file
        seen: list[tuple[int, int]] = []
        stop = threading.Event()

        with stores(engine.data_dir) as stored:  # which chunks have vectors, as the semantic phase goes

            def record(progress) -> None:
                openings = len(TOPICS) - len(stored.chunks.queries.unembedded_openings(100))
                seen.append((openings, stored.chunks.queries.count_embedded()))
                if seen[-1][1] >= 2 * len(TOPICS):
                    stop.set()

            engine.index(on_update=record, stop=stop)
        for openings, embedded in seen:  # no chunk past the first while a file still waits for its first
            assert embedded <= openings or openings == len(TOPICS)
        assert seen[-1][0] == len(TOPICS)


def test_files_a_search_returns_without_meaning_go_first_in_the_semantic_queue(tmp_path, monkeypatch, make_engine):
    files = _tree(tmp_path / "tree")
    with make_engine(tmp_path / "data", tmp_path / "tree",
                     settings={"retrieval.rerank": False, "retrieval.on_demand_seconds": 0.0},
                     index=False) as engine:
        _keyword_phase_only(engine, monkeypatch)
        response = engine.run(SearchParams("how do you prune an apple orchard before the frost", limit=1))
        assert response.results[0].path == str(files[1]) and response.results[0].signals["cosine"] is None
        assert engine.run(QueueParams(limit=1)).keyword[0].path == str(files[1])  # the oldest but one: first now


def test_a_store_that_refuses_the_vectors_never_fails_the_search(tmp_path, monkeypatch, make_engine):
    """Keeping the vectors is a courtesy to the semantic phase: a commit LanceDB refuses leaves them used once."""
    files = _tree(tmp_path / "tree")
    with make_engine(tmp_path / "data", tmp_path / "tree", settings=WAITING, index=False) as engine:
        _keyword_phase_only(engine, monkeypatch)

        def refused(*args, **kwargs):
            raise RuntimeError("Commit conflict for version 12")

        monkeypatch.setattr(engine.store.writes, "set_vectors", refused)
        response = engine.run(SearchParams("what does a glacier leave in the valley", limit=3))
        assert response.results[0].path == str(files[3])
        assert response.results[0].signals["meaning"] == "on demand"
        assert response.fusion["on_demand"]["kept"] == 0
        assert response.fusion["on_demand"]["why_not_kept"] == "the index refused them"


def test_a_file_indexed_again_while_its_chunks_were_embedded_keeps_its_new_text(tmp_path, monkeypatch, make_engine):
    """Fault injection (issue 42): the file is edited and indexed again after the search read its chunks and
    before it takes the writer lock. The vectors of the old text are not written back over the new text."""
    files = _tree(tmp_path / "tree")
    glacier = files[3]
    with make_engine(tmp_path / "data", tmp_path / "tree", settings=WAITING, index=False) as engine:
        _keyword_phase_only(engine, monkeypatch)
        old = texts(engine, glacier)
        writer = engine.on_demand.writer

        def edited_then_writer():  # between the read and the write: the file changes and is indexed again
            glacier.write_text("Field notes on a glacier: crevasse, serac and firn above the moraine.\n", encoding="utf-8")
            _keyword_phase_only(engine, monkeypatch)
            return writer()

        monkeypatch.setattr(engine.on_demand, "writer", edited_then_writer)
        response = engine.run(SearchParams("what does a glacier leave in the valley", limit=3))
        now = texts(engine, glacier)
        assert any("crevasse, serac and firn" in text for text in now)
        assert not set(now) & set(old)  # no stale row
        assert response.fusion["on_demand"]["embedded"] >= 1
        assert response.fusion["on_demand"]["why_not_kept"] == "their files changed while they were embedded"
        monkeypatch.setattr(engine.on_demand, "writer", writer)
        assert engine.run(SearchParams("serac firn crevasse", limit=1)).results[0].path == str(glacier)
        engine.index()  # the semantic phase embeds the new text, and the file is whole
        assert texts(engine, glacier) == now and catalog_row(engine, glacier).status == "indexed"
