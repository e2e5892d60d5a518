"""Who may call the API.

The server listens on loopback; every ``/api/`` request must carry the token made at first
start (``Authorization: Bearer``), so another local user cannot read the index; a request from
another origin (a web page open in the same browser) or for another Host (DNS rebinding) is
refused before the token is even looked at; a client that is not on loopback is refused unless
the user chose to listen on another address.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fastapi import Request
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_FILE = "server.token"


def load_token(data_dir: Path) -> str:
    """The server's token: made once, readable only by its owner, the same on every start.

    Where the data dir cannot be written (a read-only mount, a full disk), it is kept in memory:
    a new one each start.
    """
    path = data_dir / TOKEN_FILE
    try:
        token = path.read_text(encoding="utf-8").strip()
        if len(token) >= 32:
            return token
    except OSError:
        pass
    token = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(token)
    except OSError:
        pass  # kept in memory only
    return token


@dataclass
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    allow_remote: bool = False  # the user asked to listen on a non-loopback address


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


SERVE_HINT = "open the link printed by `sensetree serve`"


def refusal_rules(
    token: str, options: ServerOptions, hint: str = SERVE_HINT
) -> Callable[[Request], JSONResponse | None]:
    """Why an /api/ request is refused, or None to let it through; ``hint`` says where the token is."""
    allowed_hosts = {f"127.0.0.1:{options.port}", f"localhost:{options.port}", f"[::1]:{options.port}"}
    expected = f"Bearer {token}".encode()

    def refusal(request: Request) -> JSONResponse | None:
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
        if not secrets.compare_digest(request.headers.get("authorization", "").encode(), expected):
            return JSONResponse({"detail": f"missing or wrong token: {hint}"}, 401)
        return None

    return refusal


class Guard:
    """Checks every /api/ request before the app sees it.

    A plain ASGI middleware rather than ``@app.middleware("http")``: that one wraps the
    response, and a streamed chat answer then never learns that the page closed it.
    """

    def __init__(self, app: ASGIApp, refusal: Callable[[Request], JSONResponse | None], prefix: str = "/api/"):
        self.app = app
        self.refusal = refusal
        self.prefix = prefix  # the paths guarded: "/" for every one (`sensetree mcp --http`)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(self.prefix):
            refused = self.refusal(Request(scope))
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)
