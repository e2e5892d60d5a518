"""Tool calls a model writes as text instead of the API's structured calls.

Qwen, Hermes and others write their calls in ``<tool_call>`` tags, and a server that does not parse
them passes the text on. They are read back here, written back in that form for the next round,
and kept out of what the user sees while the answer streams.
"""

from __future__ import annotations

import json
import re
from typing import Callable

from ..models.llm import ToolCall

MARK = "<tool_call>"

_TEXT_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*(?:</tool_call>|$)", re.DOTALL)
_CALL_START = re.compile(r'\{\s*"name"\s*:\s*"([^"]*)"\s*,\s*"(?:arguments|parameters)"')
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


def parse_text_calls(content: str) -> list[ToolCall]:
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


def calls_as_text(calls: list[ToolCall]) -> str:
    """Calls in the Hermes form the model's chat template would have written them in."""
    return "\n".join(
        f'<tool_call>\n{{"name": {json.dumps(c.name)}, "arguments": {c.arguments or "{}"}}}\n</tool_call>'
        for c in calls
    )


class VisibleText:
    """Streams the model's text to the user, but not a tool call written as text: a round that opens
    with ``{`` or a code fence is held until it ends, and a ``<tool_call>`` tag hides the rest."""

    def __init__(self, emit: Callable[[str], None]):
        self.emit, self.pending, self.hidden, self.text = emit, "", False, ""

    def feed(self, piece: str) -> None:
        if self.hidden:
            return
        self.pending += piece
        at = self.pending.find(MARK)
        if at >= 0:
            self._flush(self.pending[:at])
            self.pending, self.hidden = "", True
            return
        if not self.text and self.pending.lstrip()[:1] in ("", "{", "`"):
            return  # could be a bare JSON call: wait for the end of the round
        keep = next((k for k in range(len(MARK) - 1, 0, -1) if self.pending.endswith(MARK[:k])), 0)
        self._flush(self.pending[: len(self.pending) - keep])
        self.pending = self.pending[len(self.pending) - keep :]

    def close(self, is_call: bool) -> None:
        if not (self.hidden or is_call):
            self._flush(self.pending)
        self.pending = ""

    def _flush(self, text: str) -> None:
        if text:
            self.text += text
            self.emit(text)
