"""One ``GET /api/<name>`` route per engine operation (``operations.py``): the query parameters,
their bounds and help come from the operation's parameter object; the answer is its result's JSON."""

from __future__ import annotations

import inspect
from typing import Any, Optional

from fastapi import APIRouter, Depends, Query

from ...operations import OPERATIONS, Operation, Param
from .context import ApiContext, context

router = APIRouter()


def _route(op: Operation):
    def answer(ctx: ApiContext = Depends(context), **values: Any) -> dict[str, Any]:
        return op.run(ctx.engine, op.params(**values)).as_dict()

    answer.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        *(_query_parameter(p) for p in op.fields()),
        inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, default=Depends(context), annotation=ApiContext)])
    answer.__name__ = op.name
    return answer


def _query_parameter(param: Param) -> inspect.Parameter:
    doc = param.doc
    declared = Query(... if param.required else param.default, alias=doc.http, description=doc.help, ge=doc.ge,
                     le=doc.le, max_length=doc.max_length)
    kind = Optional[param.type] if param.optional else param.type
    return inspect.Parameter(param.name, inspect.Parameter.KEYWORD_ONLY, default=declared, annotation=kind)


for _op in OPERATIONS.values():
    router.add_api_route(_op.route, _route(_op), methods=["GET"], summary=_op.summary)
