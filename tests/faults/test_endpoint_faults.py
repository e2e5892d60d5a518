"""Endpoint faults: a real OpenAI-compatible server on loopback that goes down, slows down or misbehaves.

For every fault the same promises hold: no file ends ``failed`` because of the endpoint,
nothing half-written reaches LanceDB (each file has all of its chunks), a changed file's new
text is findable by keyword while its vectors wait (status ``keyword``), indexing resumes by
itself once the endpoint is back, and search keeps answering (keywords only, with a notice,
while a query cannot be embedded). The sense endpoint falls back to the
excerpt; the chat endpoint gives the user a clear error, never a traceback.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from sensetree.chat import Agent, ChatError
from sensetree.engine import Engine
from sensetree.ingest.indexer import IndexingPaused
from sensetree.models.llm import ChatClient
from tests.support.endpoint_server import EndpointServer
from tests.support.realtree import snapshot
from tests.support.waiting import wait_for
from sensetree.operations import IndexParams, SearchParams, TreeParams
from sensetree.operations import SenseParams, SetParams, StatusParams
from tests.support.index import embedded_chunks, stored_chunks, table_rows

pytestmark = pytest.mark.slow  # a fault suite

TOPICS = {
    "reactor.txt": "The zorblat reactor manual explains coolant pressure limits for the prototype. ",
    "dumplings.txt": "Grandmother's recipe for plum dumplings needs flour, eggs, plums and cinnamon. ",
    "regatta.txt": "Minutes of the rowing club meeting: the regatta moves to the second Sunday of June. ",
    "fence.txt": "Invoice 2026-113 for repairing the garden fence, payable within thirty days. ",
    "comet.txt": "Observation log: the comet was visible low on the western horizon after sunset. ",
    "tram.txt": "The city council approved the new tram line through the harbour district. ",
}
REVISED = "Revised edition with the corrected figures. "


@pytest.fixture
def server():
    endpoint = EndpointServer()
    yield endpoint
    endpoint.stop()


def topics(prefix: str = "", repeat: int = 8) -> dict[str, str]:
    """Each file is a few chunks long (chunk_size 300), so one flush takes several embedding calls."""
    return {name: (prefix + text) * repeat for name, text in TOPICS.items()}


@pytest.fixture
def endpoint_engine(tmp_path, server, write_tree, make_engine):
    """Opens an engine over the topics that embeds through the endpoint, ``batch_size`` chunks a call."""
    def open_engine(batch_size: int = 4) -> Engine:
        write_tree(tmp_path / "tree", topics())
        settings = {"embedding.base_url": server.url, "indexing.chunk_size": 300, "indexing.overlap": 50,
                    "indexing.batch_size": batch_size, "retrieval.rerank": False}
        return make_engine(tmp_path / "data", tmp_path / "tree", model="test-embed", settings=settings, index=False)
    return open_engine


def assert_whole(engine: Engine) -> dict:
    """Nothing half-written: every row, pending ones included, has exactly chunks 0..n-1 in LanceDB."""
    statuses = snapshot(engine)
    rows = table_rows(engine, "path", "chunk_index")
    for path, (_, chunks) in statuses.items():
        assert sorted(r["chunk_index"] for r in rows if r["path"] == path) == list(range(chunks)), path
    assert not [p for p, (status, _) in statuses.items() if status == "failed"], "a file failed because of the endpoint"
    return statuses


def first_chunk(engine: Engine, name: str) -> str:
    return stored_chunks(engine, os.path.join(engine.roots()[0], name))[0]["text"]


def assert_keywords_only(engine: Engine, query: str = "regatta", expected: str = "regatta.txt") -> None:
    response = engine.run(SearchParams(query))
    assert any("keyword" in n for n in response.notices), response.notices
    assert response.results and response.results[0].name == expected
    assert response.results[0].legs == ["bm25"]
    tree = engine.run(TreeParams(query))
    node, notices = tree.tree, tree.notices
    assert node is None and any("meaning tree" in n for n in notices)


def assert_meaning_search(engine: Engine) -> None:
    response = engine.run(SearchParams("rowing club regatta"))
    assert not response.notices and response.results[0].name == "regatta.txt"
    assert "dense" in response.results[0].legs


# the embedding endpoint ---------------------------------------------------------------
def test_a_long_outage_in_watch_mode_resumes_by_itself(tmp_path, server, endpoint_engine):
    """Down for 15 s (a compressed "minutes"): the watcher waits, search answers by keywords, then it all resumes."""
    with endpoint_engine() as engine:
        engine.index()
    server.stop()
    tree = tmp_path / "tree"
    for name in ("reactor.txt", "dumplings.txt", "regatta.txt"):
        (tree / name).write_text((REVISED + TOPICS[name]) * 8, encoding="utf-8")
    (tree / "new.txt").write_text("A brand new note about the lighthouse keeper's logbook. " * 8, encoding="utf-8")

    watcher, reader = Engine(tmp_path / "data"), Engine(tmp_path / "data")  # as two processes would
    paused: list[str] = []
    stop = threading.Event()
    worker = threading.Thread(target=watcher.run, args=(IndexParams(watch=True),), kwargs={
        "stop": stop, "on_progress": lambda p: getattr(p, "paused", "") and paused.append(p.paused)})
    worker.start()
    try:
        outage_ends = time.monotonic() + 15
        edited_during_outage = False
        while time.monotonic() < outage_ends:
            assert worker.is_alive(), "the watcher gave up while the endpoint was down"
            assert_keywords_only(reader)
            statuses = assert_whole(reader)
            assert sum(status in ("pending", "keyword") for status, _ in statuses.values()) >= 4  # vectors wait
            if not edited_during_outage and time.monotonic() > outage_ends - 8:
                (tree / "fence.txt").write_text((REVISED + TOPICS["fence.txt"]) * 8, encoding="utf-8")
                edited_during_outage = True
            time.sleep(2)
        assert paused and "unreachable" in paused[0]
        server.start()  # the same port, as a restarted Ollama would be

        def all_current() -> bool:
            rows = list(reader.catalog.files.all())
            return (len(rows) == len(TOPICS) + 1 and all(r.status == "indexed" for r in rows)
                    and "Revised edition" in first_chunk(reader, "fence.txt"))

        assert wait_for(all_current, 120), reader.catalog.files.counts()
        assert_whole(reader)
        assert all("Revised edition" in first_chunk(reader, n) for n in ("reactor.txt", "dumplings.txt", "regatta.txt"))
        assert_meaning_search(reader)
    finally:
        stop.set()
        worker.join(60)
        watcher.close()
        reader.close()
    assert not worker.is_alive()


def test_keyword_search_never_waits_for_an_endpoint_down_at_the_first_run(tmp_path, server, write_tree, make_engine):
    """Issue 42: the endpoint refuses connections from the first run on (no table yet, no vector size known):
    every file is stored for keyword search all the same while the semantic phase says why it waits; when the
    endpoint is back, serving another size than the one the table started with (768-d), the vectors fill in."""
    write_tree(tmp_path / "tree", topics())
    server.stop()
    settings = {"embedding.base_url": server.url, "retrieval.rerank": False}
    with make_engine(tmp_path / "data", tmp_path / "tree", model="test-embed", settings=settings, index=False) as engine:
        told: list[str] = []  # what `status` said while the semantic phase waited

        def waiting(progress) -> None:
            if progress.paused and not told:
                told.append(engine.run(StatusParams()).phases.meaning)

        with pytest.raises(IndexingPaused, match="unreachable"):
            engine.index(on_update=waiting, max_endpoint_wait=2)
        assert told and "unreachable" in told[0] and "retrying" in told[0]
        assert all(status == "keyword" for status, _ in assert_whole(engine).values())
        assert_keywords_only(engine)
        with Engine(tmp_path / "data") as other:  # another process's `status`, after the run gave up
            assert "unreachable" in other.run(StatusParams()).phases.meaning
        server.fail("wrong_dim")
        server.start()
        assert engine.index(max_endpoint_wait=10).failed == 0
        assert all(status == "indexed" for status, _ in assert_whole(engine).values())
        assert_meaning_search(engine)
        assert "waiting" not in engine.run(StatusParams()).phases.meaning


def test_max_endpoint_wait_pauses_with_everything_pending(tmp_path, server, endpoint_engine, write_tree, cli):
    with endpoint_engine() as engine:
        engine.index()
        assert_whole(engine)
        server.stop()
        write_tree(tmp_path / "tree", topics(prefix=REVISED))
        with pytest.raises(IndexingPaused, match="files stay pending"):
            engine.index(max_endpoint_wait=2)  # the embedder is loaded: the batch waits, then pauses
    with Engine(tmp_path / "data") as cold:  # a new process: the endpoint is down before its first probe
        with pytest.raises(IndexingPaused, match="files stay pending"):
            cold.index(max_endpoint_wait=2)
        statuses = assert_whole(cold)
        assert all(status == "keyword" for status, _ in statuses.values())  # the text is in, vectors wait
        assert "Revised" in first_chunk(cold, "tram.txt")  # the new text is findable by keyword at once
        assert_keywords_only(cold)
        cold.run(SetParams("indexing.endpoint_wait", 2.0))
    result = cli.invoke(tmp_path / "data", "index", "--quiet")
    assert result.exit_code == 3 and not isinstance(result.exception, Exception), result.output
    assert "files stay pending" in " ".join(result.output.split())

    server.start()
    with Engine(tmp_path / "data") as engine:
        progress = engine.index()
        assert progress.failed == 0 and progress.semantic == len(TOPICS) and progress.embedding.count > 0
        assert_whole(engine)
        assert "Revised" in first_chunk(engine, "tram.txt")


@pytest.mark.parametrize("mode", ["500", "429", "malformed", "drop", "wrong_dim"])
def test_a_fault_in_the_middle_of_a_batch_writes_nothing_and_heals(tmp_path, server, mode, endpoint_engine, write_tree):
    """The third embedding call of a run fails until the endpoint is fixed; meanwhile the index keeps its old state."""
    with endpoint_engine() as engine:
        engine.index()
        write_tree(tmp_path / "tree", topics(prefix=REVISED))
        server.fail(mode, after=2)
        calls = len(server.calls)
        errors: list[BaseException] = []

        def run() -> None:
            try:
                engine.index(max_endpoint_wait=120)
            except BaseException as exc:  # reported by the assertions below
                errors.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        assert wait_for(lambda: sum(m == mode for _, _, m in server.calls[calls:]) >= 3, 60), server.calls[calls:]
        statuses = assert_whole(engine)  # the calls before the fault may have finished a file or two
        assert all(status in ("keyword", "indexed") for status, _ in statuses.values())
        assert sum(status == "keyword" for status, _ in statuses.values()) >= len(TOPICS) // 2
        assert all("Revised" in first_chunk(engine, name) for name in TOPICS)
        assert_keywords_only(engine)
        server.fail("ok", times=0)  # fixed
        worker.join(90)
        assert not worker.is_alive() and not errors, errors
        assert all(status == "indexed" for status, _ in assert_whole(engine).values())
        assert all("Revised" in first_chunk(engine, name) for name in TOPICS)
        assert_meaning_search(engine)


def test_an_endpoint_that_swapped_models_is_refused_before_anything_is_written(tmp_path, server, endpoint_engine,
                                                                                   write_tree):
    """A new process meets the endpoint serving 768-d vectors under the same model name."""
    with endpoint_engine() as engine:
        engine.index()
        before = assert_whole(engine)
    write_tree(tmp_path / "tree", topics(prefix=REVISED))
    server.fail("wrong_dim")
    with Engine(tmp_path / "data") as cold:
        with pytest.raises(IndexingPaused, match="768-d vectors but the index holds 384-d"):
            cold.index(max_endpoint_wait=2)
        statuses = assert_whole(cold)
        assert statuses.keys() == before.keys() and all(status == "keyword" for status, _ in statuses.values())
        assert_keywords_only(cold)
        server.fail("ok", times=0)  # the right model again
        assert cold.index().failed == 0
        assert all(status == "indexed" for status, _ in assert_whole(cold).values())
        assert_meaning_search(cold)


def test_retry_after_is_honoured(tmp_path, server, endpoint_engine):
    with endpoint_engine() as engine:
        assert engine.embedder.dimension == 384  # probed while healthy
        server.retry_after = "3"  # without it the first retry comes after 1 s
        server.fail("429", times=1)
        progress = engine.index(max_endpoint_wait=60)
        assert progress.failed == 0
        refused, retried = [t for t, path, _ in server.calls if path.endswith("/embeddings")][1:3]
        assert retried - refused >= 2.5
        assert all(status == "indexed" for status, _ in assert_whole(engine).values())


def test_a_slow_endpoint_indexes_everything(tmp_path, server, write_tree, make_engine):
    """5 s per call (one batch, two queries side by side): slow, but within the client's timeout."""
    write_tree(tmp_path / "tree", {name: TOPICS[name] for name in ("reactor.txt", "regatta.txt")})
    settings = {"embedding.base_url": server.url, "embedding.dimensions": 384,  # no probe: fewer slow calls
                "retrieval.rerank": False}
    with make_engine(tmp_path / "data", tmp_path / "tree", model="test-embed", settings=settings,
                     index=False) as engine:
        server.delay = 5
        indexing = threading.Thread(target=engine.index)
        indexing.start()
        assert wait_for(lambda: len(server.calls) >= 1, 40)  # the batch is on its way
        with Engine(tmp_path / "data") as reader:
            response = reader.run(SearchParams("rowing club"))  # waits for its slow query embedding, then answers
            assert not response.notices
        indexing.join(60)
        assert not indexing.is_alive()
        assert all(status == "indexed" for status, _ in assert_whole(engine).values())
        assert engine.run(SearchParams("rowing club regatta")).results[0].name == "regatta.txt"


