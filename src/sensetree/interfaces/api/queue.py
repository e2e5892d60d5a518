"""Status, the indexing queue and what the user does with it: retry, ignore, index again."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends

from .bodies import OptionalPathBody, PathBody
from .context import ApiContext, context

router = APIRouter()
QUEUE_LIST_LIMIT = 200


@router.get("/api/status", summary="Roots, counts per status, models, index size, indexing progress")
def status(ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    return {**ctx.engine.status().as_dict(), "indexing": ctx.progress()}


@router.get("/api/queue", summary="Live progress, failures first with their errors, then what waits")
def queue(ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    return {"indexing": ctx.progress(), **ctx.engine.queue(QUEUE_LIST_LIMIT).as_dict()}


@router.post("/api/retry", summary="Requeue one failed file, or all of them")
def retry(body: OptionalPathBody = Body(default_factory=OptionalPathBody),
          ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    count = ctx.engine.retry(body.path)
    ctx.kick()
    return {"requeued": count}


@router.post("/api/ignore", summary="Leave one file, or every failed file, out of the index")
def ignore(body: OptionalPathBody = Body(default_factory=OptionalPathBody),
           ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    with ctx.exclusive():
        return {"ignored": ctx.engine.ignore(body.path)}


@router.post("/api/unignore", summary="Index an ignored path again")
def unignore(body: PathBody, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    path = ctx.engine.unignore(body.path)
    ctx.kick()
    return {"path": path}
