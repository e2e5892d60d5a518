"""The HTTP API under ``/api/`` and the web page, over one engine (``sensetree serve``).

Security model: the server listens on loopback; every ``/api/`` request must carry the token
made at first start (``Authorization: Bearer``), so another local user cannot read the index;
a request from another origin (a web page open in the same browser) or for another Host (DNS
rebinding) is refused before the token is even looked at; a client that is not on loopback is
refused unless the user chose to listen on another address.
"""

from __future__ import annotations

import ipaddress
import json
import os
import queue
import secrets
import subprocess
import sys
import threading
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Optional

import anyio
from fastapi import Body, FastAPI, HTTPException, Query, Request
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Receive, Scope, Send

from ..browse import NoPreview
from ..chat.agent import ChatError
from ..chat.sessions import AnswerStopped, ChatSessions
from ..config import SettingsError, parse_value
from ..confine import OutsideRoots, RootGuard
from ..engine import Engine, SenseTreeError, WriterBusy
from .background import BackgroundIndexer

WEB = Path(__file__).parent / "web"
TOKEN_FILE = "server.token"
QUEUE_LIST_LIMIT = 200


def load_token(data_dir: Path) -> str:
    """The server's token: made once, readable only by its owner, the same on every start."""
    path = data_dir / TOKEN_FILE
    try:
        token = path.read_text(encoding="utf-8").strip()
        if len(token) >= 32:
            return token
    except OSError:
        pass
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token)
    return token


@dataclass
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    allow_remote: bool = False  # the user asked to listen on a non-loopback address


# request bodies ---------------------------------------------------------------------------
class PathBody(BaseModel):
    path: str = Field(description="an absolute path inside a root")


class OptionalPathBody(BaseModel):
    path: Optional[str] = Field(None, description="a path inside a root; omitted = every failed file")


class FolderModeBody(BaseModel):
    path: str
    mode: Optional[str] = Field(None, description="block, recursive, or null to go back to the heuristics")


class SenseBody(BaseModel):
    path: str
    sense: str = Field(max_length=4000)


class SettingBody(BaseModel):
    key: str
    value: Any = Field(description="a JSON value of the setting's type, or text to parse")


class EndpointTestBody(BaseModel):
    role: str = Field(description="embedding, sense or chat")
    base_url: Optional[str] = None
    model: Optional[str] = None
    api_key: Optional[str] = None


class ChatBody(BaseModel):
    question: str = Field(min_length=1, max_length=10_000)
    scope: Optional[str] = None
    conversation: Optional[str] = None