def test_meaning_on_demand_keeps_its_budget_with_a_slow_endpoint(tmp_path, server, write_tree, make_engine):
    """3 s per call (issue 42): a new process's search answers within the budget plus its own query's embedding,
    however slow the first model call of meaning on demand; what the model finishes late is kept after the answer."""
    delay, budget = 3.0, 0.5
    write_tree(tmp_path / "tree", topics())
    settings = {"embedding.base_url": server.url, "embedding.dimensions": 384, "retrieval.rerank": False,
                "retrieval.spelling": "off", "retrieval.on_demand_seconds": budget}
    with make_engine(tmp_path / "data", tmp_path / "tree", model="test-embed", settings=settings, index=False) as engine:
        stop = threading.Event()  # the keyword phase only: the vectors wait
        engine.index(on_update=lambda p: stop.set() if p.phase == "semantic" else None, stop=stop)
    before = embedded_chunks(engine)
    server.delay = delay
    with Engine(tmp_path / "data") as cold:
        started = time.monotonic()
        response = cold.run(SearchParams("rowing club regatta"))
        wall = time.monotonic() - started
        report = response.fusion["on_demand"]
        assert response.results[0].name == "regatta.txt" and report["wanted"] > 0
        assert response.timings_ms["dense_ms"] >= delay * 1000  # the query's own embedding
        assert response.timings_ms["complete_ms"] < (budget + 0.3) * 1000, response.timings_ms
        assert wall < delay + budget + 2.0, (wall, response.timings_ms)  # the rest of the search, on a busy machine
        assert report["embedded"] == 0 and report["why_not_kept"] == "the search answered before they were stored"
        assert wait_for(lambda: embedded_chunks(cold) > before, 4 * delay)  # kept late


