"""What the user chose to index (``ingest/choices.py``): the roots, folders as one block, pinned
senses, files retried, read again, ignored. A search node refuses every change (``Context.choose``)."""

from __future__ import annotations

from .. import paths
from ..answers import FolderMode, Ignored, Requeued, RootAdded, RootRemoved, Roots, Sense, TakenBack
from ..context import Context
from ..operations import (
    AddRootParams,
    FolderModeParams,
    IgnoreParams,
    PinParams,
    ReindexParams,
    RemoveRootParams,
    RetryParams,
    RootsParams,
    SenseParams,
    UnignoreParams,
)
from .registry import handles


@handles
def roots(ctx: Context, params: RootsParams) -> Roots:
    return Roots(ctx.roots())


@handles
def add(ctx: Context, params: AddRootParams) -> RootAdded:
    return RootAdded(ctx.choose().add_root(params.path))


@handles
def remove(ctx: Context, params: RemoveRootParams) -> RootRemoved:
    return RootRemoved(ctx.choose().remove_root(params.path))


@handles
def folder_mode(ctx: Context, params: FolderModeParams) -> FolderMode:
    return FolderMode(ctx.choose().set_block(params.path, params.mode), params.mode)


@handles
def pin(ctx: Context, params: PinParams) -> Sense:
    """Pin a file's sense (a file inside the roots); the next indexing run re-indexes the file with it."""
    ctx.reader().check(params.path)
    ctx.choose().pin_sense(params.path, params.sense)
    return sense(ctx, SenseParams(params.path))


@handles
def sense(ctx: Context, params: SenseParams) -> Sense:
    stored = ctx.choices.sense_of(params.path)
    return Sense(
        paths.normalize(params.path),
        stored.text if stored else None,
        stored.source if stored else None,
        bool(stored and stored.pinned),
    )


@handles
def retry(ctx: Context, params: RetryParams) -> Requeued:
    return Requeued(ctx.choose().retry(params.path))


@handles
def ignore(ctx: Context, params: IgnoreParams) -> Ignored:
    return Ignored(ctx.choose().ignore(params.path))


@handles
def unignore(ctx: Context, params: UnignoreParams) -> TakenBack:
    return TakenBack(ctx.choose().unignore(params.path))


@handles
def reindex(ctx: Context, params: ReindexParams) -> Requeued:
    return Requeued(ctx.choose().reindex(params.path))
