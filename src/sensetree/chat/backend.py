"""Which model answers: the configured OpenAI-compatible endpoint, else the embedded model."""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from ..engine import Engine
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
from . import prompt
from .agent import Agent, ChatError
from .tools import SCHEMAS

NOT_SET_UP = (
    "No chat model is set up. Either install the embedded one:\n"
    f"  {INSTALL_HINT}\n"
    "or use a server you run (Ollama, LM Studio, llama.cpp, a remote API):\n"
    "  sensetree config set chat.base_url http://localhost:11434/v1\n"
    "  sensetree config set chat.model llama3.2"
)


@dataclass
class Backend:
    client: ChatClient
    context_window: int
    window_source: str
    label: str  # what the user is told is answering
    max_tokens: int
    first_token_s: float = 0.0
    tools_when_needed: bool = False  # see Agent
    meter: prompt.PromptMeter = field(default_factory=prompt.PromptMeter)  # shared by its conversations

    def agent(self, engine: Engine, scope: str | None = None) -> Agent:
        return Agent(
            engine,
            self.client,
            scope=scope,
            context_window=self.context_window,
            window_source=self.window_source,
            max_tokens=self.max_tokens,
            meter=self.meter,
            first_token_s=self.first_token_s,
            tools_when_needed=self.tools_when_needed,
        )

    def warm_up(self) -> None:
        """Read the system prompt, with the tools and without, once: the server caches both for every
        question, and says how fast it reads, which sizes the first question's excerpts."""
        for tools in (SCHEMAS, None):
            sent = prompt.system_prompt(bool(tools)) + (json.dumps(tools) if tools else "")
            started = time.perf_counter()
            turn = self.client.stream(
                [
                    {"role": "system", "content": prompt.system_prompt(bool(tools))},
                    {"role": "user", "content": "Hello"},
                ],
                tools=tools,
                max_tokens=1,
            )
            if turn.prompt_per_s is None:  # llama-cpp-python says nothing: time it, on the estimated length
                turn.prompt_tokens = self.meter.tokens(sent)
                turn.prompt_per_s = turn.prompt_tokens / max(time.perf_counter() - started, 1e-3)
            self.meter.observe(len(sent), turn.prompt_tokens, turn.cached_tokens, turn.prompt_per_s)


@contextmanager
def connect(engine: Engine) -> Iterator[Backend]:
    """A client for the configured endpoint, or for the embedded model, started here and stopped at the end."""
    s = engine.settings
    if s["chat.base_url"]:
        client = ChatClient(s["chat.base_url"], s["chat.model"], s["chat.api_key"], s["chat.timeout"])
        try:
            window, where = client.context_window(s["chat.context_window"])
            yield Backend(
                client,
                window,
                where,
                f"{s['chat.model'] or 'default model'} at {s['chat.base_url']}",
                s["chat.max_tokens"],
                s["chat.first_token_s"],
            )
        finally:
            client.close()
        return
    name = s["chat.model"] or DEFAULT_MODEL
    if s["chat.runtime"] and s["chat.runtime"] not in RUNTIMES:
        raise ChatError(
            f"unknown chat.runtime {s['chat.runtime']!r}; use one of {', '.join(RUNTIMES)}, "
            "or empty for the first installed"
        )
    try:
        gguf = model_file(name, engine.models_dir)
    except LocalModelError as exc:
        raise ChatError(f"{exc}. To use a server instead: sensetree config set chat.base_url URL") from None
    runtime = pick_runtime(s["chat.runtime"])
    if gguf is None or runtime is None:
        raise ChatError(NOT_SET_UP)
    try:
        with LocalServer(gguf, name, runtime, n_ctx=s["chat.context_window"], threads=s["chat.threads"]) as server:
            client = ChatClient(server.url, name, timeout=s["chat.timeout"])
            try:
                backend = Backend(
                    client,
                    server.n_ctx,
                    "the embedded model's n_ctx",
                    server.label,
                    s["chat.max_tokens"],
                    s["chat.first_token_s"],
                    tools_when_needed=True,
                )
                backend.warm_up()
                yield backend
            finally:
                client.close()
    except (LocalModelError, LLMError) as exc:
        raise ChatError(str(exc)) from None
