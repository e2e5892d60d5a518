"""Concurrency: readers keep answering while a writer works, and two writers never share a data dir.

A large re-index runs in one thread while eight others search, ask for meaning trees and chat;
another process changes the model and rebuilds everything under a reader's feet; two
``sensetree index`` processes start at once; ``index --watch`` runs while other processes search
and ask for the status; a writer is killed while it holds the lock. Latencies are recorded and
only held to a generous bound: the machine running the tests may be busy.
"""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sensetree.chat import Agent
from sensetree.engine import Engine
from sensetree.models.llm import ChatClient
from tests.support.endpoint_server import EndpointServer
from tests.support.realtree import TOPICS, WORDS, paragraph, snapshot
from tests.support.waiting import wait_for
from sensetree.operations import ReindexParams, SearchParams, TreeParams
from tests.support.index import stores

pytestmark = pytest.mark.slow  # a fault suite

FILES = 150
READERS = 8
MIN_REQUESTS = 200
LATENCY_BOUND_S = 15.0  # generous: two shared cores; a healthy run answers in well under a second


def notes(files: int, seed: int) -> dict[str, str]:
    """Plain-text and Markdown notes, one or two chunks each."""
    rng = random.Random(seed)
    return {f"area{i % 5}/note{i:04d}.{'md' if i % 2 else 'txt'}":
            "\n\n".join(paragraph(rng, rng.randint(3, 6)) for _ in range(rng.randint(1, 3))) for i in range(files)}


def queries(seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(TOPICS)} {rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(50)]


def all_indexed(data: Path, files: int = FILES) -> dict:
    with Engine(data) as engine:
        statuses = snapshot(engine)
    assert len(statuses) == files and {status for status, _ in statuses.values()} == {"indexed"}
    return statuses


def indexed_count(data: Path) -> int:
    with Engine(data) as probe:
        return probe.catalog.files.counts()["indexed"]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, write_tree, make_engine):
    """A tree of 250 notes, indexed once with MiniLM; each test requeues what it needs."""
    base = tmp_path_factory.mktemp("concurrency")
    tree, data = base / "tree", base / "data"
    write_tree(tree, notes(FILES, seed=1))
    with make_engine(data, tree, settings={"retrieval.rerank": False}, index=False) as engine:
        assert engine.index().failed == 0
    return tree, data


# (a) readers during a large re-index --------------------------------------------------------
def test_searches_trees_and_chat_answer_during_a_large_reindex(indexed, write_tree):
    tree, data = indexed
    write_tree(tree, notes(FILES, seed=2))  # every file changes: all of them are embedded and written again
    chat = EndpointServer()
    records: list[tuple[str, float, bool]] = []  # (kind, seconds, while the writer was running)
    with Engine(data) as engine, Engine(data) as reader:  # the writer's own engine (as in serve) and another
        with ThreadPoolExecutor(READERS + 1) as pool:
            writer = pool.submit(engine.index)

            def read(worker: int) -> None:
                asked = queries(worker)
                agent = Agent(reader, ChatClient(chat.url, "test-model", timeout=60))  # a conversation of its own
                n = 0
                while not writer.done() or len(records) < MIN_REQUESTS:
                    query, target = asked[n % len(asked)], (engine, reader)[n % 2]
                    started = time.perf_counter()
                    if n % 25 == 24:
                        kind, answer = "chat", agent.answer(query)
                        assert answer.text and answer.sources, [(s.kind, s.text) for s in answer.steps]
                    elif n % 5 == 4:
                        tree = target.run(TreeParams(query))
                        kind, node, notices = "tree", tree.tree, tree.notices
                        assert node is not None, notices
                    else:
                        kind, response = "search", target.run(SearchParams(query))
                        assert response.results and not response.notices, response.notices
                    records.append((kind, time.perf_counter() - started, not writer.done()))
                    n += 1
                    time.sleep(0.7)  # eight people searching at a steady clip: the writer keeps some of the two cores

            for future in [pool.submit(read, worker) for worker in range(READERS)]:
                future.result()  # re-raises what a reader met
            progress = writer.result()
    chat.stop()
    assert progress.failed == 0 and progress.files_done == FILES
    all_indexed(data)
    kinds = {kind: [s for k, s, _ in records if k == kind] for kind in ("search", "tree", "chat")}
    during = sum(overlapped for _, _, overlapped in records)
    assert len(records) >= MIN_REQUESTS and all(kinds.values())
    assert during >= MIN_REQUESTS // 2, "most requests should overlap the re-index"
    assert max(s for _, s, _ in records) < LATENCY_BOUND_S
    print(f"\n{len(records)} requests ({during} during the re-index): "
          + ", ".join(f"{kind} n={len(v)} p50={statistics.median(v):.3f}s max={max(v):.3f}s" for kind, v in kinds.items()))


