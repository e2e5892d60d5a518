"""Indexing: the ``index`` operation (one run, or with ``watch`` a round at every change until stopped), one
run under the writer lock (``Engine.index`` repairs and runs it again on damage: scan every root, then index
what is queued, keyword first, then vectors: ``ingest/indexer.py``), and the disk watcher a server's own
indexing follows (``interfaces/background.py``)."""

from __future__ import annotations

import threading
from typing import Callable

from ..answers import Indexed
from ..context import Context
from ..errors import SenseTreeError
from ..ingest.extract import is_archive
from ..ingest.indexer import GUESSED_META, Indexer, IndexingPaused, Progress
from ..ingest.options import index_options
from ..ingest.reuse import vector_reuse
from ..ingest.sense import sense_writer
from ..ingest.watcher import watch
from ..models.embeddings import Embedder, EmbeddingError, EndpointUnavailable
from ..operations import IndexParams
from .registry import handles

__all__ = ["Indexed", "IndexingPaused", "Progress", "index", "run", "watch_roots"]


@handles
def index(
    ctx: Context,
    params: IndexParams,
    on_progress: Callable[[Progress | Indexed], None] | None = None,
    stop: threading.Event | None = None,
) -> Indexed:
    """Index every root once; with ``watch``, then keep indexing whatever changes under them until ``stop``
    is set. ``on_progress`` hears the live figures as they change and, under ``watch``, each round's
    ``Indexed`` as it ends; the last one is returned.

    The watcher starts before the first round, so a change made during it is not missed. A change ends
    the semantic work of a round early: the next round scans, stores the new text (keyword first), then
    goes on embedding. Each round waits as long as it takes for a down embedding endpoint to come back.
    """
    stop = stop or threading.Event()
    if not params.watch:
        ctx.refuse_unconfirmed_change(params.confirm)  # a run that ends can say so; one that watches holds the change
        return indexed(run(ctx, on_progress, stop, confirm=params.confirm), stop)
    changed = threading.Event()
    last = indexed(Progress(), stop)

    def index_round() -> None:
        nonlocal last
        changed.clear()
        try:
            progress = run(
                ctx, on_progress, stop, max_endpoint_wait=float("inf"), interrupt=changed, confirm=params.confirm
            )
        except IndexingPaused:
            if stop.is_set():
                return
            raise
        last = indexed(progress, stop)
        if on_progress:
            on_progress(last)

    with ctx.writer():
        watch_roots(ctx, index_round, stop, first_round=True, changed=changed)
    return last


def indexed(progress: Progress, stop: threading.Event) -> Indexed:
    """What a run did, as ``sensetree index --json`` prints it."""
    return Indexed(
        files=progress.files,
        keyword_ready=progress.keyword,
        semantic=progress.semantic,
        chunks_embedded=progress.embedding.count,
        chunks_left=progress.chunks_left,
        failed=progress.failed,
        stopped=stop.is_set(),
        seconds=round(progress.elapsed, 2),
    )


def watch_roots(
    ctx: Context,
    on_change: Callable[[], None],
    stop: threading.Event,
    first_round: bool = False,
    changed: threading.Event | None = None,
    roots: list[str] | None = None,
) -> None:
    """Call ``on_change`` once changes under the roots (or ``roots``) have settled, until ``stop``
    (``ingest/watcher.py``); ``OSError`` when the system refuses to watch (inotify limits)."""
    watch(
        ctx.roots() if roots is None else roots,
        str(ctx.data_dir),
        on_change,
        stop,
        first_round=first_round,
        changed=changed,
        polling=ctx.settings["indexing.watch_polling"],
    )


def run(
    ctx: Context,
    on_update: Callable[[Progress], None] | None = None,
    stop: threading.Event | None = None,
    max_endpoint_wait: float | None = None,
    wait_for_lock: float = 0,
    interrupt: threading.Event | None = None,
    confirm: bool = False,
) -> Progress:
    """Scan every root and index what is queued (keyword first, then vectors), under the writer lock.

    Returns within moments of ``stop`` being set, and early when ``interrupt`` is (the disk changed).
    A damaged catalog or vector table met on the way is repaired, and the run made once more. A settings
    change that would wipe the index is made only when ``confirm``; else the index keeps its model
    (``Context.follow_model``).
    """
    return ctx.storage.recovering(
        lambda: _index_once(
            ctx, on_update, stop or threading.Event(), max_endpoint_wait, wait_for_lock, interrupt, confirm
        )
    )


def _index_once(
    ctx: Context,
    on_update: Callable[[Progress], None] | None,
    stop: threading.Event,
    max_endpoint_wait: float | None,
    wait_for_lock: float,
    interrupt: threading.Event | None,
    confirm: bool,
) -> Progress:
    with ctx.writer(wait_for_lock):  # a search node is refused here
        storage = ctx.writable()
        storage.reconcile_if_behind()
        storage.follow_location()
        ctx.store.table.reopen()  # the last writer may have been another process that dropped the table
        storage.recovering(storage.check_vectors)  # or someone deleted it
        ctx.follow_model(confirm)
        if ctx.store.upkeep.unanalysed():  # an earlier version's table: its keyword columns before anything else
            storage.recovering(ctx.store.upkeep.build_fts_index)
        ctx.scan()
        storage.reread_archives_once(is_archive)  # members now follow the disk's rules (issue 33)
        options = index_options(ctx.settings)
        if max_endpoint_wait is not None:
            options.max_endpoint_wait = max_endpoint_wait
        with vector_reuse(ctx.data_dir, ctx.settings["indexing.reuse_vectors"], ctx.notices.add) as reuse:
            indexer = Indexer(
                ctx.catalog,
                ctx.store,
                lambda: indexing_embedder(ctx),
                sense_writer(ctx.settings),
                options,
                ctx.pool,
                reuse,
            )
            progress = indexer.run(Progress(), on_update=on_update, stop=stop, interrupt=interrupt)
        if not stop.is_set():
            ctx.store.upkeep.optimize()
        return progress


def indexing_embedder(ctx: Context) -> Embedder:
    """The embedder for a run: a down endpoint is worth waiting for; any other problem is the user's to fix."""
    cluster = ctx.cluster

    def load(dimension: int | None) -> Embedder:
        return cluster.embedder(dimension) if cluster is not None else ctx.models.embedder_for(dimension)

    try:
        if ctx.catalog.meta(GUESSED_META):  # the table was made while the model was away: it takes the model's size
            ctx.store.writes.resize(load(None).dimension)
            ctx.catalog.set_meta(GUESSED_META, None)
        embedder = load(ctx.store.table.dimension)  # refused when the table holds vectors of another size
    except EndpointUnavailable:
        raise
    except EmbeddingError as exc:
        raise SenseTreeError(f"the embedding model is not available ({exc}); files stay pending") from exc
    stored = ctx.catalog.meta("embedding_identity")
    if stored and stored != embedder.identity and ctx.store.table.count() > 0:  # Ray's workers load the settings'
        raise SenseTreeError(
            f"the embedder is {embedder.identity} but the index was made with {stored}, and no change of model "
            "was confirmed (`sensetree status`); two models' vectors never mix: files stay pending"
        )
    ctx.catalog.set_meta("embedding_identity", embedder.identity)
    return embedder
