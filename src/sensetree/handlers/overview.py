"""What the engine says about itself: status, the queue, the phases' progress (``overview.py``)."""

from __future__ import annotations

from .. import overview
from ..answers import Phases, Queue, Status
from ..context import Context
from ..operations import QueueParams, StatusParams
from .registry import handles


@handles
def status(ctx: Context, params: StatusParams) -> Status:
    """Roots, counts per status, the two progress figures, the models in use, the index size, notices."""
    return ctx.storage.recovering(
        lambda: overview.status(
            ctx.data_dir,
            ctx.roots(),
            ctx.catalog,
            ctx.store,
            ctx.storage.size_bytes(),
            ctx.settings,
            ctx.models,
            ctx.notices,
            ctx.unconfirmed_change(),
        )
    )


@handles
def queue(ctx: Context, params: QueueParams) -> Queue:
    """Failed files with their errors, then what waits for each phase (the first ``limit`` of each)."""
    return overview.queue(ctx.catalog, ctx.ignored(), params.limit)


def phases(ctx: Context) -> Phases:
    """How far each phase is (a server's progress when it is not indexing)."""
    return overview.phases(ctx.catalog)
