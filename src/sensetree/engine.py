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
from .handlers import handler_for
from .handlers.indexing import index_once
from .ingest.indexer import IndexingPaused, Progress
from .ingest.watcher import watch

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

    def index(self, on_update: Callable[[Progress], None] | None = None, stop: threading.Event | None = None,
              max_endpoint_wait: float | None = None, wait_for_lock: float = 0,
              interrupt: threading.Event | None = None) -> Progress:
        """Scan every root and index what is queued (keyword first, then vectors), under the writer lock.

        Returns within moments of ``stop`` being set, and early when ``interrupt`` is (the disk changed).
        A damaged catalog or vector table met on the way is repaired, and the run made once more.
        """
        return self.storage.recovering(lambda: index_once(self, on_update, stop or threading.Event(),
                                                          max_endpoint_wait, wait_for_lock, interrupt))

    def watch(self, on_update: Callable[[Progress], None] | None = None, stop: threading.Event | None = None,
              on_round: Callable[[Progress], None] | None = None) -> None:
        """Index, then keep indexing whatever changes under the roots until ``stop`` is set.

        The watcher starts before the first round, so a change made during it is not missed. A
        change ends the semantic work of a round early: the next round scans, stores the new text
        (keyword first), then goes on embedding. Each round waits as long as it takes for a down
        embedding endpoint to come back.
        """
        stop = stop or threading.Event()
        changed = threading.Event()

        def index_round() -> None:
            changed.clear()
            try:
                progress = self.index(on_update, stop, max_endpoint_wait=float("inf"), interrupt=changed)
            except IndexingPaused:
                if stop.is_set():
                    return
                raise
            if on_round:
                on_round(progress)

        with self.writer():
            watch(self.roots(), str(self.data_dir), index_round, stop, first_round=True, changed=changed,
                  polling=self.settings["indexing.watch_polling"])
