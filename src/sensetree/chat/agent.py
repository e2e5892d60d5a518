"""The retrieval-grounded assistant (design §6): seed, let the model use its tools, check the citations.

Before the first model call the question is searched (top 6, current scope) and the excerpts go
into the user's message, so even a model that cannot call tools answers from the user's files
(``seed.py``). A model that can may search, read and list for up to five rounds. Everything it saw
becomes a numbered source, numbered once per conversation, and the answer may only cite those
numbers; a sentence the model left uncited gets the number of the excerpt it rests on.

The prompt is built for a local server's prompt cache: the system prompt never changes, and the
conversation goes back to the model exactly as it was sent and written, so each turn reads only
its new excerpts and question. The excerpts are sized to what the server reads in
``first_token_s`` seconds (its measured speed), within the context window (``budget.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from .. import paths
from ..engine import Engine
from ..errors import SenseTreeError
from ..models.llm import ChatClient, ChatTurn, LLMError, ToolCall, ToolsUnsupported
from ..search.types import SearchResult
from ..summaries import ChatModel
from . import prompt, seed
from .budget import Budget, Message, fit_tool_output, message_text
from .citations import Citations, cite
from .evidence import Evidence, Sentence, split_sentences
from .quotes import Chunks, attach
from .stats import RunStats
from .text_calls import VisibleText, calls_as_text, parse_text_calls
from .tools import TOOL_NAMES, WITH_WHOLE_FILES, Source, Sources, Toolbox, asks_for_whole_files, source_blocks

MAX_TOOL_ROUNDS = 5
UNSUPPORTED = "(No excerpt supports this answer: the files may not say.)"


class ChatError(SenseTreeError):
    """The assistant cannot answer (no model, server down, model error); the message says what to do."""


@dataclass
class Step:
    kind: str  # seed, search_files, read_file, list_directory, context, trim, tools, fallback, limit, citations, notice
    text: str

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "text": self.text}


@dataclass
class Answer:
    text: str
    sources: list[Source]
    steps: list[Step]
    sentences: list[Sentence] = field(default_factory=list)  # the claims and how each got its [n]
    supported: bool = True  # False: the answer makes claims that no excerpt supports
    ttft_s: float | None = None  # from the question to the first token of the answer shown
    tokens: int = 0  # streamed pieces of the final answer (one per token on llama.cpp)
    tokens_per_s: float | None = None
    prompt_tokens: int | None = None  # prompt tokens the server read for this answer, all rounds
    cached_tokens: int | None = None  # prompt tokens it took from its cache instead

    def as_dict(self) -> dict[str, Any]:
        return {
            "answer": self.text,
            "sources": [s.as_dict() for s in self.sources],
            "steps": [s.as_dict() for s in self.steps],
            "citations": [s.as_dict() for s in self.sentences],
            "supported": self.supported,
            "stats": {
                "ttft_s": _round(self.ttft_s),
                "tokens": self.tokens,
                "tokens_per_s": _round(self.tokens_per_s),
                "prompt_tokens": self.prompt_tokens,
                "cached_tokens": self.cached_tokens,
            },
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


class Agent:
    """One conversation: its history as sent, its numbered sources, what it learnt about the server.

    Each answer is a ``_Run``; what the conversation keeps of it comes back through the methods below.
    """

    def __init__(
        self,
        engine: Engine,
        client: ChatClient,
        *,
        scope: str | None = None,
        context_window: int = 4096,
        window_source: str = "chat.context_window",
        max_tokens: int = 512,
        temperature: float = 0.2,
        meter: prompt.PromptMeter | None = None,
        first_token_s: float = 0.0,
        tools_when_needed: bool = False,
    ):
        if scope:
            if not any(paths.is_under(scope, root) for root in engine.roots()):
                raise ChatError(f"{scope} is outside every indexed root ({', '.join(engine.roots()) or 'none yet'})")
            scope = paths.normalize(scope)
        self.engine, self.client, self.scope = engine, client, scope
        self.window_source, self.temperature = window_source, temperature
        self.budget = Budget(meter or prompt.PromptMeter(), context_window, max_tokens, first_token_s)
        self.tools_supported = True
        # offer the tools only when the excerpts miss words of the question: a small model calls them
        # on a whim, which costs a round (seconds) and often the answer
        self.tools_when_needed = tools_when_needed
        self.exchanges: list[list[Message]] = []  # each turn's messages, exactly as sent and answered
        self.sources = Sources()
        self.shown: dict[int, list[str]] = {}  # source number -> the sentences the model was shown
        self.chunk_of: Chunks = {}  # (source number, shown sentence) -> the chunk it came from (None: the file's start)
        self.evidence = Evidence(*_embedder_of(engine))

    def answer(
        self,
        question: str,
        on_token: Callable[[str], None] | None = None,
        on_step: Callable[[Step], None] | None = None,
    ) -> Answer:
        run = _Run(self, question, on_token or (lambda _: None), on_step or (lambda _: None))
        try:
            return run.go()
        except LLMError as exc:
            raise ChatError(f"the chat model failed: {exc}") from None

    def history(self) -> list[Message]:
        return [m for exchange in self.exchanges for m in exchange]

    def forget_oldest(self, exchanges: int) -> None:
        """The window has no room left for them: the next questions go without."""
        del self.exchanges[:exchanges]

    def remember(self, exchange: list[Message]) -> None:
        """An answered turn, sent back as it was with the next questions (a server's cache then reuses it)."""
        self.exchanges.append(exchange)

    def record_shown(self, source: int, text: str, chunk: int | None | str = "unknown") -> None:
        """What the model read of a source: the answers' citations are checked against these sentences.
        ``chunk``: the chunk the text came from (None: the file's start), where a citation's sentence is looked for."""
        shown = self.shown.setdefault(source, [])
        sentences = split_sentences(text.replace("…", " "))
        shown += [s for s in sentences if s not in shown]
        if chunk != "unknown":
            for sentence in sentences:
                self.chunk_of.setdefault((source, sentence), chunk)  # type: ignore[arg-type]

    def drop_tools(self) -> None:
        """The server refused the tools: later answers go without, instead of a refused request each."""
        self.tools_supported = False


def _embedder_of(engine: Engine) -> tuple[Callable, Callable]:
    """The index's embedder, loaded on first use (the search loads it anyway)."""
    return (lambda text: engine.embedder.embed_query(text)), (lambda texts: engine.embedder.embed_passages(texts))


class _Run:
    """The work of one answer, so that its state does not leak into the next: the seed, then the
    tool loop, then the checked citations. It reads the conversation and changes it only through
    the Agent's methods."""

    def __init__(self, agent: Agent, question: str, on_token: Callable[[str], None], on_step: Callable[[Step], None]):
        self.agent, self.question = agent, question
        self.on_token, self.on_step = on_token, on_step
        self.seen: set[int] = set()  # the sources this answer was given
        self.toolbox = Toolbox(
            agent.engine,
            agent.scope,
            agent.sources,
            ChatModel(agent.client, agent.budget.context_window, agent.budget.max_tokens, "the assistant's model"),
            on_progress=lambda text: self.say("progress", text),
        )
        self.roots = agent.engine.roots()
        self.tools = agent.tools_supported  # offered in this answer
        self.whole_files = asks_for_whole_files(question)
        if self.whole_files and agent.budget.schemas is not WITH_WHOLE_FILES:  # listed from now on in this conversation
            agent.budget = replace(agent.budget, schemas=WITH_WHOLE_FILES)
        self.budget = agent.budget
        self.steps: list[Step] = []
        self.stats = RunStats()

    def say(self, kind: str, text: str) -> None:
        step = Step(kind, text)
        self.steps.append(step)
        self.on_step(step)

    def go(self) -> Answer:
        a = self.agent
        self.say("context", f"context window {self.budget.context_window} tokens ({a.window_source})")
        results = seed.search(a.engine, self.question, a.scope, self.say)
        self._trim_history()
        seeded = self._seed(results)
        if (
            self.tools
            and a.tools_when_needed
            and not self.whole_files
            and seed.shows_the_question(self.question, seeded)
        ):
            self.tools = False
            self.say("tools", "the excerpts have the question's words: answering from them, without tools")
        messages = [
            self._system(),
            *a.history(),
            {"role": "user", "content": prompt.user_prompt(self.question, seeded, a.scope, self.roots)},
        ]
        return self._loop(messages)

    # the seed and the history ----------------------------------------------------------
    def _system(self) -> Message:
        return {"role": "system", "content": prompt.system_prompt(self.tools)}

    def _trim_history(self) -> None:
        """Older turns go first when they would leave less than half the window for this one."""
        dropped = self.budget.exchanges_to_drop(self._system(), self.agent.exchanges, self.tools)
        if dropped:
            self.agent.forget_oldest(dropped)
            self.say("trim", f"the {dropped} oldest exchange(s) were left out to fit the context window")

    def _seed(self, results: list[SearchResult]) -> list[tuple[Source, str]]:
        """The seed's excerpts cut to what fits, numbered as the conversation's sources."""
        a = self.agent
        texts = [seed.excerpt_text(a.engine, r) for r in results]
        question = prompt.user_prompt(self.question, [], a.scope, self.roots)
        budget = self.budget.for_excerpts(
            [self._system(), *a.history(), {"role": "user", "content": question}],
            seed.header_chars(results, len(a.sources) + 1, self.roots),
            self.tools,
        )
        fitted = seed.fit_excerpts(texts, budget, self._pick)
        note = seed.cut_note(texts, fitted, budget)
        if note:
            self.say("trim", note)
        seeded = []
        for result, text in zip(results, fitted):
            source = a.sources.add_result(result, "seed")
            self.seen.add(source.n)
            a.record_shown(source.n, text, result.chunk_index)
            seeded.append((source, text))
        return seeded

    def _pick(self, texts: list[str], budget: int) -> list[str]:
        return self.agent.evidence.pick(self.question, texts, budget)

    # the tool loop -----------------------------------------------------------------
    def _loop(self, messages: list[Message]) -> Answer:
        rounds, done, stop = 0, set(), None
        while True:
            room = self.budget.room(messages, self.tools)
            if self.tools and stop is None:
                if rounds >= MAX_TOOL_ROUNDS:
                    stop = self._answer_now(messages, f"{MAX_TOOL_ROUNDS} tool rounds used")
                elif room <= 400:
                    stop = self._answer_now(messages, "the context window is full")
            turn, shown, calls = self._call(messages, use_tools=self.tools and stop is None)
            if not calls:
                return self._finish(messages, shown, turn)
            if stop:  # asked to answer, it still wrote a call: ask once more without any tool in sight
                messages[0]["content"] = prompt.system_prompt(tools=False)
                turn, shown, _ = self._call(messages, use_tools=False, listed=False)
                return self._finish(messages, shown, turn)
            runnable = [c for c in calls if c.name in TOOL_NAMES and c.arguments]
            fresh = [c for c in runnable if _call_key(c) not in done]
            if not fresh:  # small models loop on one call, dress an answer up as a call, or run out of tokens
                reason = "the same tool call again" if runnable else "a tool call that cannot run"
                stop = self._answer_now(messages, f"the model wrote {reason}")
                continue
            done |= {_call_key(c) for c in fresh}
            rounds += 1
            self._run_tools(messages, turn, fresh)

    def _answer_now(self, messages: list[Message], reason: str) -> str:
        self.say("limit", f"{reason}: answering with what was found")
        messages.append({"role": "user", "content": prompt.ANSWER_NOW})
        return reason

    def _call(
        self, messages: list[Message], use_tools: bool, listed: bool = True
    ) -> tuple[ChatTurn, str, list[ToolCall]]:
        """One streamed model call: what it produced, the text the user saw, the tool calls to run.

        When the tools may not be used they stay listed (``tool_choice: none``) so that the prompt
        starts as before and a local server skips reprocessing it, unless ``listed`` is False.
        A refusal of the tools switches this conversation to plain answers from the seeded excerpts.
        Once tools were offered, a model may write a call even when they are not: that is never shown.
        """
        a = self.agent
        visible = VisibleText(self._emit) if self.tools else None
        listed = listed and self.tools
        self.stats.round_started()
        try:
            turn = a.client.stream(
                messages,
                tools=self.budget.schemas if listed else None,
                tool_choice="auto" if use_tools else "none",
                max_tokens=self.budget.max_tokens,
                temperature=a.temperature,
                on_text=visible.feed if visible else self._emit,
            )
        except ToolsUnsupported as exc:
            a.drop_tools()
            self.tools = False
            self.say("fallback", f"the model cannot call tools ({exc}); answering from the seeded excerpts")
            messages[0]["content"] = prompt.system_prompt(tools=False)
            return self._call(messages, use_tools=False)
        self.stats.round_ended(turn)
        sent = message_text(messages) + (json.dumps(self.budget.schemas) if listed else "")
        self.budget.meter.observe(len(sent), turn.prompt_tokens, turn.cached_tokens, turn.prompt_per_s)
        if visible is None:
            return turn, turn.content, []
        calls = turn.tool_calls or parse_text_calls(turn.content)
        visible.close(is_call=bool(calls))
        return turn, visible.text, calls

    def _emit(self, text: str) -> None:
        self.stats.text_shown()
        self.on_token(text)

    def _run_tools(self, messages: list[Message], turn: ChatTurn, calls: list[ToolCall]) -> None:
        structured = bool(turn.tool_calls)
        for i, call in enumerate(calls):
            call.id = call.id or f"call_{len(messages)}_{i}"
        if structured:
            messages.append(
                {
                    "role": "assistant",
                    "content": turn.content or None,
                    "tool_calls": [
                        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                        for c in calls
                    ],
                }
            )
        else:  # calls the server left as text go back as text, in the form the chat template expects
            messages.append({"role": "assistant", "content": calls_as_text(calls)})
        share = self.budget.tool_share(messages, self.tools, len(calls))
        for call in calls:
            outcome = self.toolbox.run(call.name, call.arguments)
            self.say(call.name, outcome.step)
            numbers = {s.n for s in outcome.new_sources}
            self.seen |= numbers
            text = fit_tool_output(outcome.text, numbers, share, self._pick)
            if len(outcome.text) > share:
                self.say(
                    "trim",
                    f"the {call.name} result was cut to its best sentences "
                    f"({len(outcome.text)} → {len(text)} characters)",
                )
            for n, _, body in source_blocks(text, numbers)[1]:
                self.agent.record_shown(n, body, outcome.chunks.get(n, "unknown"))
            messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": text})

    # the answer --------------------------------------------------------------------
    def _finish(self, messages: list[Message], text: str, turn: ChatTurn) -> Answer:
        a = self.agent
        a.remember(messages[1 + len(a.history()) :] + [{"role": "assistant", "content": turn.content}])
        citations = cite(text.strip(), a.shown, a.evidence, self.question)
        attach(a.engine, citations.sentences, a.sources, a.chunk_of)
        self._tell(citations)
        cited = citations.numbers()
        body = citations.text or "The model gave no answer; try rephrasing the question."
        if citations.unsupported:
            self.say("citations", "no excerpt supports this answer")
            body += f"\n\n{UNSUPPORTED}"
        sources = [replace(s, cited=s.n in cited) for s in a.sources if s.n in self.seen | cited]
        stats = self.stats
        return Answer(
            body,
            sources,
            self.steps,
            citations.sentences,
            not citations.unsupported,
            ttft_s=stats.ttft_s,
            tokens=stats.tokens,
            tokens_per_s=stats.tokens_per_s,
            prompt_tokens=stats.prompt_tokens,
            cached_tokens=stats.cached_tokens,
        )

    def _tell(self, citations: Citations) -> None:
        if citations.dropped:
            self.say(
                "citations", f"dropped citation(s) {', '.join(f'[{n}]' for n in citations.dropped)}: no such source"
            )
        for s in citations.sentences:
            if s.how in ("attached", "corrected"):
                was = f" (the model wrote {', '.join(f'[{n}]' for n in s.written)})" if s.written else ""
                self.say("citations", f"{s.how} [{', '.join(map(str, s.cited))}] to “{prompt.cut(s.text, 60)}”{was}")


def _call_key(call: ToolCall) -> tuple[str, str]:
    """A call as the loop compares them: its name and its arguments however the model spaced them."""
    try:
        return call.name, json.dumps(json.loads(call.arguments), sort_keys=True)
    except ValueError:
        return call.name, call.arguments
