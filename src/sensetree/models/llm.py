"""A minimal client for OpenAI-compatible chat endpoints (Ollama, LM Studio, llama.cpp, remote APIs)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import httpx

from ..errors import ModelError


class LLMError(ModelError):
    """The chat endpoint is unreachable or answered with an error; the message says which."""


class ToolsUnsupported(LLMError):
    """The server refused a request because of its tools: the model (or server) cannot call tools."""


# What servers say when the model cannot take tools: Ollama "does not support tools", llama.cpp
# "tools param requires --jinja flag", vLLM "auto tool choice requires --enable-auto-tool-choice"...
_TOOLS_REFUSED = re.compile(r"tool|function.?call", re.IGNORECASE)


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it


@dataclass
class ChatTurn:
    """What one streamed completion produced."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    chunks: int = 0  # content deltas received; one per token on llama.cpp-style servers
    # what a llama.cpp server reports of its work (``timings``); None where the server says nothing
    prompt_tokens: int | None = None  # prompt tokens it had to read
    cached_tokens: int | None = None  # prompt tokens it took from its cache instead
    prompt_per_s: float | None = None  # its reading speed


class ChatClient:
    def __init__(self, base_url: str, model: str, api_key: str = "", timeout: float = 60.0):
        self.base_url = base_url.rstrip("/")
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)

    def close(self) -> None:
        self._client.close()

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int = 400,
        temperature: float = 0.2,
        no_reasoning: bool = False,
    ) -> str:
        """One non-streamed answer.

        ``no_reasoning`` asks thinking models to skip their reasoning (indexing calls must be
        fast); a server that rejects those fields is asked again without them.
        """
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": False,
        }
        if no_reasoning:
            extra = {"reasoning_effort": "none", "chat_template_kwargs": {"enable_thinking": False}}
            response = self._post({**body, **extra})
            if response.status_code == 400:
                response = self._post(body)
        else:
            response = self._post(body)
        if response.status_code >= 400:
            raise LLMError(f"chat endpoint {self.base_url} answered {response.status_code}: {response.text[:200]}")
        try:
            return response.json()["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"chat endpoint {self.base_url} sent a malformed answer: {exc}") from exc

    def stream(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str = "auto",
        max_tokens: int = 512,
        temperature: float = 0.2,
        on_text: Callable[[str], None] | None = None,
    ) -> ChatTurn:
        """One streamed completion: text goes to ``on_text`` as it arrives, tool calls are assembled.

        ``tool_choice="none"`` still lists the tools but forbids calling them, which keeps the prompt
        identical to the previous round's (a local server then reuses its cache). A refusal that
        names tools raises ``ToolsUnsupported`` so the caller can ask again without them.
        """
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": True,
        }
        if tools:
            body |= {"tools": tools, "tool_choice": tool_choice}
        turn = ChatTurn()
        calls: dict[int, ToolCall] = {}
        try:
            with self._client.stream("POST", self.base_url + "/chat/completions", json=body) as response:
                if response.status_code >= 400:
                    text = response.read().decode("utf-8", "replace")[:300]
                    error = ToolsUnsupported if tools and _TOOLS_REFUSED.search(text) else LLMError
                    raise error(f"chat endpoint {self.base_url} answered {response.status_code}: {text}")
                for line in response.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    self._absorb(json.loads(data), turn, calls, on_text)
        except httpx.TimeoutException as exc:
            raise LLMError(self._timed_out()) from exc
        except httpx.HTTPError as exc:
            raise LLMError(f"chat endpoint {self.base_url} unreachable: {exc}") from exc
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise LLMError(f"chat endpoint {self.base_url} sent a malformed stream: {exc!r}") from exc
        turn.tool_calls = [calls[i] for i in sorted(calls)]
        return turn

    @staticmethod
    def _absorb(
        event: dict[str, Any], turn: ChatTurn, calls: dict[int, ToolCall], on_text: Callable[[str], None] | None
    ) -> None:
        if "error" in event:
            raise LLMError(f"the model failed mid-answer: {event['error']}")
        timings = event.get("timings")
        if isinstance(timings, dict):
            turn.prompt_tokens, turn.cached_tokens = timings.get("prompt_n"), timings.get("cache_n")
            turn.prompt_per_s = timings.get("prompt_per_second")
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                turn.content += delta["content"]
                turn.chunks += 1
                if on_text:
                    on_text(delta["content"])
            for part in delta.get("tool_calls") or []:
                call = calls.setdefault(part.get("index", len(calls)), ToolCall("", "", ""))
                call.id = part.get("id") or call.id
                function = part.get("function") or {}
                call.name += function.get("name") or ""
                call.arguments += function.get("arguments") or ""
            turn.finish_reason = choice.get("finish_reason") or turn.finish_reason

    def context_window(self, fallback: int) -> tuple[int, str]:
        """The context size in tokens, and where it came from.

        llama.cpp's ``/props`` gives the served size. Ollama's ``/api/show`` gives ``num_ctx`` when the
        model sets it, else only the trained length, while it serves a smaller default: that length is
        then capped at ``fallback``. Other servers (OpenAI, llama-cpp-python, LM Studio) say nothing.
        """
        root = re.sub(r"/v1$", "", self.base_url)
        try:
            props = self._client.get(root + "/props", timeout=5.0)
            if props.status_code == 200:
                n_ctx = (props.json().get("default_generation_settings") or {}).get("n_ctx")
                if isinstance(n_ctx, int) and n_ctx > 0:
                    return n_ctx, "the server's /props"
            show = self._client.post(root + "/api/show", json={"model": self.model}, timeout=5.0)
            if show.status_code == 200:
                info = show.json()
                configured = re.search(r"num_ctx\s+(\d+)", info.get("parameters") or "")
                if configured:
                    return int(configured.group(1)), "the model's num_ctx (Ollama)"
                lengths = [
                    v
                    for k, v in (info.get("model_info") or {}).items()
                    if k.endswith(".context_length") and isinstance(v, int)
                ]
                if lengths:
                    return min(lengths[0], fallback), (
                        f"Ollama: trained for {lengths[0]}, served size unknown, capped at chat.context_window"
                    )
        except (httpx.HTTPError, ValueError, AttributeError):
            pass
        return fallback, "chat.context_window (the server does not say)"

    def _timed_out(self) -> str:
        return f"chat endpoint {self.base_url} did not answer within {self._client.timeout.read:g} s"

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        try:
            return self._client.post(self.base_url + "/chat/completions", json=body)
        except httpx.TimeoutException as exc:
            raise LLMError(self._timed_out()) from exc
        except httpx.HTTPError as exc:
            raise LLMError(f"chat endpoint {self.base_url} unreachable: {exc}") from exc
