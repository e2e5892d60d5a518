"""The assistant's pure parts, without a model or an index: tool calls written as text, the context
window's budget, the seed, the run's stats."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

from sensetree.chat.budget import Budget, fit_tool_output, message_text
from sensetree.chat import seed, stats
from sensetree.chat.budget import ExcerptBudget
from sensetree.chat.prompt import PromptMeter
from sensetree.chat.text_calls import calls_as_text, parse_text_calls
from sensetree.chat.tools import SCHEMAS, Source, source_blocks
from sensetree.models.llm import ChatTurn, ToolCall
from sensetree.search.types import SearchResult


# tool calls written as text ----------------------------------------------------------
def test_text_calls_take_parameters_fences_and_several_tags():
    [call] = parse_text_calls('```json\n{"name": "list_directory", "parameters": {"path": "/r"}}\n```')
    assert call.name == "list_directory" and json.loads(call.arguments) == {"path": "/r"}
    two = parse_text_calls('<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>\n'
                           '<tool_call>{"name": "read_file", "arguments": "{\\"path\\": \\"b\\"}"}</tool_call>')
    assert [json.loads(c.arguments)["path"] for c in two] == ["a", "b"]
    assert parse_text_calls("") == [] and parse_text_calls("The harbour opens at nine.") == []


def test_a_text_call_cut_by_max_tokens_keeps_its_name_and_no_arguments():
    [call] = parse_text_calls('<tool_call>\n{"name": "search_files", "arguments": {"query": "harbour"}')
    assert (call.name, call.arguments) == ("search_files", "")
    [call] = parse_text_calls('{"name": "read_file", "arguments": {"path": "/r/a')  # the tags dropped
    assert (call.name, call.arguments) == ("read_file", "")
    assert parse_text_calls('{"query": "harbour", "path": "/r/a') == []


def test_calls_written_back_as_text_read_back_the_same():
    calls = [ToolCall("call_1", "read_file", '{"path": "/r/a.txt"}'), ToolCall("", "list_directory", "")]
    text = calls_as_text(calls)
    assert text.startswith("<tool_call>\n") and text.count("</tool_call>") == 2
    assert [(c.name, json.loads(c.arguments)) for c in parse_text_calls(text)] == [
        ("read_file", {"path": "/r/a.txt"}), ("list_directory", {})]


# the context window's budget -------------------------------------------------------------
def _messages(*texts: str) -> list[dict]:
    return [{"role": "user", "content": text} for text in texts]


def test_the_fixed_tokens_are_the_messages_the_schemas_and_the_answer():
    budget = Budget(PromptMeter(), context_window=4096, max_tokens=512)
    messages = _messages("x" * 298)
    assert message_text(messages) == "x" * 298 + '""'
    assert budget.fixed_tokens(messages, tools=False) == 100 + 512 + 64  # 3 characters a token until the server says
    assert budget.fixed_tokens(messages, tools=True) == math.ceil((300 + len(json.dumps(SCHEMAS))) / 3) + 512 + 64
    called = [{"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]}]
    assert message_text(called) == '[{"id": "c"}]'


def test_the_oldest_exchanges_go_until_half_the_window_is_left():
    budget = Budget(PromptMeter(), context_window=2048, max_tokens=512)
    system = {"role": "system", "content": ""}
    exchanges = [_messages("a" * 600) for _ in range(4)]  # 201 tokens each; 448 fit beside the answer
    assert budget.exchanges_to_drop(system, exchanges, tools=False) == 2
    assert budget.exchanges_to_drop(system, exchanges[:2], tools=False) == 0
    assert budget.exchanges_to_drop(system, [_messages("a" * 3000)], tools=False) == 1
    assert budget.exchanges_to_drop(system, [], tools=False) == 0


def test_the_excerpts_get_a_quarter_of_the_window_or_what_the_server_reads_in_time():
    question = _messages("Question: when does it open?")  # 28 characters: 10 tokens
    unhurried = Budget(PromptMeter(), context_window=4096, max_tokens=512).for_excerpts(question, 100, tools=True)
    assert unhurried.chars == unhurried.window == 1024 * 3 - 100
    assert unhurried.reason == "the 4096-token context window"
    # 100 tokens/s for 2 s: 190 tokens beside the question, less than the floor of 1200 characters
    hurried = Budget(PromptMeter(100.0), 4096, 512, first_token_s=2.0).for_excerpts(question, 100, tools=True)
    assert (hurried.chars, hurried.window) == (1200, 1024 * 3 - 100)
    assert hurried.reason == "what the model reads in 2 s at 100 tokens/s"
    quick = Budget(PromptMeter(1000.0), 4096, 512, first_token_s=2.0).for_excerpts(question, 100, tools=True)
    assert quick.chars == quick.window and quick.reason == "the 4096-token context window"
    # a small window: the conversation and the answer come first, and the tools keep a fifth
    small = Budget(PromptMeter(), 1024, 900)
    assert small.for_excerpts(question, 0, tools=False).window == 3 * (1024 - 10 - 900 - 64)
    assert small.for_excerpts(question, 0, tools=True).window == 0
    assert small.for_excerpts(question, 100, tools=True).window == -100  # the headers alone do not fit


def test_the_tools_share_the_room_left_within_what_the_server_reads_in_time():
    messages = _messages("x" * 298)
    budget = Budget(PromptMeter(), 4096, 512)
    assert budget.room(messages, tools=False) == (4096 - 676) * 3
    assert budget.tool_share(messages, tools=False, calls=2) == (4096 - 676) * 3 // 2
    assert Budget(PromptMeter(100.0), 4096, 512, first_token_s=2.0).tool_share(messages, False, 2) == 300
    assert Budget(PromptMeter(), 512, 512).tool_share(messages, False, 1) == 0  # full: no room, never negative


def test_a_tool_output_is_cut_to_its_share_source_by_source():
    text = ("note: one\n[1] a.txt — /r/a.txt\n" + "a" * 500 + "\n\n[7] not a source\n"
            + "\n\n[2] b.txt — /r/b.txt\n" + "b" * 500)
    lead, blocks = source_blocks(text, {1, 2})
    assert lead == "note: one\n" and [(n, head) for n, head, _ in blocks] == [
        (1, "[1] a.txt — /r/a.txt"), (2, "[2] b.txt — /r/b.txt")]
    assert blocks[0][2].endswith("[7] not a source") and blocks[1][2] == "b" * 500  # [7] is no source of it
    asked = []

    def pick(texts: list[str], budget: int) -> list[str]:
        asked.append(budget)
        return [t[:budget // len(texts)] for t in texts]

    fitted = fit_tool_output(text, {1, 2}, 300, pick)
    assert len(fitted) <= 300 and asked == [300 - len(lead) - 2 * (len(blocks[0][1]) + 3)]
    assert fitted.startswith("note: one\n[1] a.txt — /r/a.txt\naaa") and "\n\n[2] b.txt — /r/b.txt\nbbb" in fitted
    assert fit_tool_output(text, {1, 2}, len(text), pick) == text and len(asked) == 1  # within its share: untouched
    assert source_blocks("no matching file", set()) == ("no matching file", [])


# the run's stats ----------------------------------------------------------------------
def test_the_stats_time_the_first_token_shown_and_the_last_round(monkeypatch):
    clock = iter([11.0, 11.5, 12.0, 13.0, 14.0])
    monkeypatch.setattr(stats, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    run = stats.RunStats(started=10.0)                                   # the question
    run.round_started()
    run.text_shown()                                                     # 11.0: "Let me look."
    run.round_ended(ChatTurn(chunks=3, prompt_tokens=300, cached_tokens=None))  # 11.5, a tool call
    run.round_started()
    assert (run.tokens, run.tokens_per_s) == (0, None)  # the new round showed nothing yet
    run.text_shown()                                                     # 12.0
    run.text_shown()                                                     # 13.0: not the round's first
    run.round_ended(ChatTurn(chunks=5, prompt_tokens=40, cached_tokens=310))    # 14.0
    assert run.ttft_s == 1.0 and run.tokens == 5 and run.tokens_per_s == 4 / 2.0
    assert (run.prompt_tokens, run.cached_tokens) == (340, 310)


def test_stats_of_an_answer_that_showed_nothing_and_a_server_that_says_nothing():
    run = stats.RunStats()
    run.round_started()
    run.round_ended(ChatTurn(chunks=0))
    assert (run.ttft_s, run.tokens, run.tokens_per_s, run.prompt_tokens, run.cached_tokens) == (None, 0, None, None, None)


# the seed -----------------------------------------------------------------------------
def _result(path: str, chunk: int = 0, label: str = "") -> SearchResult:
    return SearchResult(path, path.rsplit("/", 1)[-1], 0.5, "the snippet", chunk, ["dense"], 1, None, 0.01,
                        None, location_label=label)


class _Chunks:
    """An engine that only holds chunk texts, the way the seed reads them."""

    def __init__(self, texts: dict[str, str]):
        self.texts = texts
        self.store = SimpleNamespace(queries=self)  # handlers.files.chunk_text reads engine.store.queries

    def chunk_text(self, path: str, chunk_index: int) -> str | None:
        return self.texts.get(path)


def test_the_seed_drops_a_sense_that_only_repeats_the_text():
    body = "Harbour notice\n\nThe office opens at nine."
    repeated = f"[notice.txt] {' '.join(body.split())}\n\n{body}"
    written = "[notice.txt] When the harbour office opens\n\n" + body
    engine = _Chunks({"/r/a.txt": repeated, "/r/b.txt": written, "/r/c.txt": "x" * 2000})
    assert seed.excerpt_text(engine, _result("/r/a.txt")) == body  # the fallback sense: the same words twice
    assert seed.excerpt_text(engine, _result("/r/b.txt")) == written  # a written sense stays
    assert seed.excerpt_text(engine, _result("/r/c.txt")) == "x" * seed.SEED_EXCERPT_CHARS + "…"
    assert seed.excerpt_text(engine, _result("/r/none.txt")) == "the snippet"


def test_the_seed_counts_its_headers_and_says_when_it_was_cut():
    results = [_result("/r/docs/a.txt"), _result("/r/b.pdf", label="p. 2")]
    assert seed.header_chars(results, 7, ["/r"]) == len("[7] docs/a.txt") + 2 + len("[7] b.pdf p. 2") + 2
    budget = ExcerptBudget(100, 300, "the 4096-token context window")
    texts = ["a" * 200, "b" * 200, "c" * 200, "d" * 200]
    fitted = seed.fit_excerpts(texts, budget, lambda texts, chars: [t[:chars // 4] for t in texts])
    assert fitted == ["a" * 25, "b" * 25, "c" * 25, "d" * 25]
    assert seed.cut_note(texts, fitted, budget) == \
        "excerpts cut to their best sentences for the 4096-token context window (800 → 100 characters)"
    assert seed.cut_note(texts, fitted[:3], budget).endswith("(800 → 75 characters, 1 dropped)")
    assert seed.cut_note(texts, texts, budget) is None
    assert seed.fit_excerpts(texts, ExcerptBudget(-5, -5, ""), lambda texts, chars: texts) == []  # nothing fits


def test_the_seed_answers_without_tools_when_it_shows_the_question():
    source = Source(1, "/r/ferry/timetable.txt", "timetable.txt", 0.5, "", 0, "seed")
    excerpts = [(source, "The boat to Skye leaves at 10:40.")]
    assert seed.shows_the_question("When does the boat to Skye leave?", excerpts)
    assert seed.shows_the_question("Where is the ferry timetable?", excerpts)  # the path counts
    assert not seed.shows_the_question("What does parking at the harbour cost per day?", excerpts)
