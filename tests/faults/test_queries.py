"""Hostile queries and scopes: each gets a sensible answer or a clear error, never a traceback.

Through ``Engine.run`` (search, tree) and the ``sensetree`` command (a real process,
``--json``), over the test corpus indexed once with the fast English model.
"""

from __future__ import annotations

import json
import re
import os

import pytest

from sensetree.engine import Engine
from sensetree.search.types import SearchResponse
from tests.support.corpus import build_corpus
from tests.support.hostile import QUERIES
from sensetree.operations import SearchParams, TreeParams

pytestmark = pytest.mark.slow  # a fault suite


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, make_engine):
    base = tmp_path_factory.mktemp("queries")
    files = build_corpus(base / "tree")
    data = base / "data"
    make_engine(data, base / "tree").close()
    engine = Engine(data)
    yield engine, base / "tree", files
    engine.close()


def _check_response(response: SearchResponse, root, limit: int = 20) -> None:
    assert isinstance(response, SearchResponse)
    assert len(response.results) <= limit
    for result in response.results:
        assert result.path.startswith(str(root)) and os.path.exists(result.path)
        assert 0.0 <= result.score <= 1.0
    assert all(isinstance(n, str) and n for n in response.notices)


@pytest.mark.parametrize("query", list(QUERIES.values()), ids=list(QUERIES))
def test_engine_search_and_tree_answer_any_query(indexed, query):
    engine, root, _ = indexed
    response = engine.run(SearchParams(query))
    _check_response(response, root)
    if not re.sub(r"[\x00-\x1f]", "", query).strip():
        assert response.results == []
    tree = engine.run(TreeParams(query))
    node, notices = tree.tree, tree.notices
    assert all(isinstance(n, str) for n in notices)
    if node is not None:
        assert node.score >= 0 and all(c.name for c in node.children)


def test_long_query_is_cut_with_a_notice(indexed):
    engine, root, files = indexed
    response = engine.run(SearchParams(QUERIES["10k characters"]))
    assert any("cut to its first" in n for n in response.notices)
    assert response.results and response.results[0].path == str(files["docx"])


def test_metacharacters_are_text_not_syntax(indexed):
    """The SQL-looking and FTS-looking queries neither widen nor break the search: a term in quotes
    and operators still finds the document that holds it."""
    engine, _, files = indexed
    for query in ("' OR 1=1 -- invoice IBAN", "invoice AND (IBAN OR", '"invoice IBAN', "invoice% IBAN_"):
        results = engine.run(SearchParams(query, limit=3)).results
        assert results and results[0].path == str(files["email"]), query


@pytest.mark.parametrize("limit", [0, -5, 1, 10**9])
def test_limits_are_clamped(indexed, limit):
    engine, root, _ = indexed
    response = engine.run(SearchParams("invoice", limit=limit))
    _check_response(response, root, limit=100)
    assert 1 <= len(response.results) <= 100
    tree = engine.run(TreeParams("invoice", limit=limit))
    node, _ = tree.tree, tree.notices
    assert node is not None


SCOPES = {
    "missing folder inside a root": (lambda root: root / "no_such_folder", "does not exist"),
    "a file, not a folder": (lambda root: root / "reports" / "q3_revenue.pdf", "is a file"),
    "outside every root": (lambda root: "/nowhere/at/all", "outside every indexed root"),
    "filesystem root": (lambda root: "/", "outside every indexed root"),
    "parent of the root": (lambda root: root / "..", "outside every indexed root"),
    "sibling sharing the prefix": (lambda root: str(root) + "Evil", "outside every indexed root"),
    "windows path": (lambda root: "C:\\Users\\me\\Docs", "outside every indexed root"),
    "nul in the path": (lambda root: str(root / "re\x00ports"), "does not exist"),
    "traversal back in": (lambda root: root / "reports" / ".." / ".." / root.name / "reports", None),
    "percent and underscore": (lambda root: root / "100%_backup", None),
    "quote": (lambda root: root / "O'Brien", None),
    "trailing separator": (lambda root: str(root / "reports") + "/", None),
}


