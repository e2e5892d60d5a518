"""One route per engine operation (``operations.py``): ``GET /api/<name>`` for a question, its query
parameters from the parameter object; ``POST /api/<name>`` for a change, its JSON body from the same
object. Bounds and help come from the declaration; the answer is the result's JSON. An operation that
reports its progress (a summary) also has ``POST /api/<name>/stream``: its steps as server-sent
``progress`` events, then ``done`` with the result, or ``error`` with the message and the status."""

from __future__ import annotations

import inspect
import json
import queue
import threading
from typing import Any, AsyncIterator, Optional

import anyio
from fastapi import APIRouter, Body, Depends, Query
from fastapi.responses import StreamingResponse
from pydantic import Field, create_model

from ...errors import SenseTreeError
from ...operations import OPERATIONS, Effect, Operation, Param
from .bodies import Body as JsonBody
from .context import ApiContext, context
from .statuses import status_of

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


def _body_model(op: Operation) -> type:
    fields = {p.name: (Optional[p.type] if p.optional else p.type,
                       Field(... if p.required else p.default, description=p.doc.help, ge=p.doc.ge, le=p.doc.le,
                             max_length=p.doc.max_length)) for p in op.fields()}
    return create_model(f"{op.params.__name__}Body", __base__=JsonBody, **fields)


def _streamed(op: Operation):
    """The operation on a worker thread, its progress relayed as it comes (as the assistant's answer is)."""
    model = _body_model(op)

    def answer(body: Any, ctx: ApiContext = Depends(context)) -> StreamingResponse:
        params = op.params(**body.model_dump())
        for name in ("path", "other"):  # refused with its status before the stream's 200 goes out
            if getattr(params, name, None):
                ctx.engine.readable(getattr(params, name))
        return StreamingResponse(_events(op, ctx, params), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    answer.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter("body", inspect.Parameter.KEYWORD_ONLY, annotation=model, default=Body(...)),
        inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, default=Depends(context), annotation=ApiContext)])
    answer.__name__ = f"{op.name}_stream"
    return answer


async def _events(op: Operation, ctx: ApiContext, params: Any) -> AsyncIterator[str]:
    events: queue.Queue[tuple[str, Any] | None] = queue.Queue()

    def work() -> None:
        try:
            result = op.run(ctx.engine, params, on_progress=lambda text: events.put(("progress", {"text": text})))
            events.put(("done", result.as_dict()))
        except (SenseTreeError, FileNotFoundError) as exc:
            events.put(("error", {"message": str(exc), "status": status_of(exc)}))
        except Exception as exc:  # the stream must end with a reason, not a dropped connection
            events.put(("error", {"message": f"unexpected error: {type(exc).__name__}: {exc}", "status": 500}))
        finally:
            events.put(None)

    def next_event() -> tuple[str, Any] | None | bool:
        try:
            return events.get(timeout=0.25)
        except queue.Empty:
            return False

    threading.Thread(target=work, name=op.name, daemon=True).start()
    while (event := await anyio.to_thread.run_sync(next_event)) is not None:
        if event is False:
            continue
        name, data = event
        yield f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _change(op: Operation):
    """A change: its body's fields from the parameter object; with no required field the body may be left out.
    A change that queues files wakes the server's indexer; one that takes the writer lock has the server's
    own indexing step aside while it runs."""
    model = _body_model(op)
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
        if _op.progress:
            router.add_api_route(_op.route + "/stream", _streamed(_op), methods=["POST"],
                                 summary=_op.summary + " Its progress streams as server-sent events.",
                                 response_class=StreamingResponse)
    else:
        router.add_api_route(_op.route, _change(_op), methods=["POST"], summary=_op.summary)