def test_a_model_change_in_another_process_never_breaks_a_reader(tmp_path, write_tree, make_engine):
    """The other process wipes the vectors and rebuilds them with E5 while this one keeps searching."""
    tree, data = tmp_path / "tree", tmp_path / "data"
    write_tree(tree, notes(50, seed=3))
    make_engine(data, tree, settings={"retrieval.rerank": False}).close()
    with Engine(data) as reader:
        assert reader.run(SearchParams("harbour survey")).results
        rebuild = subprocess.Popen(
            f"{sys.executable} -m sensetree.interfaces.cli config set embedding.model e5 --yes --data-dir {data} && "
            f"{sys.executable} -m sensetree.interfaces.cli index --quiet --data-dir {data}",
            shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        answered = 0
        while rebuild.poll() is None:
            for query in queries(7)[:5]:
                stored = reader.store.table.count()  # rows come back (text first) soon after the wipe: look before
                response = reader.run(SearchParams(query))  # stale settings: keywords only, with a notice, once the model changed
                # between the wipe and the first rows back: no result, but the files waiting (coverage)
                assert response.results or response.notices or response.coverage or stored == 0
                reader.run(TreeParams(query))
                answered += 1
            time.sleep(0.2)
        _, err = rebuild.communicate()
        assert rebuild.returncode == 0, err
        assert answered > 0 and "Traceback" not in err
    all_indexed(data, 50)
    with Engine(data) as fresh:
        response = fresh.run(SearchParams("harbour survey"))
        assert response.results and not response.notices and "dense" in response.results[0].legs


# (b) two writers -------------------------------------------------------------------------
def test_two_index_processes_at_once_one_writer_wins(indexed, cli):
    tree, data = indexed
    with Engine(data) as engine:
        assert engine.run(ReindexParams(str(tree))).requeued == FILES
    first, second = cli.start(data, "index", "--json"), cli.start(data, "index", "--json")
    outcomes = [(p.wait(timeout=300), *p.communicate()) for p in (first, second)]
    codes = sorted(code for code, _, _ in outcomes)
    assert codes[0] == 0 and codes[1] != 0, outcomes
    (_, won, _), (_, _, refused) = sorted(outcomes, key=lambda o: o[0])
    assert json.loads(won)["files"] == FILES and json.loads(won)["failed"] == 0
    assert "another sensetree process is indexing" in " ".join(refused.split()) and "Traceback" not in refused
    all_indexed(data)


# (c) a watcher and other processes reading ------------------------------------------------
def test_search_and_status_from_other_processes_while_index_watch_runs(indexed, cli):
    tree, data = indexed
    watcher = cli.start(data, "index", "--watch", "--quiet")
    try:
        assert wait_for(lambda: (data / "writer.lock").exists() and indexed_count(data) == FILES, 60)
        rng = random.Random(4)
        for round_ in range(4):
            for i in range(round_ * 15, round_ * 15 + 15):  # the watcher has work while the others read
                path = tree / f"area{i % 5}" / f"note{i:04d}.{'md' if i % 2 else 'txt'}"
                path.write_text(paragraph(rng, 5) + f" Edited in round {round_}.", encoding="utf-8")
            found = cli.run(data, "search", "harbour survey", "--json", check=False)
            assert found.returncode == 0 and "Traceback" not in found.stderr, found.stderr
            assert json.loads(found.stdout)["results"]
            status = cli.run(data, "status", "--json", check=False)
            assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
            assert json.loads(status.stdout)["counts"]["failed"] == 0
        busy = cli.run(data, "index", "--quiet", check=False)
        assert busy.returncode != 0 and "another sensetree process is indexing" in " ".join(busy.stderr.split())
        assert "Traceback" not in busy.stderr
        assert wait_for(lambda: "Edited in round 3" in _first_chunk(data, tree / "area4" / "note0059.md"), 90)
        # the last edits are searchable by keyword first; their vectors follow before the watcher is stopped
        assert wait_for(lambda: indexed_count(data) == FILES, 120)
    finally:
        watcher.send_signal(signal.SIGTERM)
        _, err = watcher.communicate(timeout=60)
    assert watcher.returncode == 0 and "Traceback" not in err, err
    all_indexed(data)


def _first_chunk(data: Path, path: Path) -> str:
    with stores(data) as stored:  # read as it stands, while the watcher writes
        chunks = stored.chunks.queries.chunks_of(os.path.normpath(str(path)))
    return chunks[0]["text"] if chunks else ""


# (d) a writer killed with the lock -------------------------------------------------------
def test_a_writer_killed_holding_the_lock_frees_it(indexed, cli):
    tree, data = indexed
    with Engine(data) as engine:
        engine.run(ReindexParams(str(tree)))
    writer = cli.start(data, "index", "--quiet")
    assert wait_for(lambda: indexed_count(data) >= 20 or writer.poll() is not None, 120)
    assert writer.poll() is None, "the writer finished before it could be killed"
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    left = FILES - indexed_count(data)
    with Engine(data) as engine:
        progress = engine.index()  # no wait for the lock: the kernel dropped it with the process
    assert left > 0 and progress.failed == 0
    assert progress.semantic == FILES and progress.embedding.count > 0  # this run embedded what the killed one left
    all_indexed(data)