def test_a_hung_endpoint_does_not_hang_search(tmp_path, server, endpoint_engine):
    """It accepts the connection and never answers: a search waits 15 s at most, then answers by keywords."""
    with endpoint_engine() as warm:
        warm.index()
        server.delay = 60
        with Engine(tmp_path / "data") as cold, ThreadPoolExecutor(2) as pool:  # cold: the dimension probe hangs
            started = time.monotonic()
            responses = list(pool.map(lambda engine: engine.run(SearchParams("regatta")), (warm, cold)))
            assert time.monotonic() - started < 60  # not the 120 s an indexing call may take
        for response in responses:
            assert any("did not answer within 15 s" in n for n in response.notices), response.notices
            assert response.results[0].name == "regatta.txt" and response.results[0].legs == ["bm25"]


# the sense endpoint -------------------------------------------------------------------
@pytest.fixture
def sense_engine(tmp_path, server, write_tree, make_engine):
    """Opens an engine over the topics (MiniLM) whose senses come from the endpoint."""
    def open_engine(timeout: float = 60.0) -> Engine:
        write_tree(tmp_path / "tree", topics(repeat=3))
        settings = {"sense.base_url": server.url, "sense.model": "test-model", "sense.timeout": timeout,
                    "retrieval.rerank": False}
        return make_engine(tmp_path / "data", tmp_path / "tree", settings=settings, index=False)
    return open_engine


