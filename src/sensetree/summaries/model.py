"""The chat model a summary is written with: the configured OpenAI-compatible endpoint, else the
embedded model, started for the summary and stopped after it. A process that already holds one
(the web app's assistant) lends it instead (``Engine.chat_models``)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from ..models.llm import ChatClient, LLMError
from ..models.local_llm import (
    DEFAULT_MODEL,
    INSTALL_HINT,
    RUNTIMES,
    LocalModelError,
    LocalServer,
    model_file,
    pick_runtime,
)


@dataclass
class ChatModel:
    client: ChatClient
    context_window: int  # tokens
    max_tokens: int  # the most one answer may take
    label: str  # what the user is told is writing
    chars_per_token: float = 3.0  # rough, on the safe side (as the assistant's budget starts)


NOT_SET_UP = (
    "no chat model is set up: install the embedded one ({hint}), or use a server you run: "
    "sensetree config set chat.base_url http://localhost:11434/v1"
)


@contextmanager
def open_chat_model(settings: Any, models_dir: Any) -> Iterator[ChatModel]:
    """The model the chat settings name; ``LLMError`` when it cannot be had (what to do in the message)."""
    s = settings
    if s["chat.base_url"]:
        client = ChatClient(s["chat.base_url"], s["chat.model"], s["chat.api_key"], s["chat.timeout"])
        try:
            window, _ = client.context_window(s["chat.context_window"])
            yield ChatModel(
                client, window, s["chat.max_tokens"], f"{s['chat.model'] or 'default model'} at {s['chat.base_url']}"
            )
        finally:
            client.close()
        return
    name = s["chat.model"] or DEFAULT_MODEL
    if s["chat.runtime"] and s["chat.runtime"] not in RUNTIMES:
        raise LLMError(f"unknown chat.runtime {s['chat.runtime']!r}; use one of {', '.join(RUNTIMES)}")
    try:
        gguf = model_file(name, models_dir)
    except LocalModelError as exc:
        raise LLMError(f"{exc}. To use a server instead: sensetree config set chat.base_url URL") from None
    runtime = pick_runtime(s["chat.runtime"])
    if gguf is None or runtime is None:
        raise LLMError(NOT_SET_UP.format(hint=INSTALL_HINT))
    with LocalServer(gguf, name, runtime, n_ctx=s["chat.context_window"], threads=s["chat.threads"]) as server:
        client = ChatClient(server.url, name, timeout=s["chat.timeout"])
        try:
            yield ChatModel(client, server.n_ctx, s["chat.max_tokens"], server.label)
        finally:
            client.close()
