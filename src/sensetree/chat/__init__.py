"""The retrieval-grounded chat assistant (SPEC §6)."""

from .agent import Agent, Answer, ChatError, Step, answer
from .backend import Backend, connect

__all__ = ["Agent", "Answer", "Backend", "ChatError", "Step", "answer", "connect"]
