"""Embedding and sense endpoints: prefixes, protocol, and what happens when they misbehave."""

from __future__ import annotations

import json
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sensetree.engine import Engine
from sensetree.ingest.indexer import IndexingPaused, Progress
from sensetree.ingest.pause import recorded_wait
from tests.support.endpoint_server import EndpointServer
from sensetree.operations import SearchParams, SenseParams
from tests.support.index import chunk_count, detail, status_counts, stores, texts

TOPICS = {
    "alpha.txt": "The zorblat reactor manual explains coolant pressure limits for the prototype.",
    "beta.txt": "Grandmother's recipe for plum dumplings needs flour, eggs, plums and cinnamon.",
    "gamma.txt": "Minutes of the rowing club meeting: the regatta moves to the second Sunday of June.",
    "delta.txt": "Invoice 2026-113 for repairing the garden fence, payable within thirty days.",
}


@pytest.fixture
def server():
    endpoint = EndpointServer()
    yield endpoint
    endpoint.stop()


@pytest.fixture
def endpoint_engine(tmp_path, server, write_tree, make_engine):
    """Opens an engine over TOPICS that embeds (and, with ``sense``, writes senses) through the endpoint."""
    def open_engine(model: str = "intfloat/multilingual-e5-small", sense: bool = False) -> Engine:
        write_tree(tmp_path / "tree", {name: text * 3 for name, text in TOPICS.items()})
        settings = {"embedding.base_url": server.url}
        if sense:
            settings |= {"sense.base_url": server.url, "sense.model": "test-model"}
        return make_engine(tmp_path / "data", tmp_path / "tree", model=model, settings=settings, index=False)
    return open_engine


def test_e5_prefixes_on_the_endpoint_path_and_llm_senses(tmp_path, server, endpoint_engine):
    with endpoint_engine(sense=True) as engine:
        engine.index()
        passages = server.embedding_inputs[1:]  # the first call probes the dimension
        assert passages and all(t.startswith("passage: ") for t in passages)
        engine.run(SearchParams("coolant pressure", rerank=False))
        assert server.embedding_inputs[-1] == "query: coolant pressure"

        request = server.chat_requests[0]
        assert request["reasoning_effort"] == "none"
        assert request["messages"][-1]["content"].startswith("File name: ")
        row = detail(engine, tmp_path / "tree" / "alpha.txt")
        chunk0 = row.chunks[0]["text"]
        assert chunk0.startswith("[text] This document is a test file named alpha.txt")
        assert engine.run(SenseParams(row.path)).source == "llm"
        assert any(t.startswith("passage: [text] This document is a test file named alpha.txt") for t in passages), \
            "a written sense says what the chunk does not: the model reads it before chunk 0"
        # the stand-in endpoint's vectors carry no meaning, so the fused order is theirs to make: the keyword
        # leg, which reads the sense in chunk 0, ranks alpha first
        found = engine.run(SearchParams("zorblat", rerank=False)).results
        assert [r.path for r in found if r.bm25_rank == 1] == [row.path]


def test_chunk_0_is_embedded_once_when_its_sense_is_only_its_own_start(server, endpoint_engine):
    with endpoint_engine() as engine:  # no sense endpoint: the sense is the excerpt fallback
        engine.index()
        passages = server.embedding_inputs[1:]
        assert sorted(passages) == sorted(f"passage: {text * 3}" for text in TOPICS.values())
        assert engine.run(SearchParams("plum dumplings", rerank=False)).results[0].path.endswith("beta.txt")


def test_non_e5_endpoint_models_get_no_prefix(tmp_path, server, endpoint_engine):
    with endpoint_engine(model="nomic-embed-text") as engine:
        engine.index()
        assert not any(t.startswith(("passage: ", "query: ")) for t in server.embedding_inputs)


@pytest.mark.slow  # waits out the endpoint's retries and pauses in real time
def test_endpoint_down_pauses_the_queue_and_resumes(tmp_path, server, endpoint_engine):
    with endpoint_engine() as engine:
        engine.index()
        server.stop()
        for name in TOPICS:
            (tmp_path / "tree" / name).write_text(TOPICS[name] + " Revised edition.", encoding="utf-8")
        seen_pause = threading.Event()

        def update(p: Progress) -> None:
            if p.paused:
                seen_pause.set()

        worker = threading.Thread(target=lambda: engine.index(on_update=update, max_endpoint_wait=120))
        worker.start()
        assert seen_pause.wait(30), "the queue should pause while the endpoint is down"
        counts = status_counts(engine)
        # Keyword first: the new text is stored and findable while the vectors wait for the endpoint.
        assert counts["failed"] == 0 and counts["keyword"] == len(TOPICS)
        assert engine.run(SearchParams("Revised edition", rerank=False)).results
        server.start()  # same port
        worker.join(90)
        assert not worker.is_alive()
        counts = status_counts(engine)
        assert counts == {"pending": 0, "keyword": 0, "indexed": len(TOPICS), "failed": 0, "block member": 0}
        assert all("Revised edition" in texts(engine, tmp_path / "tree" / name)[0] for name in TOPICS)


