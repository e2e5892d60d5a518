"""``create_app``: the guard, the errors as HTTP statuses, the page and one router per concern."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from ...chat.sessions import ChatSessions
from ...engine import Engine
from ...errors import SenseTreeError
from ...safe_text import cleaned
from ..background import BackgroundIndexer
from . import chat, operations
from .context import ApiContext
from .security import Guard, ServerOptions, refusal_rules
from .statuses import status_of

WEB = Path(__file__).parent.parent / "web"


def create_app(
    engine: Engine, token: str, options: ServerOptions | None = None, indexer: BackgroundIndexer | None = None
) -> FastAPI:
    """The app; ``indexer`` runs indexing in this process (None: another process does it)."""
    options = options or ServerOptions()
    # No /docs: Swagger UI loads its scripts from a CDN, and this app fetches nothing from the internet.
    app = FastAPI(
        title="SenseTree",
        version="0.1.0",
        docs_url=None,
        redoc_url=None,
        description="Local semantic search over your own folders. Every /api/ call needs "
        "`Authorization: Bearer <token>` (the token is in the data dir's server.token).",
    )
    app.add_middleware(Guard, refusal=refusal_rules(token, options))
    app.add_middleware(LongRequests)
    app.add_exception_handler(SenseTreeError, _as_status)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.state.context = ApiContext(engine, indexer, ChatSessions(engine))
    app.state.chats = app.state.context.chats
    engine.chat_models = app.state.chats.model_turn  # summaries take their turn on the assistant's model

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(WEB / "index.html", headers={"Cache-Control": "no-store"})

    app.mount("/static", StaticFiles(directory=WEB), name="static")
    for module in (operations, chat):
        app.include_router(module.router)
    return app


MAX_URL_BYTES = 64 * 1024  # a path and query string longer than this are refused with 414 (long text goes in a body)


class LongRequests:
    """414 with what to do for a URL longer than ``MAX_URL_BYTES`` (a 200 KB query string), before anything
    reads it; the web server reads such a request whole first (``serve.server_config``)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
            if size > MAX_URL_BYTES:
                answer = JSONResponse(
                    {
                        "detail": f"the address is {size:,} bytes long; at most {MAX_URL_BYTES:,} "
                        "are read: send long text in a POST body"
                    },
                    414,
                )
                await answer(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _invalid(_: Request, exc: Exception) -> JSONResponse:
    """A body or query that does not fit its route: 422 with what is wrong, as FastAPI says it, but with
    any lone surrogate the request carried (``"\\ud800"``, echoed back in ``input``) made U+FFFD first:
    JSON cannot be written with one, so FastAPI's own answer was a 500 (every body and /stream route)."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else [str(exc)]
    return JSONResponse({"detail": cleaned(jsonable_encoder(errors))}, 422)


async def _as_status(_: Request, exc: Exception) -> JSONResponse:
    """An error of the tree as its status (``SenseTreeError.status``), the message as ``detail``."""
    return JSONResponse({"detail": str(exc)}, status_of(exc))
