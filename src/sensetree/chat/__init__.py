"""The retrieval-grounded chat assistant (design §6)."""

from .agent import Agent, Answer, ChatError, Step
from .backend import Backend, connect
from .sessions import AnswerStopped, ChatSessions

__all__ = ["Agent", "Answer", "AnswerStopped", "Backend", "ChatError", "ChatSessions", "Step", "connect"]