@pytest.mark.slow  # waits out the endpoint's retries and pauses in real time
@pytest.mark.parametrize("mode", ["500", "429", "malformed"])
def test_transient_errors_are_retried_without_failing_files(tmp_path, server, endpoint_engine, mode):
    with endpoint_engine() as engine:
        assert engine.embedder.dimension == 384  # probed while the server is healthy
        server.fail(mode, times=2)
        started = time.monotonic()
        progress = engine.index(max_endpoint_wait=60)
        assert progress.failed == 0 and status_counts(engine)["indexed"] == len(TOPICS)
        assert time.monotonic() - started < 30


@pytest.mark.slow  # waits out the endpoint's retries and pauses in real time
def test_wrong_dimension_is_refused_and_nothing_half_written(tmp_path, server, endpoint_engine):
    with endpoint_engine() as engine:
        engine.index()
        rows_before = chunk_count(engine)
        target = tmp_path / "tree" / "beta.txt"
        target.write_text("A different recipe, for apple strudel.", encoding="utf-8")
        server.fail("wrong_dim")
        with pytest.raises(IndexingPaused, match="dimension"):
            engine.index(max_endpoint_wait=3)
        row = detail(engine, target)
        # The new text is stored (keyword first); no vector of the wrong size is: it waits for a fixed endpoint.
        assert row.status == "keyword" and status_counts(engine)["failed"] == 0
        assert chunk_count(engine) == rows_before
        assert "apple strudel" in row.chunks[0]["text"]
        with stores(engine.data_dir) as stored:  # which chunks have vectors: no operation says
            assert len(stored.chunks.queries.unembedded([str(target)])) == row.chunks_count


@pytest.mark.slow  # waits out the endpoint's retries and pauses in real time
@pytest.mark.parametrize(("mode", "message"), [("401", "API key"), ("404", "no model")])
def test_a_refused_key_or_missing_model_pauses_instead_of_failing_files(tmp_path, server, endpoint_engine, mode,
                                                                        message):
    """A key that expired or a model removed mid-run is the endpoint's problem: every file
    would fail the same way, so the queue pauses with what to fix, and resumes once fixed."""
    with endpoint_engine() as engine:
        server.fail(mode)
        with pytest.raises(IndexingPaused, match=message):
            engine.index(max_endpoint_wait=3)
        counts = status_counts(engine)  # the text is in, findable by keyword while the vectors wait (design §7.2)
        assert counts["failed"] == 0 and counts["keyword"] == len(TOPICS)
        server.fail("ok")
        progress = engine.index(max_endpoint_wait=3)
        assert progress.failed == 0 and status_counts(engine)["indexed"] == len(TOPICS)


def test_search_degrades_to_keywords_when_the_query_cannot_be_embedded(tmp_path, server, endpoint_engine):
    with endpoint_engine() as engine:
        engine.index()
        server.stop()
        response = engine.run(SearchParams("regatta", rerank=False))
        assert any("keyword" in n for n in response.notices)
        assert response.results and response.results[0].name == "gamma.txt"
        assert response.results[0].legs == ["bm25"]


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                    max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.text(), JSON.map(json.dumps),
                 st.fixed_dictionaries({"reason": JSON, "until": JSON}).map(json.dumps)))
def test_a_recorded_wait_of_any_shape_reads_as_words_or_nothing(value):
    """Why the vectors wait (``WAIT_META``) is read back by `status` from the catalog: a damaged or foreign
    value reads as nothing, never as an error."""
    said = recorded_wait(value)
    assert isinstance(said, str)
    assert not said or said == json.loads(value)["reason"]


def test_a_recorded_wait_holds_until_its_retry_is_past():
    now = time.time()
    assert recorded_wait(json.dumps({"reason": "endpoint down; retrying in 4 s", "until": now + 30})) == \
        "endpoint down; retrying in 4 s"
    assert recorded_wait(json.dumps({"reason": "endpoint down; retrying in 4 s", "until": now - 1})) == ""
    assert recorded_wait(json.dumps({"reason": "gave up, files stay pending", "until": None})) == \
        "gave up, files stay pending"
    assert recorded_wait("") == recorded_wait(None) == ""
