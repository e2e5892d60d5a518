"""The retrieval-grounded assistant (SPEC §6): seed, let the model use its tools, check the citations.

Before the first model call the question is searched (top 6, current scope) and the excerpts go
into the system prompt, so even a model that cannot call tools answers from the user's files.
A model that can may search, read and list for up to five rounds. Everything it saw becomes a
numbered source, and the answer may only cite those numbers.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import paths
from ..engine import Engine, SenseTreeError
from ..models.llm import ChatClient, ChatTurn, LLMError, ToolCall, ToolsUnsupported
from . import prompt
from .tools import SCHEMAS, Source, Sources, Toolbox, excerpt

SEED_LIMIT = 6
MAX_TOOL_ROUNDS = 5
SEED_EXCERPT_CHARS = 1200
MARGIN_TOKENS = 64  # the chat template's own tokens, and the estimate's error

# Qwen, Hermes and others write tool calls as text; servers that do not parse them pass the text on.
_TEXT_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*(?:</tool_call>|$)", re.DOTALL)
_MARKER = re.compile(r"\s?\[(\d+(?:\s*,\s*\d+)*)\]")


class ChatError(SenseTreeError):
    """The assistant cannot answer (no model, server down, model error); the message says what to do."""


@dataclass
class Step:
    kind: str  # seed, search_files, read_file, list_directory, context, trim, fallback, limit, citations, notice
    text: str

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "text": self.text}


@dataclass
class Answer:
    text: str
    sources: list[Source]
    steps: list[Step]
    ttft_s: float | None = None      # from the question to the first token of the answer shown
    tokens: int = 0                  # streamed pieces of the final answer (one per token on llama.cpp)
    tokens_per_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"answer": self.text, "sources": [s.as_dict() for s in self.sources],
                "steps": [s.as_dict() for s in self.steps],
                "stats": {"ttft_s": _round(self.ttft_s), "tokens": self.tokens,
                          "tokens_per_s": _round(self.tokens_per_s)}}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


class Agent:
    """One conversation: keeps its history, and what it learnt about the server (can it call tools?)."""

    def __init__(self, engine: Engine, client: ChatClient, *, scope: str | None = None, context_window: int = 4096,
                 window_source: str = "chat.context_window", max_tokens: int = 512, temperature: float = 0.2):
        if scope:
            if not any(paths.is_under(scope, root) for root in engine.roots()):
                raise ChatError(f"{scope} is outside every indexed root ({', '.join(engine.roots()) or 'none yet'})")
            scope = paths.normalize(scope)
        self.engine, self.client, self.scope = engine, client, scope
        self.context_window, self.window_source = context_window, window_source
        self.max_tokens, self.temperature = max_tokens, temperature
        self.tools_supported = True
        self.history: list[dict[str, Any]] = []

    def answer(self, question: str, on_token: Callable[[str], None] | None = None,
               on_step: Callable[[Step], None] | None = None) -> Answer:
        run = _Run(self, question, on_token or (lambda _: None), on_step or (lambda _: None))
        try:
            result = run.go()
        except LLMError as exc:
            raise ChatError(f"the chat model failed: {exc}") from None
        self.history += [{"role": "user", "content": question},
                         {"role": "assistant", "content": _MARKER.sub("", result.text)}]
        return result


class _Run:
    """The work of one answer, so that its state does not leak into the next."""

    def __init__(self, agent: Agent, question: str, on_token: Callable[[str], None], on_step: Callable[[Step], None]):
        self.agent, self.question = agent, question
        self.on_token, self.on_step = on_token, on_step
        self.sources = Sources()
        self.toolbox = Toolbox(agent.engine, agent.scope, self.sources)
        self.steps: list[Step] = []
        self.started = time.perf_counter()
        self.first_token: float | None = None

    def say(self, kind: str, text: str) -> None:
        step = Step(kind, text)
        self.steps.append(step)
        self.on_step(step)

    # seeding and budget ------------------------------------------------------------
    def go(self) -> Answer:
        a = self.agent
        self.say("context", f"context window {a.context_window} tokens ({a.window_source})")
        response = a.engine.search(self.question, a.scope, SEED_LIMIT)
        for notice in response.notices:
            self.say("notice", notice)
        seeded = [(self.sources.add_result(r, "seed"), excerpt(a.engine, r, SEED_EXCERPT_CHARS))
                  for r in response.results]
        where = f" in {a.scope}" if a.scope else ""
        self.say("seed", f"searching: {self.question}{where} ({len(seeded)} excerpts)")
        history = self._history_that_fits()
        messages = [{"role": "system", "content": ""}, *history, {"role": "user", "content": self.question}]
        self.seeded = self._fit_excerpts(seeded, messages)
        messages[0]["content"] = prompt.system_prompt(self.seeded, a.scope, a.tools_supported)
        return self._loop(messages)

    def _fixed_tokens(self, messages: list[dict[str, Any]]) -> int:
        schemas = prompt.tokens(json.dumps(SCHEMAS)) if self.agent.tools_supported else 0
        text = "".join(str(m.get("content") or "") + json.dumps(m.get("tool_calls") or "") for m in messages)
        return prompt.tokens(text) + schemas + self.agent.max_tokens + MARGIN_TOKENS

    def _history_that_fits(self) -> list[dict[str, Any]]:
        """Older turns go first when they would leave less than half the window for the excerpts."""
        history = list(self.agent.history)
        dropped = 0
        while history and self._fixed_tokens(history) > self.agent.context_window // 2:
            history, dropped = history[2:], dropped + 1
        if dropped:
            self.say("trim", f"the {dropped} oldest exchange(s) were left out to fit the context window")
        return history

    def _fit_excerpts(self, seeded: list[tuple[Source, str]], messages: list[dict[str, Any]]) -> list[tuple[Source, str]]:
        rules = prompt.system_prompt([], self.agent.scope, self.agent.tools_supported)
        headers = sum(len(f"[{s.n}] {s.name} — {s.path}\n\n\n") for s, _ in seeded)
        # a model that can call tools keeps a fifth of the window for what they return
        for_tools = min(self.agent.context_window // 5, 1000) if self.agent.tools_supported else 0
        budget = prompt.chars(self.agent.context_window - self._fixed_tokens(messages) - prompt.tokens(rules)
                              - for_tools) - headers
        texts = prompt.fit([text for _, text in seeded], max(0, budget))
        before, after = sum(len(t) for _, t in seeded), sum(map(len, texts))
        if after < before:
            kept = f", {len(seeded) - len(texts)} dropped" if len(texts) < len(seeded) else ""
            self.say("trim", f"excerpts trimmed to fit the {self.agent.context_window}-token context window "
                             f"({before} → {after} characters{kept})")
        return [(source, text) for (source, _), text in zip(seeded, texts)]

    # the tool loop -----------------------------------------------------------------
    def _loop(self, messages: list[dict[str, Any]]) -> Answer:
        rounds = 0
        while True:
            room = self._room(messages)
            use_tools = self.agent.tools_supported and rounds < MAX_TOOL_ROUNDS and room > 400
            if self.agent.tools_supported and not use_tools:
                reason = (f"{MAX_TOOL_ROUNDS} tool rounds used" if rounds >= MAX_TOOL_ROUNDS
                          else "the context window is full")
                self.say("limit", f"{reason}: answering with what was found")
            turn, shown = self._call(messages, use_tools)
            calls = []
            if use_tools and self.agent.tools_supported:  # not when the server just refused the tools
                calls = turn.tool_calls or _text_tool_calls(turn.content)
            if not calls:
                return self._finish(shown, turn)
            rounds += 1
            self._run_tools(messages, turn, calls, room)

    def _call(self, messages: list[dict[str, Any]], use_tools: bool) -> tuple[ChatTurn, str]:
        """One streamed model call; a refusal of the tools switches this conversation to plain answers."""
        visible = _Visible(self._emit) if use_tools else None
        self.round_first: float | None = None
        try:
            turn = self.agent.client.stream(messages, tools=SCHEMAS if use_tools else None,
                                            max_tokens=self.agent.max_tokens, temperature=self.agent.temperature,
                                            on_text=visible.feed if visible else self._emit)
        except ToolsUnsupported as exc:
            self.agent.tools_supported = False
            self.say("fallback", f"the model cannot call tools ({exc}); answering from the seeded excerpts")
            messages[0]["content"] = prompt.system_prompt(self.seeded, self.agent.scope, tools=False)
            return self._call(messages, use_tools=False)
        if visible:
            visible.close()
        self.round_end = time.perf_counter()
        return turn, visible.text if visible else turn.content

    def _emit(self, text: str) -> None:
        now = time.perf_counter()
        self.first_token = self.first_token or now
        self.round_first = self.round_first or now
        self.on_token(text)

    def _room(self, messages: list[dict[str, Any]]) -> int:
        """Characters of tool output that still fit beside the conversation and the answer."""
        return prompt.chars(self.agent.context_window - self._fixed_tokens(messages))

    def _run_tools(self, messages: list[dict[str, Any]], turn: ChatTurn, calls: list[ToolCall], room: int) -> None:
        structured = bool(turn.tool_calls)
        for i, call in enumerate(calls):
            call.id = call.id or f"call_{len(messages)}_{i}"
        if structured:
            messages.append({"role": "assistant", "content": turn.content or None, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in calls]})
        else:  # replay the model's own text: its chat template knows how to show it the call
            messages.append({"role": "assistant", "content": turn.content})
        share = room // len(calls)
        for call in calls:
            outcome = self.toolbox.run(call.name, call.arguments)
            self.say(call.name, outcome.step)
            text = outcome.text
            if len(text) > share:
                text = prompt.cut(text, share)
                self.say("trim", f"the {call.name} result was cut to {share} characters to fit the context window")
            messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": text})

    # the answer --------------------------------------------------------------------
    def _finish(self, text: str, turn: ChatTurn) -> Answer:
        text, dropped = check_citations(text.strip(), self.sources)
        if dropped:
            self.say("citations", f"dropped citation(s) {', '.join(f'[{n}]' for n in dropped)}: no such source")
        if not text:
            text = "The model gave no answer; try rephrasing the question."
        answer = Answer(text, list(self.sources), self.steps)
        if self.first_token is not None:
            answer.ttft_s = self.first_token - self.started
        if self.round_first is not None:
            answer.tokens = turn.chunks
            elapsed = self.round_end - self.round_first
            answer.tokens_per_s = (turn.chunks - 1) / elapsed if turn.chunks > 1 and elapsed > 0 else None
        return answer


def check_citations(text: str, sources: Sources) -> tuple[str, list[int]]:
    """Keep ``[n]`` only where n is a source of this answer, and mark those sources as cited."""
    dropped: list[int] = []

    def keep(match: re.Match) -> str:
        numbers = [int(n) for n in re.findall(r"\d+", match.group(1))]
        good = [n for n in numbers if sources.by_number(n)]
        dropped.extend(n for n in numbers if n not in good)
        for n in good:
            sources.by_number(n).cited = True
        lead = match.group(0)[0] if match.group(0)[0].isspace() else ""
        return f"{lead}[{', '.join(map(str, good))}]" if good else ""

    return _MARKER.sub(keep, text), dropped


def _text_tool_calls(content: str) -> list[ToolCall]:
    calls = []
    for match in _TEXT_CALL.finditer(content or ""):
        try:
            data = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            args = data.get("arguments", data.get("parameters", {}))
            calls.append(ToolCall("", data["name"], args if isinstance(args, str) else json.dumps(args)))
    return calls


class _Visible:
    """Streams the model's text to the user but holds back a ``<tool_call>`` block written as text."""

    MARK = "<tool_call>"

    def __init__(self, emit: Callable[[str], None]):
        self.emit, self.pending, self.hidden, self.text = emit, "", False, ""

    def feed(self, piece: str) -> None:
        if self.hidden:
            return
        self.pending += piece
        at = self.pending.find(self.MARK)
        if at >= 0:
            self._flush(self.pending[:at])
            self.pending, self.hidden = "", True
            return
        keep = next((k for k in range(len(self.MARK) - 1, 0, -1) if self.pending.endswith(self.MARK[:k])), 0)
        self._flush(self.pending[:len(self.pending) - keep])
        self.pending = self.pending[len(self.pending) - keep:]

    def close(self) -> None:
        if not self.hidden:
            self._flush(self.pending)
        self.pending = ""

    def _flush(self, text: str) -> None:
        if text:
            self.text += text
            self.emit(text)


def answer(engine: Engine, question: str, scope: str | None = None, on_token: Callable[[str], None] | None = None,
           on_step: Callable[[Step], None] | None = None) -> Answer:
    """One question, one answer, on the configured model (started and stopped here if embedded)."""
    from .backend import connect

    with connect(engine) as backend:
        return backend.agent(engine, scope).answer(question, on_token, on_step)
