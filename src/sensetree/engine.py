"""The engine: one object that every interface (CLI, HTTP API, web UI, MCP) drives.

It is the composition root: a ``Context`` (``context.py``: the data dir, its settings, the storage,
the models, the reader and the writer lock) with the handlers bound (``handlers/``, one module per
area, each handler answering one operation of ``operations.py``) and the indexing runs. Every
operation takes one parameter object and returns one result type: ``engine.run(SearchParams("q"))``
is the search every interface makes; the handler itself (``handlers.search.search(engine, params)``)
is the same call, typed. Only one process writes to a data dir at a time; any number may search,
here or on other machines: ``Engine(index=URI)`` is a search node over an index it does not write.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from .context import Context
from .errors import SenseTreeError, WriterBusy
from .handlers import handler_for, indexing
from .handlers.indexing import Progress

__all__ = ["Engine", "SenseTreeError", "WriterBusy"]


class Engine(Context):
    def run(self, params: Any, **extra: Any) -> Any:
        """The answer of the operation that takes ``params`` (``operations.py``), from its handler; ``extra``
        (``on_progress``, the assistant's ``model``) goes to a handler that takes it. Bounds are the
        interfaces' to check (``Operation.run``)."""
        return handler_for(type(params))(self, params, **extra)

    def distribute(self, address: str) -> None:
        """Index on a Ray cluster from now on (``auto``, an address, or ``local`` to start one here): its
        workers prepare files and embed chunks, this process keeps the catalog and commits
        (``ingest/distributed.py``)."""
        from .ingest.distributed import RayPool

        self.pool.stop()
        self.pool = self.cluster = RayPool(address, self.settings, self.roots)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def index(
        self,
        on_update: Callable[[Progress], None] | None = None,
        stop: threading.Event | None = None,
        max_endpoint_wait: float | None = None,
        wait_for_lock: float = 0,
        interrupt: threading.Event | None = None,
    ) -> Progress:
        """One indexing run (``handlers.indexing.run``; ``engine.run(IndexParams(watch=True))`` keeps
        indexing what changes): scan every root, index what is queued, repair on damage and run again."""
        return indexing.run(self, on_update, stop, max_endpoint_wait, wait_for_lock, interrupt)