@pytest.mark.parametrize("case", list(SCOPES))
def test_scopes_give_results_under_them_or_say_why_not(indexed, case):
    engine, root, _ = indexed
    make_scope, notice = SCOPES[case]
    scope = str(make_scope(root))
    response = engine.run(SearchParams("notes letter revenue", scope=scope))
    tree = engine.run(TreeParams("notes letter revenue", scope=scope))
    node, tree_notices = tree.tree, tree.notices
    if notice:
        assert response.results == [] and any(notice in n for n in response.notices), response.notices
        assert node is None and any(notice in n for n in tree_notices)
    else:
        folder = os.path.normpath(scope)
        assert response.results and all(r.path.startswith(folder + os.sep) for r in response.results)
        assert node is not None


# --- the command line ---------------------------------------------------------------------------


def test_cli_batch_answers_every_query(indexed, tmp_path, cli):
    engine, _, _ = indexed
    batch = tmp_path / "hostile.jsonl"
    lines = [json.dumps({"query": q}) for q in QUERIES.values() if "\ud800" not in q and "\udce9" not in q]
    lines += [json.dumps({"query": "invoice", "scope": "/nowhere"}), json.dumps({"query": "invoice", "limit": 0}),
              json.dumps("a bare string is a query"), "   "]
    batch.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = cli.run(engine.data_dir, "search", "--queries", str(batch), "--json", check=False, text=False)
    assert result.returncode == 0, result.stderr
    answers = json.loads(result.stdout)
    assert len(answers) == len(lines) - 1
    assert all(isinstance(a["results"], list) and isinstance(a["notices"], list) for a in answers)
    assert any("outside every indexed root" in n for n in answers[-3]["notices"])


@pytest.mark.parametrize("line", [
    '{"query": 5}', '{"query": null}', '{"limit": 3}', '{"query": "x", "limit": "many"}',
    '{"query": "x", "scope": 7}', '[1, 2]', "not json at all", '{"query": "x", "limit": true}',
])
def test_cli_batch_refuses_a_bad_line_with_its_number(indexed, tmp_path, line, cli):
    engine, _, _ = indexed
    batch = tmp_path / "bad.jsonl"
    batch.write_text('{"query": "fine"}\n' + line + "\n", encoding="utf-8")
    result = cli.run(engine.data_dir, "search", "--queries", str(batch), "--json", check=False, text=False)
    assert result.returncode == 1
    assert b"bad.jsonl:2" in result.stderr and b"error:" in result.stderr


def test_cli_batch_file_missing_or_not_text(indexed, tmp_path, cli):
    engine, _, _ = indexed
    missing = cli.run(engine.data_dir, "search", "--queries", str(tmp_path / "missing.jsonl"), "--json", check=False,
                      text=False)
    assert missing.returncode == 1 and b"cannot read" in missing.stderr
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert cli.run(engine.data_dir, "search", "--queries", str(binary), check=False, text=False).returncode == 1


@pytest.mark.parametrize("query", [
    "", "' OR 1=1 --", "%_\\\"", "foo AND (bar OR", "😀 مرحبا", ("tender " * 2000).encode(), b"caf\xe9 \xff invoice",
], ids=["empty", "sql", "like and quotes", "fts", "emoji rtl", "long", "invalid utf-8"])
def test_cli_search_and_tree_take_any_argument(indexed, query, cli):
    engine, _, _ = indexed
    for command in ("search", "tree"):
        result = cli.run(engine.data_dir, command, query, "--json", check=False, text=False)
        assert result.returncode == 0, result.stderr
        answer = json.loads(result.stdout.decode("utf-8", errors="surrogateescape"))
        assert isinstance(answer["notices"], list)


@pytest.mark.parametrize("args, message", [
    (["search", "--"], b"QUERY"),
    (["search", "-x"], b"No such option"),
    (["search", "invoice", "--limit", "many"], b"--limit"),
    (["search", "invoice", "--scope", "/nowhere/at/all", "--json"], None),
    (["tree", "invoice", "--scope", "/nowhere/at/all", "--json"], None),
    (["search", "invoice", "--scope", "does/not/exist", "--json"], None),
])
def test_cli_odd_arguments_get_a_clear_answer(indexed, args, message, cli):
    engine, _, _ = indexed
    result = cli.run(engine.data_dir, *args, check=False, text=False)
    if message is None:
        assert result.returncode == 0
        notices = json.loads(result.stdout)["notices"]
        assert any("outside every indexed root" in n or "does not exist" in n for n in notices)
    else:
        assert result.returncode != 0 and message in result.stderr