@pytest.mark.parametrize("fault", ["down", "500", "429", "malformed", "drop", "slow"])
def test_a_failing_sense_endpoint_falls_back_to_the_excerpt(tmp_path, server, fault, sense_engine):
    with sense_engine(timeout=1.0) as engine:
        if fault == "down":
            server.stop()
        elif fault == "slow":
            server.delay = 4  # past sense.timeout
        else:
            server.fail(fault)
        progress = engine.index()
        assert progress.failed == 0 and progress.semantic == len(TOPICS) and progress.embedding.count > 0
        statuses = assert_whole(engine)
        assert all(status == "indexed" for status, _ in statuses.values())
        assert {engine.run(SenseParams(path)).source for path in statuses} == {"excerpt"}
        assert len(server.calls) <= 2, "after a failure the endpoint is left alone (two files are prepared at once)"
        assert engine.run(SearchParams("rowing club regatta")).results[0].name == "regatta.txt"


def test_a_slow_sense_endpoint_within_its_timeout_writes_senses(tmp_path, server, sense_engine):
    with sense_engine() as engine:
        for name in list(TOPICS)[2:]:
            (tmp_path / "tree" / name).unlink()
        server.delay = 5  # two files, sensed side by side
        progress = engine.index()
        assert progress.failed == 0
        statuses = assert_whole(engine)
        assert len(statuses) == 2 and {engine.run(SenseParams(p)).source for p in statuses} == {"llm"}


