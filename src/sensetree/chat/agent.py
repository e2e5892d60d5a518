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
from dataclasses import dataclass
from typing import Any, Callable

from .. import paths
from ..engine import Engine, SenseTreeError
from ..models.llm import ChatClient, ChatTurn, LLMError, ToolCall, ToolsUnsupported
from . import prompt
from .tools import SCHEMAS, TOOL_NAMES, Source, Sources, Toolbox, excerpt

SEED_LIMIT = 6
MAX_TOOL_ROUNDS = 5
SEED_EXCERPT_CHARS = 1200
MARGIN_TOKENS = 64  # the chat template's own tokens, and the estimate's error

# Qwen, Hermes and others write tool calls as text; servers that do not parse them pass the text on.
_TEXT_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*(?:</tool_call>|$)", re.DOTALL)
_CALL_START = re.compile(r'\{\s*"name"\s*:\s*"([^"]*)"\s*,\s*"(?:arguments|parameters)"')
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")
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
        rounds, done, stop = 0, set(), None
        while True:
            room = self._room(messages)
            if self.agent.tools_supported and stop is None:
                if rounds >= MAX_TOOL_ROUNDS:
                    stop = self._answer_now(messages, f"{MAX_TOOL_ROUNDS} tool rounds used")
                elif room <= 400:
                    stop = self._answer_now(messages, "the context window is full")
            turn, shown, calls = self._call(messages, use_tools=self.agent.tools_supported and stop is None)
            if not calls:
                return self._finish(shown, turn)
            if stop:  # asked to answer, it still wrote a call: ask once more without any tool in sight
                messages[0]["content"] = prompt.system_prompt(self.seeded, self.agent.scope, tools=False)
                turn, shown, _ = self._call(messages, use_tools=False, listed=False)
                return self._finish(shown, turn)
            runnable = [c for c in calls if c.name in TOOL_NAMES and c.arguments]
            fresh = [c for c in runnable if (c.name, _canonical(c.arguments)) not in done]
            if not fresh:  # small models loop on one call, dress an answer up as a call, or run out of tokens
                reason = "the same tool call again" if runnable else "a tool call that cannot run"
                stop = self._answer_now(messages, f"the model wrote {reason}")
                continue
            done |= {(c.name, _canonical(c.arguments)) for c in fresh}
            rounds += 1
            self._run_tools(messages, turn, fresh)

    def _answer_now(self, messages: list[dict[str, Any]], reason: str) -> str:
        self.say("limit", f"{reason}: answering with what was found")
        messages.append({"role": "user", "content": prompt.ANSWER_NOW})
        return reason

    def _call(self, messages: list[dict[str, Any]], use_tools: bool,
              listed: bool = True) -> tuple[ChatTurn, str, list[ToolCall]]:
        """One streamed model call: what it produced, the text the user saw, the tool calls to run.

        When the tools may not be used they stay listed (``tool_choice: none``) so that the prompt
        starts as before and a local server skips reprocessing it, unless ``listed`` is False.
        A refusal of the tools switches this conversation to plain answers from the seeded excerpts.
        Once tools were offered, a model may write a call even when they are not: that is never shown.
        """
        visible = _Visible(self._emit) if self.agent.tools_supported else None
        listed = listed and self.agent.tools_supported
        self.round_first: float | None = None
        try:
            turn = self.agent.client.stream(messages, tools=SCHEMAS if listed else None,
                                            tool_choice="auto" if use_tools else "none",
                                            max_tokens=self.agent.max_tokens, temperature=self.agent.temperature,
                                            on_text=visible.feed if visible else self._emit)
        except ToolsUnsupported as exc:
            self.agent.tools_supported = False
            self.say("fallback", f"the model cannot call tools ({exc}); answering from the seeded excerpts")
            messages[0]["content"] = prompt.system_prompt(self.seeded, self.agent.scope, tools=False)
            return self._call(messages, use_tools=False)
        self.round_end = time.perf_counter()
        if visible is None:
            return turn, turn.content, []
        calls = turn.tool_calls or _text_tool_calls(turn.content)
        visible.close(is_call=bool(calls))
        return turn, visible.text, calls

    def _emit(self, text: str) -> None:
        now = time.perf_counter()
        self.first_token = self.first_token or now
        self.round_first = self.round_first or now
        self.on_token(text)

    def _room(self, messages: list[dict[str, Any]]) -> int:
        """Characters of tool output that still fit beside the conversation and the answer."""
        return prompt.chars(self.agent.context_window - self._fixed_tokens(messages))

    def _run_tools(self, messages: list[dict[str, Any]], turn: ChatTurn, calls: list[ToolCall]) -> None:
        structured = bool(turn.tool_calls)
        for i, call in enumerate(calls):
            call.id = call.id or f"call_{len(messages)}_{i}"
        if structured:
            messages.append({"role": "assistant", "content": turn.content or None, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in calls]})
        else:  # calls the server left as text go back as text, in the form the chat template expects
            messages.append({"role": "assistant", "content": _as_text(calls)})
        share = max(0, self._room(messages)) // len(calls)
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
    """Tool calls a model wrote as text: in ``<tool_call>`` tags (Hermes, Qwen), or as the whole answer
    being ``{"name", "arguments"}`` JSON (what Qwen's calls look like once a server drops the tags)."""
    blocks = [m.group(1) for m in _TEXT_CALL.finditer(content or "")]
    if not blocks:
        bare = _FENCE.sub("", (content or "").strip())
        blocks = [bare] if bare.startswith("{") else []
    calls = []
    for block in blocks:
        try:
            data = json.loads(block)
        except ValueError:  # often a call cut by max_tokens: never an answer, and it cannot run
            started = _CALL_START.match(block)
            if started:
                calls.append(ToolCall("", started.group(1), ""))
            continue
        if isinstance(data, dict) and isinstance(data.get("name"), str) and ({"arguments", "parameters"} & set(data)):
            args = data.get("arguments", data.get("parameters", {}))
            calls.append(ToolCall("", data["name"], args if isinstance(args, str) else json.dumps(args)))
    return calls


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except ValueError:
        return arguments


def _as_text(calls: list[ToolCall]) -> str:
    """Calls in the Hermes form the model's chat template would have written them in."""
    return "\n".join(f'<tool_call>\n{{"name": {json.dumps(c.name)}, "arguments": {c.arguments or "{}"}}}\n</tool_call>'
                     for c in calls)


class _Visible:
    """Streams the model's text to the user, but not a tool call written as text: a round that opens
    with ``{`` or a code fence is held until it ends, and a ``<tool_call>`` tag hides the rest."""

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
        if not self.text and self.pending.lstrip()[:1] in ("", "{", "`"):
            return  # could be a bare JSON call: wait for the end of the round
        keep = next((k for k in range(len(self.MARK) - 1, 0, -1) if self.pending.endswith(self.MARK[:k])), 0)
        self._flush(self.pending[:len(self.pending) - keep])
        self.pending = self.pending[len(self.pending) - keep:]

    def close(self, is_call: bool) -> None:
        if not (self.hidden or is_call):
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