class Guard:
    """Checks every /api/ request before the app sees it.

    A plain ASGI middleware rather than ``@app.middleware("http")``: that one wraps the
    response, and a streamed chat answer then never learns that the page closed it.
    """

    def __init__(self, app: ASGIApp, refusal: Callable[[Request], JSONResponse | None]):
        self.app = app
        self.refusal = refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/api/"):
            refused = self.refusal(Request(scope))
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(engine: Engine, token: str, options: ServerOptions | None = None,
               indexer: BackgroundIndexer | None = None) -> FastAPI:
    """The app; ``indexer`` runs indexing in this process (None: another process does it)."""
    options = options or ServerOptions()
    chats = ChatSessions(engine)
    # No /docs: Swagger UI loads its scripts from a CDN, and this app fetches nothing from the internet.
    app = FastAPI(title="SenseTree", version="0.1.0", docs_url=None, redoc_url=None,
                  description="Local semantic search over your own folders. Every /api/ call needs "
                              "`Authorization: Bearer <token>` (the token is in the data dir's server.token).")
    allowed_hosts = _allowed_hosts(options)

    def refusal(request: Request) -> JSONResponse | None:
        """Why an /api/ request is refused, or None to let it through."""
        client = request.client.host if request.client else ""
        if not options.allow_remote and not is_loopback(client):
            return JSONResponse({"detail": "only this computer may use SenseTree"}, 403)
        host = request.headers.get("host", "").lower()
        if not options.allow_remote and host not in allowed_hosts:  # DNS rebinding
            return JSONResponse({"detail": "unexpected Host header"}, 403)
        origin = request.headers.get("origin")
        if origin is not None and origin.lower() != f"http://{host}":
            return JSONResponse({"detail": "cross-origin requests are refused"}, 403)
        if request.headers.get("sec-fetch-site") == "cross-site":
            return JSONResponse({"detail": "cross-site requests are refused"}, 403)
        given = request.headers.get("authorization", "")
        if not secrets.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return JSONResponse({"detail": "missing or wrong token: open the link printed by `sensetree serve`"}, 401)
        return None

    app.add_middleware(Guard, refusal=refusal)

    @app.exception_handler(OutsideRoots)
    async def outside(_: Request, exc: OutsideRoots):
        return JSONResponse({"detail": str(exc)}, 403)

    @app.exception_handler(WriterBusy)
    async def busy(_: Request, exc: WriterBusy):
        return JSONResponse({"detail": str(exc)}, 409)

    @app.exception_handler(SenseTreeError)
    async def refused(_: Request, exc: SenseTreeError):
        return JSONResponse({"detail": str(exc)}, 400)

    @app.exception_handler(FileNotFoundError)
    async def missing(_: Request, exc: FileNotFoundError):
        return JSONResponse({"detail": str(exc)}, 404)

    def kick() -> None:
        if indexer:
            indexer.kick()

    def exclusive():
        """Run an action that takes the writer lock: the background round steps aside meanwhile."""
        return indexer.paused() if indexer else nullcontext()

    def progress() -> dict[str, Any]:
        if indexer:
            return indexer.snapshot()
        return {"running": False, "total": 0, "done": 0, "chunks": 0, "failed": 0, "current": "", "rate": 0.0,
                "eta_s": None, "paused": "indexing runs in another process", "stages": {}}

    # pages ---------------------------------------------------------------------------------
    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(WEB / "index.html", headers={"Cache-Control": "no-store"})

    app.mount("/static", StaticFiles(directory=WEB), name="static")

    # search --------------------------------------------------------------------------------
    @app.get("/api/search", summary="Ranked files for a query (hybrid retrieval, SPEC §3)")
    def search(q: str = Query(..., max_length=10_000), scope: Optional[str] = None,
               limit: int = Query(20, ge=1, le=100), hybrid: Optional[bool] = None,
               rerank: Optional[bool] = None) -> dict[str, Any]:
        response = engine.search(q, scope or None, limit, hybrid=hybrid, rerank=rerank)
        return {"query": response.query, "results": [r.as_dict() for r in response.results],
                "notices": response.notices, "timings_ms": response.timings_ms, "fusion": response.fusion}

    @app.get("/api/tree", summary="The meaning tree: relevance heat over the folders (SPEC §5)")
    def tree(q: str = Query(..., max_length=10_000), scope: Optional[str] = None,
             limit: int = Query(400, ge=10, le=1000)) -> dict[str, Any]:
        node, notices = engine.tree(q, scope or None, limit)
        return {"tree": node.as_dict() if node else None, "notices": notices}

    # roots and files -----------------------------------------------------------------------
    @app.get("/api/status", summary="Roots, counts per status, models, index size, indexing progress")
    def status() -> dict[str, Any]:
        return {**engine.status(), "indexing": progress()}

    @app.get("/api/roots")
    def roots() -> dict[str, Any]:
        return {"roots": engine.roots()}

    @app.post("/api/roots", summary="Add a folder to index in place")
    def add_root(body: PathBody) -> dict[str, Any]:
        root = engine.add_root(body.path)
        kick()
        return {"root": root}

    @app.delete("/api/roots", summary="Stop indexing a folder; its entries leave the index")
    def remove_root(path: str) -> dict[str, Any]:
        with exclusive():
            return {"removed": engine.remove_root(path)}

    @app.get("/api/browse", summary="A folder's entries with their index status (the roots without a path)")
    def browse(path: Optional[str] = None) -> dict[str, Any]:
        return engine.browser().listing(path).as_dict()

    @app.get("/api/file", summary="One file's or folder's detail: status, sense, chunks, last error")
    def file_detail(path: str) -> dict[str, Any]:
        return engine.browser().detail(path)

    @app.get("/api/preview", summary="A file's extracted text, with the offsets of one chunk")
    def preview(path: str, chunk: int = Query(0, ge=0)) -> dict[str, Any]:
        try:
            return engine.browser().preview(path, chunk)
        except NoPreview as exc:
            raise HTTPException(422, str(exc)) from None

    @app.post("/api/open", summary="Open a file in the system's default application")
    def open_file(body: PathBody) -> dict[str, Any]:
        path = RootGuard(engine.roots()).check(body.path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} does not exist")
        try:
            _open_with_system(path)
        except OSError as exc:
            raise HTTPException(501, f"cannot open files on this system: {exc}") from None
        return {"opened": path}

    @app.post("/api/reindex", summary="Index a file, or every file under a folder, again")
    def reindex(body: PathBody) -> dict[str, Any]:
        count = engine.reindex(body.path)
        kick()
        return {"requeued": count}

    @app.post("/api/folder-mode", summary="Treat a folder as one block, or index its contents file by file")
    def folder_mode(body: FolderModeBody) -> dict[str, Any]:
        if body.mode not in (None, "block", "recursive"):
            raise HTTPException(422, "mode is block, recursive or null")
        path = engine.set_block(body.path, body.mode)
        kick()
        return {"path": path, "mode": body.mode}

    @app.put("/api/sense", summary="Correct a file's sense by hand; it stays pinned")
    def pin_sense(body: SenseBody) -> dict[str, Any]:
        RootGuard(engine.roots()).check(body.path)
        engine.pin_sense(body.path, body.sense)
        kick()
        return {"path": body.path, "sense": body.sense.strip(), "pinned": True}

    # queue ---------------------------------------------------------------------------------
    @app.get("/api/queue", summary="Live progress, failures first with their errors, then what is pending")
    def queue_view() -> dict[str, Any]:
        rows = engine.queue()
        return {"indexing": progress(), "failed": rows["failed"], "pending": rows["pending"][:QUEUE_LIST_LIMIT],
                "pending_count": len(rows["pending"]), "ignored": engine.ignored()}

    @app.post("/api/retry", summary="Requeue one failed file, or all of them")
    def retry(body: OptionalPathBody = Body(default_factory=OptionalPathBody)) -> dict[str, Any]:
        count = engine.retry(body.path)
        kick()
        return {"requeued": count}

    @app.post("/api/ignore", summary="Leave one file, or every failed file, out of the index")
    def ignore(body: OptionalPathBody = Body(default_factory=OptionalPathBody)) -> dict[str, Any]:
        with exclusive():
            return {"ignored": engine.ignore(body.path)}

    @app.post("/api/unignore", summary="Index an ignored path again")
    def unignore(body: PathBody) -> dict[str, Any]:
        path = engine.unignore(body.path)
        kick()
        return {"path": path}

    # settings ------------------------------------------------------------------------------
    @app.get("/api/settings", summary="Every setting (SPEC §8) and the models per role")
    def settings() -> dict[str, Any]:
        return {"settings": engine.settings_view(), "models": engine.models_view()}

    @app.put("/api/settings", summary="Change one setting; a new embedding model re-indexes everything")
    def change_setting(body: SettingBody) -> dict[str, Any]:
        try:
            value = parse_value(body.key, body.value if isinstance(body.value, str) else json.dumps(body.value))
        except SettingsError as exc:
            raise HTTPException(422, str(exc)) from None
        with exclusive():
            notice = engine.set_setting(body.key, value)
        if body.key.startswith("chat."):
            chats.reset()
        return {"key": body.key, "value": engine.settings[body.key], "notice": notice}

    @app.post("/api/endpoint-test", summary="Is an endpoint reachable, does it have the model, which dimension")
    def endpoint_test(body: EndpointTestBody) -> dict[str, Any]:
        return engine.test_endpoint(body.role, body.base_url, body.model, body.api_key).as_dict()

    # chat ----------------------------------------------------------------------------------
    @app.post("/api/chat", summary="Ask the assistant; the answer streams as server-sent events",
              response_class=StreamingResponse)
    def chat(body: ChatBody) -> StreamingResponse:
        return StreamingResponse(_chat_events(chats, body), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    app.state.chats = chats
    return app


async def _chat_events(chats: ChatSessions, body: ChatBody) -> AsyncIterator[str]:
    """Run the answer on a worker thread and relay what it says, as it says it.

    When the page stops the answer, the connection closes and Starlette cancels this generator;
    ``finally`` then tells the worker, which cuts off the model's stream.
    """
    events: queue.Queue[tuple[str, Any] | None] = queue.Queue()
    stopped = threading.Event()

    def work() -> None:
        try:
            answer = chats.ask(body.question, body.scope or None, body.conversation,
                               on_start=lambda conv, model: events.put(("start", {"conversation": conv, "model": model})),
                               on_token=lambda text: events.put(("token", {"text": text})),
                               on_step=lambda step: events.put(("step", step.as_dict())), stopped=stopped)
            events.put(("done", answer.as_dict()))
        except AnswerStopped:
            pass
        except (ChatError, SenseTreeError) as exc:
            events.put(("error", {"message": str(exc)}))
        except Exception as exc:  # the stream must end with a reason, not a dropped connection
            events.put(("error", {"message": f"unexpected error: {type(exc).__name__}: {exc}"}))
        finally:
            events.put(None)

    def next_event() -> tuple[str, Any] | None | bool:
        try:
            return events.get(timeout=0.25)
        except queue.Empty:
            return False  # nothing yet: give the event loop a chance to notice a closed connection

    threading.Thread(target=work, name="chat", daemon=True).start()
    try:
        while (event := await anyio.to_thread.run_sync(next_event)) is not None:
            if event is False:
                continue
            name, data = event
            yield f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
    finally:
        stopped.set()


def _allowed_hosts(options: ServerOptions) -> set[str]:
    return {f"127.0.0.1:{options.port}", f"localhost:{options.port}", f"[::1]:{options.port}"}


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _open_with_system(path: str) -> None:
    if sys.platform == "win32":
        os.startfile(path)  # type: ignore[attr-defined]
    elif sys.platform == "darwin":
        subprocess.Popen(["open", path])
    else:
        subprocess.Popen(["xdg-open", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

