"""One indexing run under the writer lock (``Engine.index`` repairs and runs it again on damage):
scan every root, then index what is queued, keyword first, then vectors (``ingest/indexer.py``)."""

from __future__ import annotations

import threading
from typing import Callable

from ..context import Context
from ..errors import SenseTreeError
from ..ingest.extract import is_archive
from ..ingest.indexer import Indexer, Progress
from ..ingest.options import index_options
from ..ingest.reuse import vector_reuse
from ..ingest.sense import sense_writer
from ..models.embeddings import Embedder, EmbeddingError, EndpointUnavailable


def index_once(ctx: Context, on_update: Callable[[Progress], None] | None, stop: threading.Event,
               max_endpoint_wait: float | None, wait_for_lock: float,
               interrupt: threading.Event | None) -> Progress:
    with ctx.writer(wait_for_lock):  # a search node is refused here
        storage = ctx.writable()
        storage.reconcile_if_behind()
        storage.follow_location()
        ctx.store.table.reopen()  # the last writer may have been another process that dropped the table
        storage.recovering(storage.check_vectors)  # or someone deleted it
        ctx.refuse_wipe_on_a_guess()
        storage.match_model(ctx.models.expected_identity())
        ctx.scan()
        storage.reread_archives_once(is_archive)  # members now follow the disk's rules (issue 33)
        options = index_options(ctx.settings)
        if max_endpoint_wait is not None:
            options.max_endpoint_wait = max_endpoint_wait
        with vector_reuse(ctx.data_dir, ctx.settings["indexing.reuse_vectors"], ctx.notices.add) as reuse:
            indexer = Indexer(ctx.catalog, ctx.store, lambda: indexing_embedder(ctx), sense_writer(ctx.settings),
                              options, ctx.pool, reuse)
            progress = indexer.run(Progress(), on_update=on_update, stop=stop, interrupt=interrupt)
        if not stop.is_set():
            ctx.store.upkeep.optimize()
        return progress


def indexing_embedder(ctx: Context) -> Embedder:
    """The embedder for a run: a down endpoint is worth waiting for; any other problem is the user's to fix."""
    try:
        embedder: Embedder
        if ctx.cluster is not None:
            embedder = ctx.cluster.embedder(ctx.store.table.dimension)
        else:
            embedder = ctx.models.embedder_for(ctx.store.table.dimension)
    except EndpointUnavailable:
        raise
    except EmbeddingError as exc:
        raise SenseTreeError(f"the embedding model is not available ({exc}); files stay pending") from exc
    ctx.catalog.set_meta("embedding_identity", embedder.identity)
    return embedder
