"""The command line, driven as a user or a script would: real processes, --json output."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.corpus import build_corpus

pytestmark = pytest.mark.slow  # every command is a real process


@pytest.fixture(scope="module")
def indexed_cli(tmp_path_factory, cli):
    base = tmp_path_factory.mktemp("cli")
    files = build_corpus(base / "tree")
    data = base / "data"
    cli.run(data, "config", "set", "embedding.model", "minilm")
    cli.run(data, "add", base / "tree")
    out = cli.run(data, "index", "--json")
    return data, files, json.loads(out.stdout)


def test_index_status_queue_retry(indexed_cli, cli):
    data, files, summary = indexed_cli
    assert summary["failed"] == 1 and summary["files"] >= 18
    status = json.loads(cli.run(data, "status", "--json").stdout)
    assert status["counts"]["failed"] == 1 and status["counts"]["pending"] == 0
    assert status["counts"]["block member"] == 4
    assert "MiniLM" in status["embedding_model"] and "not installed" in status["reranker"]
    queue = json.loads(cli.run(data, "queue", "--json").stdout)
    assert [row["path"] for row in queue["failed"]] == [str(files["corrupt_pdf"])]
    assert "PDF" in queue["failed"][0]["error"]
    assert "requeued 1 failed file" in cli.run(data, "retry").stdout
    assert json.loads(cli.run(data, "queue", "--json").stdout)["pending"][0]["path"] == str(files["corrupt_pdf"])
    cli.run(data, "index", "--quiet")
    assert json.loads(cli.run(data, "status", "--json").stdout)["counts"]["failed"] == 1


def test_search_json_explain_and_scope(indexed_cli, cli):
    data, files, _ = indexed_cli
    out = json.loads(cli.run(data, "search", "submission deadline for the tender", "--json", "--limit", "3").stdout)
    top = out["results"][0]
    assert top["path"] == str(files["docx"])
    assert set(top) >= {"path", "name", "score", "snippet", "chunk_index", "legs"}
    assert any("reranking skipped" in n for n in out["notices"])  # said once, clearly
    scoped = json.loads(cli.run(data, "search", "notes", "--scope", files["percent_dir"].parent, "--json").stdout)
    assert {r["path"] for r in scoped["results"]} == {str(files["percent_dir"])}
    explained = cli.run(data, "search", "tomato blight", "--explain", "--no-rerank").stdout
    assert "dense rank" in explained and "fused" in explained and "fusion: method both" in explained
    outside = json.loads(cli.run(data, "search", "x", "--scope", "/nowhere/else", "--json").stdout)
    assert outside["results"] == [] and "outside every indexed root" in outside["notices"][0]


def test_tree_json_and_batch_queries(indexed_cli, cli, tmp_path):
    data, files, _ = indexed_cli
    tree = json.loads(cli.run(data, "tree", "quarterly revenue figures", "--json").stdout)["tree"]
    assert tree["is_dir"] and tree["children"]
    scores = [c["score"] for c in tree["children"]]
    assert scores == sorted(scores, reverse=True) and tree["score"] == max(scores)
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "invoice IBAN"}\n{"query": "leftpad", "limit": 2}\n', encoding="utf-8")
    answers = json.loads(cli.run(data, "search", "--queries", queries, "--json").stdout)
    assert [a["query"] for a in answers] == ["invoice IBAN", "leftpad"]
    assert len(answers[1]["results"]) <= 2


def test_config_get_set_and_a_corrupt_file(tmp_path, cli):
    data = tmp_path / "data"
    assert json.loads(cli.run(data, "config", "get", "retrieval.hybrid", "--json").stdout) is True
    cli.run(data, "config", "set", "retrieval.hybrid", "false")
    assert json.loads(cli.run(data, "config", "get", "retrieval.hybrid", "--json").stdout) is False
    bad = cli.run(data, "config", "set", "retrieval.hybrid", "maybe", check=False)
    assert bad.returncode == 1 and "true or false" in bad.stderr
    (data / "settings.toml").write_text("[retrieval\nhybrid = ", encoding="utf-8")
    result = cli.run(data, "config", "get", "--json")
    assert json.loads(result.stdout)["retrieval.hybrid"] is False  # the last good settings, not the defaults
    assert "not valid TOML" in result.stderr and "last good" in result.stderr


def test_clear_errors_without_tracebacks(tmp_path, cli):
    data = tmp_path / "data"
    result = cli.run(data, "add", tmp_path / "missing", check=False)
    assert result.returncode == 1 and "is not a folder" in result.stderr and "Traceback" not in result.stderr
    result = cli.run(data, "index", check=False)
    assert result.returncode == 1 and "no roots yet" in result.stderr
    result = cli.run(data, "search", "x" * 10_000, "--json")
    assert "cut to its first" in result.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc arenas")
def test_the_command_caps_malloc_arenas_unless_the_user_set_them():
    """In a fresh interpreter, as the `sensetree` entry point runs it; MALLOC_ARENA_MAX wins."""
    probe = "from sensetree.interfaces.cli import fewer_malloc_arenas; print(fewer_malloc_arenas())"
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    capped = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert capped.stdout.strip() == "True"
    chosen = subprocess.run([sys.executable, "-c", probe], env={**env, "MALLOC_ARENA_MAX": "4"},
                            capture_output=True, text=True, check=True)
    assert chosen.stdout.strip() == "False"