# the chat endpoint --------------------------------------------------------------------
@pytest.fixture(scope="module")
def chat_index(tmp_path_factory, write_tree, make_engine):
    base = tmp_path_factory.mktemp("chat")
    write_tree(base / "tree", topics(repeat=2))
    engine = make_engine(base / "data", base / "tree", settings={"retrieval.rerank": False})
    yield engine
    engine.close()


def test_a_healthy_chat_endpoint_answers(chat_index, server):
    answer = Agent(chat_index, ChatClient(server.url, "test-model", timeout=30)).answer("When is the regatta?")
    assert "zorblat" in answer.text and answer.sources


@pytest.mark.parametrize("fault,message", [("down", "unreachable"), ("500", "answered 500"),
                                           ("malformed", "malformed"), ("drop", "unreachable"),
                                           ("slow", "did not answer")])
def test_a_failing_chat_endpoint_gives_a_clear_error(chat_index, server, fault, message, cli):
    if fault == "down":
        server.stop()
    elif fault == "slow":
        server.delay = 4
    else:
        server.fail(fault)
    client = ChatClient(server.url, "test-model", timeout=1.5)
    with pytest.raises(ChatError, match=message):
        Agent(chat_index, client).answer("When is the regatta?")
    chat_index.run(SetParams("chat.base_url", server.url))
    chat_index.run(SetParams("chat.model", "test-model"))
    chat_index.run(SetParams("chat.timeout", 1.5))
    try:
        result = cli.invoke(chat_index.data_dir, "ask", "When is the regatta?")
    finally:
        chat_index.run(SetParams("chat.base_url", ""))
    assert result.exit_code == 1 and not isinstance(result.exception, Exception), result.output
    assert message in " ".join(result.output.split())  # rich wraps long lines


def test_the_chat_endpoint_going_down_mid_conversation(chat_index, server):
    agent = Agent(chat_index, ChatClient(server.url, "test-model", timeout=30))
    assert agent.answer("When is the regatta?").text
    server.stop()
    with pytest.raises(ChatError, match="unreachable"):
        agent.answer("And where?")
    server.start()
    assert agent.answer("And where?").text  # the same conversation carries on
