"""What every route works with: the engine, the background indexer (if this process indexes), the chats."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from fastapi import Request

from ...chat.sessions import ChatSessions
from ...engine import Engine
from ...handlers.overview import phases
from ..background import BackgroundIndexer


@dataclass
class ApiContext:
    engine: Engine
    indexer: BackgroundIndexer | None  # None: another process indexes
    chats: ChatSessions

    def kick(self) -> None:
        """Something was queued: index soon."""
        if self.indexer:
            self.indexer.kick()

    def exclusive(self) -> AbstractContextManager:
        """Run an action that takes the writer lock: the background round steps aside meanwhile."""
        return self.indexer.paused() if self.indexer else nullcontext()

    def progress(self) -> dict[str, Any]:
        if self.indexer:
            return self.indexer.snapshot()
        return {
            **phases(self.engine).as_dict(),
            "running": False,
            "failed": 0,
            "current": "",
            "phase": "",
            "paused": "indexing runs in another process",
            "stages": {},
        }


def context(request: Request) -> ApiContext:
    """The FastAPI dependency that hands a route its context."""
    return request.app.state.context
