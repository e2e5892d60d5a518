"""One route per engine operation (``operations.py``): ``GET /api/<name>`` for a question, its query
parameters from the parameter object; ``POST /api/<name>`` for a change, its JSON body from the same
object (or the method and route the operation names: ``DELETE /api/roots`` takes a query string,
``PUT /api/sense`` a body). Bounds and help come from the declaration; the answer is the result's
JSON, with what this server adds of its own (``SERVER_ADDS``); a ``local`` operation (``index``) has no route. An operation that reports its progress
(a summary) also has ``POST /api/<name>/stream``: its steps as server-sent ``progress`` events, then
``done`` with the result, or ``error`` with the message and the status."""

from __future__ import annotations

import inspect
from typing import Any, AsyncIterator, Callable, Optional

from fastapi import APIRouter, Body, Depends, Query, Response
from fastapi.responses import StreamingResponse
from pydantic import Field, create_model

from ...errors import SenseTreeError
from ...handlers.summaries import readable
from ...operations import OPERATIONS, Effect, Operation, Param, params_of
from .bodies import Body as JsonBody
from .context import ApiContext, context
from .events import HEADERS, Say, relay
from .statuses import status_of

router = APIRouter()


def _new_chat_settings(ctx: ApiContext, answer: dict[str, Any]) -> dict[str, Any]:
    """The assistant's conversations start again with a changed chat setting (another model, endpoint)."""
    if answer["key"].startswith("chat."):
        ctx.chats.reset()
    return answer


# What a server adds to an operation's answer, or does after it, of its own: the live progress of its
# indexing (status ends with it; the queue, which the web app's queue page reads top down, begins with
# it), and its chats, which a chat setting resets.
SERVER_ADDS: dict[str, Callable[[ApiContext, dict[str, Any]], dict[str, Any]]] = {
    "status": lambda ctx, answer: {**answer, "indexing": ctx.progress()},
    "queue": lambda ctx, answer: {"indexing": ctx.progress(), **answer},
    "set": _new_chat_settings,
}


def _run(op: Operation, ctx: ApiContext, params: Any) -> Any:
    """A change that queues files wakes the server's indexer; one that takes the writer lock has the
    server's own indexing step aside while it runs. An answer that is bytes (``media``) goes as they are."""
    if op.effect is Effect.EXCLUSIVE:
        with ctx.exclusive():
            result = op.run(ctx.engine, params)
    else:
        result = op.run(ctx.engine, params)
    if op.effect is Effect.QUEUES:
        ctx.kick()
    if op.media:
        return Response(result.data, media_type=op.media, headers={"Cache-Control": "private, max-age=60"})
    answer = result.as_dict()
    return SERVER_ADDS[op.name](ctx, answer) if op.name in SERVER_ADDS else answer


def _in_query(op: Operation):
    def answer(ctx: ApiContext = Depends(context), **values: Any) -> Any:
        return _run(op, ctx, op.params(**values))

    answer.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            *(_query_parameter(p) for p in op.fields()),
            inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, default=Depends(context), annotation=ApiContext),
        ]
    )
    answer.__name__ = op.name
    return answer


def _query_parameter(param: Param) -> inspect.Parameter:
    doc = param.doc
    declared = Query(
        ... if param.required else param.default,
        alias=doc.http,
        description=doc.help,
        ge=doc.ge,
        le=doc.le,
        min_length=doc.min_length,
        max_length=doc.max_length,
        pattern=doc.pattern and f"^{doc.pattern}$",
    )
    kind = Optional[param.type] if param.optional else param.type
    return inspect.Parameter(param.name, inspect.Parameter.KEYWORD_ONLY, default=declared, annotation=kind)


def body_model(params: type) -> type[JsonBody]:
    """A JSON body with the fields of the parameter class ``params``, their bounds and help."""
    fields: dict[str, Any] = {
        p.name: (
            Optional[p.type] if p.optional else p.type,
            Field(
                ... if p.required else p.default,
                description=p.doc.help,
                ge=p.doc.ge,
                le=p.doc.le,
                min_length=p.doc.min_length,
                max_length=p.doc.max_length,
                pattern=p.doc.pattern and f"^{p.doc.pattern}$",
            ),
        )
        for p in params_of(params)
    }
    return create_model(f"{params.__name__.removesuffix('Params')}Body", __base__=JsonBody, **fields)


def _in_body(op: Operation):
    """The body's fields from the parameter object; with no required field the body may be left out."""
    model = body_model(op.params)
    optional = not any(p.required for p in op.fields())

    def answer(ctx: ApiContext = Depends(context), body: Any = None) -> Any:
        return _run(op, ctx, op.params(**(body or model()).model_dump()))

    answer.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, default=Depends(context), annotation=ApiContext),
            inspect.Parameter(
                "body",
                inspect.Parameter.KEYWORD_ONLY,
                annotation=Optional[model] if optional else model,
                default=Body(None) if optional else Body(...),
            ),
        ]
    )
    answer.__name__ = op.name
    return answer


def _streamed(op: Operation):
    """The operation on a worker thread, its progress relayed as it comes (as the assistant's answer is)."""
    model = body_model(op.params)

    def answer(body: Any, ctx: ApiContext = Depends(context)) -> StreamingResponse:
        params = op.params(**body.model_dump())
        for name in ("path", "other"):  # refused with its status before the stream's 200 goes out
            if getattr(params, name, None):
                readable(ctx.engine, getattr(params, name))
        return StreamingResponse(_events(op, ctx, params), media_type="text/event-stream", headers=HEADERS)

    answer.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("body", inspect.Parameter.KEYWORD_ONLY, annotation=model, default=Body(...)),
            inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, default=Depends(context), annotation=ApiContext),
        ]
    )
    answer.__name__ = f"{op.name}_stream"
    return answer


def _events(op: Operation, ctx: ApiContext, params: Any) -> AsyncIterator[str]:
    """The operation on a worker thread, its progress relayed as it comes, then its result or its error."""

    def work(say: Say) -> None:
        try:
            result = op.run(ctx.engine, params, on_progress=lambda text: say("progress", {"text": text}))
            say("done", result.as_dict())
        except SenseTreeError as exc:
            say("error", {"message": str(exc), "status": status_of(exc)})
        except Exception as exc:  # the stream must end with a reason, not a dropped connection
            say("error", {"message": f"unexpected error: {type(exc).__name__}: {exc}", "status": 500})

    return relay(work, op.name)


for _op in OPERATIONS.values():
    if _op.local:  # runs where it is asked (indexing: this server indexes on its own)
        continue
    if _op.media:  # bytes of their own type (a PDF page as a PNG)
        router.add_api_route(
            _op.route,
            _in_query(_op) if _op.in_query else _in_body(_op),
            methods=[_op.verb],
            summary=_op.summary,
            response_class=Response,
            responses={200: {"content": {_op.media: {}}}},
        )
        continue
    router.add_api_route(
        _op.route,
        _in_query(_op) if _op.in_query else _in_body(_op),
        methods=[_op.verb],
        summary=_op.summary,  # the answer's schema: its type (schemas.py)
        responses={200: {"model": _op.result}},
    )
    if _op.progress:
        router.add_api_route(
            _op.route + "/stream",
            _streamed(_op),
            methods=["POST"],
            summary=_op.summary + " Its progress streams as server-sent events.",
            response_class=StreamingResponse,
        )
