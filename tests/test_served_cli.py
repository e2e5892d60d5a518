"""`search`, `tree` and `ask` answered by a running `sensetree serve`, the same as in-process.

The server is a real process (tests/support/serve_process.py) on a small indexed folder; the commands
run as processes, as a user runs them. That the service answered, not the engine in the command, is
read from the command itself: it never imported ``sensetree.engine``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sensetree.interfaces import served
from sensetree.models.local_llm import SMOLLM2, RUNTIMES, LocalServer, model_file, runtime_installed
from tests.conftest import _environment
from tests.support.serve_process import Served

# Runs the command as `sensetree` does, then says on stderr whether the engine was loaded in it.
PROBE = ("import sys\nfrom sensetree.interfaces.cli import main\nsys.argv[0] = 'sensetree'\ntry:\n    main()\n"
         "finally:\n    sys.stderr.write('\\nENGINE LOADED\\n' if 'sensetree.engine' in sys.modules else '\\nNO ENGINE\\n')")


def sensetree(data, *args: str, in_process: bool = False) -> tuple[int, str, str, bool]:
    env = {**_environment(data), "SENSETREE_IN_PROCESS": "1" if in_process else "0"}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, timeout=600)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr, done.stderr.rstrip().endswith("ENGINE LOADED")


def without_timings(answer: dict) -> dict:
    return {k: v for k, v in answer.items() if k != "timings_ms"}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, make_engine, write_tree):
    base = tmp_path_factory.mktemp("served")
    write_tree(base / "tree", {
        "harbour/opening.md": "The harbour opens at six in the morning; the ferry to the island leaves at seven.",
        "harbour/tides.txt": "Tide tables for the harbour: high water at noon, low water in the evening.",
        "kitchen/bread.txt": "A recipe for sourdough bread with rye flour and a long cold proof.",
    })
    engine = make_engine(base / "data", base / "tree", settings={"retrieval.rerank": False})
    engine.close()
    return base / "data", base / "tree"


@pytest.mark.slow  # starts `sensetree serve` and runs the CLI as processes
def test_search_tree_and_ask_are_answered_by_the_running_service(indexed):
    data, tree = indexed
    queries = [("search", "sourdough", "--json", "--type", "txt", "--scope", str(tree / "kitchen")),
               ("tree", "tides of the harbour", "--json"),
               ("queue", "--json"), ("roots", "--json"), ("sense", str(tree / "kitchen/bread.txt"), "--json")]
    local = {q: sensetree(data, *q, in_process=True) for q in queries}
    assert all(code == 0 and loaded for code, _, _, loaded in local.values())
    text_local = sensetree(data, "search", "ferry", "--explain", in_process=True)

    assert _set(data, "chat.base_url", "http://127.0.0.1:9/v1")  # for the assistant below: nothing listens there
    server = Served(data)
    try:
        server.wait_indexed()
        assert served.running(data) == served.Server(server.base, server.token, server.process.pid)
        code, out, err, loaded = sensetree(data, "service", "status", "--json")
        status = json.loads(out)
        assert code == 0 and status["running"] and status["pid"] == server.process.pid and not loaded, err
        assert status["link"] == server.url
        for query in queries:
            code, out, err, loaded = sensetree(data, *query)
            assert code == 0 and not loaded, err
            expected = json.loads(local[query][1])
            assert without_timings(json.loads(out)) == without_timings(expected)
        code, out, err, loaded = sensetree(data, "search", "ferry", "--explain")
        assert code == 0 and not loaded and out == text_local[1]
        code, out, err, loaded = sensetree(data, "status", "--json")
        assert code == 0 and not loaded and json.loads(out)["roots"] == [str(tree)] and "indexing" not in json.loads(out), err

        # a change the server makes (it holds the writer lock): a root added, then removed
        extra = data.parent / "extra"
        extra.mkdir(exist_ok=True)
        code, out, err, loaded = sensetree(data, "add", str(extra))
        assert code == 0 and not loaded and f"added root {extra}" in out, err
        code, out, err, loaded = sensetree(data, "remove", str(extra))
        assert code == 0 and not loaded and f"removed root {extra}" in out, err
        code, out, err, loaded = sensetree(data, "config", "get", "retrieval.rerank", "--json")
        assert code == 0 and not loaded and json.loads(out) is False, err
        code, out, err, loaded = sensetree(data, "config", "set", "retrieval.rerank", "false")
        assert code == 0 and not loaded and "retrieval.rerank = false" in out, err

        # a flag the API lacks (--queries) is answered in-process, the same way
        batch = data.parent / "queries.jsonl"
        batch.write_text('"ferry"\n', encoding="utf-8")
        code, out, _, loaded = sensetree(data, "search", "--queries", str(batch), "--json")
        assert code == 0 and loaded and json.loads(out)[0]["results"]

        # the assistant: the server's chat endpoint is down, and the command says why
        code, out, err, loaded = sensetree(data, "ask", "when does the ferry leave?")
        assert code == 1 and "unreachable" in err and not loaded
    finally:
        server.stop()
        _set(data, "chat.base_url", "")
    assert not (data / served.SERVER_FILE).exists()  # withdrawn on a clean stop: the next command runs in-process


def _set(data, key: str, value: str) -> bool:
    done = subprocess.run([sys.executable, "-m", "sensetree.interfaces.cli", "config", "set", key, value],
                          capture_output=True, text=True, env=_environment(data), timeout=120)
    return done.returncode == 0


@pytest.mark.slow  # a real model on a llama.cpp server, behind `sensetree serve`
def test_ask_streams_from_the_service(indexed, tmp_path_factory):
    runtime = next((r for r in RUNTIMES if runtime_installed(r)), None)
    gguf = model_file(SMOLLM2.name, tmp_path_factory.mktemp("models")) if runtime else None
    if gguf is None:
        pytest.skip("no llama.cpp runtime or SmolLM2 installed (make install-dev)")
    data, _ = indexed
    model = LocalServer(gguf, SMOLLM2.name, RUNTIMES[runtime], n_ctx=4096, threads=2).start()
    assert _set(data, "chat.base_url", model.url) and _set(data, "chat.model", SMOLLM2.name)
    server = Served(data)
    try:
        code, out, err, loaded = sensetree(data, "ask", "When does the ferry leave?", "--json")
        assert code == 0 and not loaded, err
        answer = json.loads(out)
        assert answer["answer"] and answer["sources"] and set(answer) >= {"steps", "citations", "stats"}
        code, out, err, loaded = sensetree(data, "ask", "When does the ferry leave?")
        assert code == 0 and not loaded and "Sources" in out and "opening.md" in out
    finally:
        server.stop()
        model.stop()
        _set(data, "chat.base_url", "")
        _set(data, "chat.model", "")
