"""``create_app``: the guard, the errors as HTTP statuses, the page and one router per concern."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from ...chat.sessions import ChatSessions
from ...engine import Engine
from ...errors import SenseTreeError
from ..background import BackgroundIndexer
from . import chat, files, operations
from .context import ApiContext
from .security import Guard, ServerOptions, refusal_rules
from .statuses import status_of

WEB = Path(__file__).parent.parent / "web"



def create_app(engine: Engine, token: str, options: ServerOptions | None = None,
               indexer: BackgroundIndexer | None = None) -> FastAPI:
    """The app; ``indexer`` runs indexing in this process (None: another process does it)."""
    options = options or ServerOptions()
    # No /docs: Swagger UI loads its scripts from a CDN, and this app fetches nothing from the internet.
    app = FastAPI(title="SenseTree", version="0.1.0", docs_url=None, redoc_url=None,
                  description="Local semantic search over your own folders. Every /api/ call needs "
                              "`Authorization: Bearer <token>` (the token is in the data dir's server.token).")
    app.add_middleware(Guard, refusal=refusal_rules(token, options))
    app.add_exception_handler(SenseTreeError, _as_status)
    app.state.context = ApiContext(engine, indexer, ChatSessions(engine))
    app.state.chats = app.state.context.chats
    engine.chat_models = app.state.chats.model_turn  # summaries take their turn on the assistant's model

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(WEB / "index.html", headers={"Cache-Control": "no-store"})

    app.mount("/static", StaticFiles(directory=WEB), name="static")
    for module in (operations, files, chat):
        app.include_router(module.router)
    return app


async def _as_status(_: Request, exc: Exception) -> JSONResponse:
    """An error of the tree as its status (``SenseTreeError.status``), the message as ``detail``."""
    return JSONResponse({"detail": str(exc)}, status_of(exc))
