"""The one way a question is asked (``AskParams``): the web app's ``POST /api/chat``, ``sensetree ask`` and
``sensetree chat`` in a terminal all ask here; one model backend, many conversations.

The backend (the embedded model's server, or a client for the configured endpoint) starts on
the first question and stays up (in a command, until it closes the sessions); a settings change
closes it so the next question uses the new one. A local model answers one question at a time, so
questions take turns. The answer streams as typed events: the conversation it is in (``on_start``),
the model's tokens, the steps (``Step``: a search, a file read), then the ``Answer``.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from contextlib import ExitStack, contextmanager
from typing import Callable, Iterator, TypeVar

from .. import paths
from ..engine import Engine
from ..errors import Interrupted
from ..operations import AskParams
from ..summaries import ChatModel
from .agent import Agent, Answer, Step
from .backend import Backend, connect

MAX_CONVERSATIONS = 50
T = TypeVar("T")


class AnswerStopped(Interrupted):
    """The person stopped the answer (closed the stream); the model call is cut off."""


class ChatSessions:
    def __init__(self, engine: Engine):
        self.engine = engine
        self._stack: ExitStack | None = None
        self._backend: Backend | None = None
        self._conversations: OrderedDict[str, Agent] = OrderedDict()
        self._turn = threading.Lock()

    def backend(self) -> Backend:
        if self._backend is None:
            stack = ExitStack()
            try:
                self._backend = stack.enter_context(connect(self.engine))
            except BaseException:
                stack.close()
                raise
            self._stack = stack
        return self._backend

    def ask(
        self,
        params: AskParams,
        on_start: Callable[[str, str], None] | None = None,
        on_token: Callable[[str], None] | None = None,
        on_step: Callable[[Step], None] | None = None,
        stopped: threading.Event | None = None,
    ) -> Answer:
        """Answer ``params.question`` in ``params.conversation`` (a new one when unknown or when the scope
        changed), within ``params.scope``; ``on_start`` hears the conversation's id and the model's label.

        Setting ``stopped`` ends the answer at its next token or step by raising AnswerStopped,
        which closes the model's stream so that a local model stops generating and frees its turn;
        the conversation keeps no trace of the stopped question.
        """
        stopped = stopped or threading.Event()

        def unless_stopped(callback: Callable[[T], None] | None) -> Callable[[T], None]:
            def relay(value: T) -> None:
                if stopped.is_set():
                    raise AnswerStopped
                if callback is not None:
                    callback(value)

            return relay

        scope, conversation = params.scope or None, params.conversation

        with self._turn:
            if stopped.is_set():  # stopped while waiting for its turn
                raise AnswerStopped
            backend = self.backend()
            agent = self._conversations.get(conversation) if conversation else None
            if conversation is None or agent is None or agent.scope != (paths.normalize(scope) if scope else None):
                conversation = secrets.token_hex(8)
                agent = backend.agent(self.engine, scope)
                self._conversations[conversation] = agent
                while len(self._conversations) > MAX_CONVERSATIONS:
                    self._conversations.popitem(last=False)
            self._conversations.move_to_end(conversation)
            if on_start is not None:
                on_start(conversation, backend.label)
            return agent.answer(params.question, on_token=unless_stopped(on_token), on_step=unless_stopped(on_step))

    @contextmanager
    def model_turn(self) -> Iterator[ChatModel]:
        """The assistant's model lent to a summary, which takes its turn like a question (``Engine.chat_models``)."""
        with self._turn:
            backend = self.backend()
            yield ChatModel(backend.client, backend.context_window, backend.max_tokens, backend.label)

    def reset(self) -> None:
        """Forget the backend and the conversations (the chat settings changed)."""
        with self._turn:
            self.close()

    def __enter__(self) -> ChatSessions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._stack is not None:
            self._stack.close()
        self._stack, self._backend = None, None
        self._conversations.clear()
