"""The indexing pipeline, keyword first, meaning after: file -> text -> chunks -> store -> sense -> vectors.

Two phases share the catalog's queue (store/catalog.py):
1. **Keyword** (``keyword.py``): every pending file is extracted and chunked in worker
   processes and its text stored without vectors. It always goes first, so a new or changed
   file is findable by an exact word within seconds, even while hours of embedding remain.
   Pages that only OCR can read come in a pass of their own right after it.
2. **Semantic** (``semantic.py``): stored chunks get their sense and vectors, recent files
   first, in batches of a few seconds each.

``Indexer.run`` alternates between them until nothing is left, the stop flag is set (it
returns within a fraction of a second, keeping every commit made), or ``interrupt`` is set
(a watcher saw the disk change: the caller scans and runs again).
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Callable

from ..errors import SenseTreeError
from ..models.embeddings import Embedder
from ..store.catalog import Catalog
from ..store.chunks import ChunkStore
from .keyword import KeywordPhase
from .options import IndexOptions
from .pace import PACE_META, Pace, Power, lower_priority, read_power
from .pause import WAIT_META, IndexingPaused, wait_for_endpoint
from .progress import Progress
from .reuse import VectorReuse
from .semantic import SemanticPhase
from .sense import SenseWriter
from .workers import Pool, Stopped, call_interruptibly

__all__ = ["Indexer", "IndexingPaused", "IndexOptions", "Progress"]

log = logging.getLogger(__name__)

FOLD_AFTER_CHUNKS = 2_000  # a keyword round that stored this many folds them into the full-text index at once
OPTIMIZE_EVERY_CHUNKS = 20_000  # vectors written between two compactions: keeps both indexes' unindexed tails short
UNKNOWN_DIMENSION = 384  # the bundled models' vector size: a table made before the model answers starts with it
GUESSED_META = "vector_size_guessed"  # set while the table's size is that guess, until the model gives its own


class Indexer:
    def __init__(
        self,
        catalog: Catalog,
        store: ChunkStore,
        load_embedder: Callable[[], Embedder],
        senses: SenseWriter,
        options: IndexOptions,
        pool: Pool,
        reuse: VectorReuse | None = None,
        power: Callable[[], Power | None] = read_power,
    ):
        self.catalog, self.store, self.options = catalog, store, options
        self._load_embedder = load_embedder  # raises EndpointUnavailable while an endpoint is down
        self._embedder: Embedder | None = None
        self._progress = Progress()
        self._stop = threading.Event()
        self._notify: Callable[[Progress], None] = lambda p: None
        self.pace = Pace(options.on_battery, power, record=lambda state: catalog.set_meta(PACE_META, json.dumps(state)))
        self.keyword = KeywordPhase(catalog, store, pool, senses, options, self._dimension, self.refresh)
        self.semantic = SemanticPhase(
            catalog, store, self._embedder_for_run, senses, options.max_endpoint_wait, self.refresh, reuse
        )

    def run(
        self,
        progress: Progress | None = None,
        on_update: Callable[[Progress], None] | None = None,
        stop: threading.Event | None = None,
        interrupt: threading.Event | None = None,
    ) -> Progress:
        """Index the queue. Returns the figures; raises IndexingPaused if the endpoint stays down too long."""
        self._progress = progress = progress or Progress()
        self._stop = stop = stop or threading.Event()
        self._notify = notify = on_update or (lambda p: None)
        self.refresh(progress)
        if not self.options.low_priority:
            return self._run(progress, stop, notify, interrupt)
        return _on_low_priority_thread(lambda: self._run(progress, stop, notify, interrupt), stop)

    def _run(
        self,
        progress: Progress,
        stop: threading.Event,
        notify: Callable[[Progress], None],
        interrupt: threading.Event | None,
    ) -> Progress:
        since_optimize = 0
        try:
            while not stop.is_set():
                self.pace.between_steps(progress, stop, notify)
                stored_before = progress.chunks_left
                if self.keyword.run(progress, stop, notify):
                    if progress.chunks_left - stored_before >= FOLD_AFTER_CHUNKS:
                        call_interruptibly(self.store.upkeep.optimize, stop)  # findable through the index, not a scan
                    continue
                if interrupt is not None and interrupt.is_set():
                    break
                if self.keyword.run_ocr(progress, stop, notify, interrupt):
                    continue
                embedded = progress.embedding.count
                if not self.semantic.batch(progress, stop, notify):
                    break
                since_optimize += progress.embedding.count - embedded
                if since_optimize >= OPTIMIZE_EVERY_CHUNKS:
                    call_interruptibly(self.store.upkeep.optimize, stop)
                    since_optimize = 0
        except Stopped:
            pass  # every batch committed so far is kept; the rest stays in the queue
        progress.phase = progress.current = ""
        notify(progress)
        return progress

    def refresh(self, progress: Progress) -> None:
        """The two progress figures, from the catalog: true whoever else changed it."""
        progress.files, progress.keyword, progress.semantic = self.catalog.files.phase_counts()
        progress.chunks_left = self.catalog.files.chunks_to_embed()

    def _embedder_for_run(self) -> Embedder:
        if self._embedder is None:
            self._embedder = wait_for_endpoint(
                self._load_embedder,
                self._progress,
                self.options.max_endpoint_wait,
                self._stop,
                self._notify,
                self.catalog.set_meta,
                cleared=True,
            )
        return self._embedder

    def _dimension(self) -> int:
        """The vector size of the table: its own; for the first write, which creates it, the model's if it loads
        at once, else the bundled models', said in ``GUESSED_META`` (the model's own size replaces it before the
        first vector: ``handlers.indexing``). The keyword phase never waits for the model (design §7.2)."""
        known = self.store.table.dimension
        if known:
            return known
        if self._embedder is None:
            try:
                self._embedder = self._load_embedder()
            except SenseTreeError as exc:  # the semantic phase waits for it, or says why it cannot
                log.warning("the keyword phase goes on without the embedding model: %s", exc)
                self.catalog.set_meta(GUESSED_META, str(UNKNOWN_DIMENSION))
                return UNKNOWN_DIMENSION
            self.catalog.set_meta(WAIT_META, "")  # it answers: nothing waits for it (``wait_for_endpoint``)
        self.catalog.set_meta(GUESSED_META, None)
        return self._embedder.dimension


def _on_low_priority_thread(work: Callable[[], Progress], stop: threading.Event) -> Progress:
    """Run ``work`` on a thread of its own at low priority, so the caller's thread keeps its
    priority afterwards (a Linux thread cannot raise its niceness back once lowered)."""
    outcome: dict[str, object] = {}

    def body() -> None:
        lower_priority(thread_only=True)  # the user's work first; searches run on other threads
        try:
            outcome["progress"] = work()
        except BaseException as exc:  # handed to the caller, who raises it as its own
            outcome["error"] = exc

    worker = threading.Thread(target=body, name="sensetree-indexing", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.5)
    except BaseException:  # Ctrl-C in the caller: stop at the next commit, then pass it on
        stop.set()
        worker.join()
        raise
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["progress"]  # type: ignore[return-value]
