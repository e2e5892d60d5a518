"""One route per engine operation (``operations.py``): ``GET /api/<name>`` for a question, its query
parameters from the parameter object; ``POST /api/<name>`` for a change, its JSON body from the same
object. Bounds and help come from the declaration; the answer is the result's JSON."""

from __future__ import annotations

import inspect
from typing import Any, Optional

from fastapi import APIRouter, Body, Depends, Query
from pydantic import Field, create_model

from ...operations import OPERATIONS, Effect, Operation, Param
from .bodies import Body as JsonBody
from .context import ApiContext, context

router = APIRouter()


def _question(op: Operation):
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


def _change(op: Operation):
    """A change: its body's fields from the parameter object; with no required field the body may be left out.
    A change that queues files wakes the server's indexer; one that takes the writer lock has the server's
    own indexing step aside while it runs."""
    fields = {p.name: (Optional[p.type] if p.optional else p.type,
                       Field(... if p.required else p.default, description=p.doc.help, ge=p.doc.ge, le=p.doc.le,
                             max_length=p.doc.max_length)) for p in op.fields()}
    model = create_model(f"{op.params.__name__}Body", __base__=JsonBody, **fields)
    optional = not any(p.required for p in op.fields())

    def answer(ctx: ApiContext = Depends(context), body: Any = None) -> dict[str, Any]:
        params = op.params(**(body or model()).model_dump())
        if op.effect is Effect.EXCLUSIVE:
            with ctx.exclusive():
                result = op.run(ctx.engine, params)
        else:
            result = op.run(ctx.engine, params)
        if op.effect is Effect.QUEUES:
            ctx.kick()
        return result.as_dict()

    answer.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, default=Depends(context), annotation=ApiContext),
        inspect.Parameter("body", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[model] if optional else model,
                          default=Body(None) if optional else Body(...))])
    answer.__name__ = op.name
    return answer


for _op in OPERATIONS.values():
    if _op.effect is Effect.READS:
        router.add_api_route(_op.route, _question(_op), methods=["GET"], summary=_op.summary)
    else:
        router.add_api_route(_op.route, _change(_op), methods=["POST"], summary=_op.summary)
