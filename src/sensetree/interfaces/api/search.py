"""Search and the meaning tree (design §2, §3)."""

from __future__ import annotations

from typing import Any, Optional

from fastapi import APIRouter, Depends, Query

from ...filters import parse_filters
from .context import ApiContext, context

router = APIRouter()


TYPES = Query(None, description="only these types, comma-separated: pdf,docx,md,jpg (a type or an extension)")
AFTER = Query(None, description="only files modified on or after this day, YYYY-MM-DD")
BEFORE = Query(None, description="only files modified on or before this day, YYYY-MM-DD")


@router.get("/api/search", summary="Ranked files for a query (hybrid retrieval)")
def search(q: str = Query(..., max_length=10_000), scope: Optional[str] = None,
           limit: int = Query(20, ge=1, le=100), hybrid: Optional[bool] = None, rerank: Optional[bool] = None,
           type: Optional[str] = TYPES, modified_after: Optional[str] = AFTER, modified_before: Optional[str] = BEFORE,
           ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    filters = parse_filters(type, modified_after, modified_before)
    return ctx.engine.search(q, scope or None, limit, hybrid=hybrid, rerank=rerank, filters=filters).as_dict()


@router.get("/api/tree", summary="The meaning tree: relevance heat over the folders")
def tree(q: str = Query(..., max_length=10_000), scope: Optional[str] = None,
         limit: int = Query(400, ge=10, le=1000), type: Optional[str] = TYPES,
         modified_after: Optional[str] = AFTER, modified_before: Optional[str] = BEFORE,
         ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    node, notices = ctx.engine.tree(q, scope or None, limit, parse_filters(type, modified_after, modified_before))
    return {"tree": node.as_dict() if node else None, "notices": notices}
