"""The retrieval-grounded chat assistant (design §6)."""

from .agent import Agent, Answer, ChatError, Step
from .backend import Backend, answer, connect

__all__ = ["Agent", "Answer", "Backend", "ChatError", "Step", "answer", "connect"]
