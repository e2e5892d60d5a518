"""What fits the context window, and what the server reads in time.

The conversation, the tools' schemas and the answer take their tokens first; the excerpts and
the tools' output get what is left, sized to what the server reads in ``first_token_s`` seconds
(its measured speed) where it says. Counted in the meter's estimate of the server's tokens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from . import prompt
from .tools import SCHEMAS, source_blocks

MARGIN_TOKENS = 64  # the chat template's own tokens, and the estimate's error
MIN_EXCERPT_BUDGET = 1200  # characters of excerpts however slow the model: below, answers go wrong
TOOL_SHARE_CAP = 1000  # tokens a model that can call tools keeps for what they return, at most

Message = dict[str, Any]
Pick = Callable[[list[str], int], list[str]]  # texts, best first, cut to their best sentences within a budget


def message_text(messages: list[Message]) -> str:
    """What of the messages the model reads, as one text (to count its tokens)."""
    return "".join(str(m.get("content") or "") + json.dumps(m.get("tool_calls") or "") for m in messages)


@dataclass(frozen=True)
class ExcerptBudget:
    chars: int  # characters of excerpts to aim for
    window: int  # characters the context window leaves them, at most
    reason: str  # what limits them, as the user is told when they are cut


@dataclass(frozen=True)
class Budget:
    """One conversation's arithmetic of the context window; the meter is the server's, shared and learning."""

    meter: prompt.PromptMeter
    context_window: int
    max_tokens: int
    first_token_s: float = 0.0
    schemas: list[dict[str, Any]] = field(default_factory=lambda: SCHEMAS)  # the tools listed, when they are

    def fixed_tokens(self, messages: list[Message], tools: bool) -> int:
        """Tokens of the messages, the tools' schemas when listed, and the answer."""
        schemas = json.dumps(self.schemas) if tools else ""
        return self.meter.tokens(message_text(messages) + schemas) + self.max_tokens + MARGIN_TOKENS

    def exchanges_to_drop(self, system: Message, exchanges: list[list[Message]], tools: bool) -> int:
        """How many of the oldest exchanges go: those that would leave less than half the window for this turn."""
        dropped = 0
        while (
            dropped < len(exchanges)
            and self.fixed_tokens([system, *(m for exchange in exchanges[dropped:] for m in exchange)], tools)
            > self.context_window // 2
        ):
            dropped += 1
        return dropped

    def for_excerpts(self, messages: list[Message], headers: int, tools: bool) -> ExcerptBudget:
        """The excerpts' characters beside ``messages`` (the conversation, its last message the question
        without excerpts), less their ``headers``: a quarter of the window at most, as the turn stays in
        the history for the next ones, and what the server reads in time where it says its speed."""
        # a model that can call tools keeps a fifth of the window for what they return
        for_tools = min(self.context_window // 5, TOOL_SHARE_CAP) if tools else 0
        meter = self.meter
        window = (
            meter.chars(
                min(self.context_window // 4, self.context_window - for_tools - self.fixed_tokens(messages, tools))
            )
            - headers
        )
        quick = meter.tokens_within(self.first_token_s)
        chars = (
            window
            if quick is None
            else min(
                window,
                max(MIN_EXCERPT_BUDGET, meter.chars(quick - meter.tokens(str(messages[-1]["content"]))) - headers),
            )
        )
        reason = (
            f"what the model reads in {self.first_token_s:g} s at {meter.tokens_per_s:.0f} tokens/s"
            if quick is not None and chars < window
            else f"the {self.context_window}-token context window"
        )
        return ExcerptBudget(chars, window, reason)

    def room(self, messages: list[Message], tools: bool) -> int:
        """Characters of tool output that still fit beside the conversation and the answer."""
        return self.meter.chars(self.context_window - self.fixed_tokens(messages, tools))

    def tool_share(self, messages: list[Message], tools: bool, calls: int) -> int:
        """Characters each of ``calls`` tool outputs may take: the room left, within what the server reads in time."""
        room = max(0, self.room(messages, tools))
        quick = self.meter.tokens_within(self.first_token_s)
        return (room if quick is None else min(room, self.meter.chars(quick))) // calls


def fit_tool_output(text: str, numbers: set[int], share: int, pick: Pick) -> str:
    """A tool's output cut to its share: each source's block to the sentences that answer the
    question, its "[n] name — path" line kept; what is not a source's block is cut at the end."""
    if len(text) <= share:
        return text
    lead, blocks = source_blocks(text, numbers)
    budget = share - len(lead) - sum(len(head) + 3 for _, head, _ in blocks)
    bodies = pick([body for *_, body in blocks], max(0, budget))
    return prompt.cut(lead + "\n\n".join(f"{head}\n{body}" for (_, head, _), body in zip(blocks, bodies)), share)
