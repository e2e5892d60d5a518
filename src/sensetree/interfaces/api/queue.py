"""Status and the indexing queue, with the live progress of this server's own indexing (retry, ignore and
unignore are engine operations: ``operations.py``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from .context import ApiContext, context

router = APIRouter()
QUEUE_LIST_LIMIT = 200


@router.get("/api/status", summary="Roots, counts per status, models, index size, indexing progress")
def status(ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    return {**ctx.engine.status().as_dict(), "indexing": ctx.progress()}


@router.get("/api/queue", summary="Live progress, failures first with their errors, then what waits")
def queue(ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    return {"indexing": ctx.progress(), **ctx.engine.queue(QUEUE_LIST_LIMIT).as_dict()}
