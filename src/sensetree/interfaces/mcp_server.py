"""``sensetree mcp``: the index as a Model Context Protocol server, so other assistants can use it.

The tools are in ``mcp_tools`` (imported when the command runs). On stdio, stdout is the protocol,
so everything else (logs, notices) goes to stderr. Over HTTP (``--http``) every request needs the
token ``serve`` uses (``server.token`` in the data dir, ``Authorization: Bearer``), printed once at
start, behind the same guard as the web API (loopback, Host, Origin); ``--port 0`` takes a free port
and says which.
"""

import logging
import os
import socket
import sys
from pathlib import Path
from typing import Any, AsyncIterator, Optional

import anyio
import typer

from ..safe_text import clean_json
from .open import open_engine

log = logging.getLogger("sensetree.mcp")

DEFAULT_PORT = 8766  # next to `sensetree serve` on 8765


def mcp(
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP on 127.0.0.1 instead of stdio."),
    port: Optional[int] = typer.Option(
        None, "--port", help=f"Port for --http (default {DEFAULT_PORT}; 0 takes a free one and says which)."
    ),
    index: Optional[str] = typer.Option(
        None,
        "--index",
        metavar="URI",
        help="Serve this index read-only (a folder or s3://bucket/prefix) that another process writes.",
    ),
    data_dir: Optional[Path] = typer.Option(
        None, "--data-dir", help="Where the index lives (default: user data folder; SENSETREE_HOME overrides)."
    ),
):
    """Serve the index to other assistants over the Model Context Protocol (stdio, or --http)."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    if port is not None and not http:
        log.error("--port needs --http (on stdio there is no port)")
        raise typer.Exit(2)
    from .mcp_tools import build_server

    with open_engine(data_dir, log.warning, index, read_only=index is not None) as engine:
        if not engine.roots():
            log.warning("nothing is indexed yet: add a folder with `sensetree add FOLDER`, then `sensetree index`")
        server = build_server(engine)
        try:
            if http:
                _serve_http(server, engine.data_dir, DEFAULT_PORT if port is None else port)
            else:
                anyio.run(_serve_stdio, server)
        except KeyboardInterrupt:
            pass


async def _serve_stdio(server) -> None:
    """stdio as the SDK serves it, but each message read as every door reads a client's JSON
    (``safe_text.clean_json``): the SDK's own reader refuses a message holding a lone surrogate
    escape (``"\\ud800"``) as no JSON at all, and a refused request has no id to answer, so the
    client waited for good. fd 0 points at the null device meanwhile, as the SDK does with its own
    reader, so that nothing else in this process or its children reads the client's messages."""
    from mcp.server.stdio import stdio_server

    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        with open(wire, encoding="utf-8", errors="replace", closefd=False) as messages:
            lines = _cleaned(anyio.wrap_file(messages))
            async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]  # it reads lines
                lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, on these streams
                await lowlevel.run(read, write, lowlevel.create_initialization_options())
    finally:
        os.dup2(wire, 0)
        os.close(wire)


async def _cleaned(lines: Any) -> AsyncIterator[str]:
    async for line in lines:
        yield clean_json(line.rstrip("\r\n")) + "\n"


class _CleanBodies:
    """Each message a client POSTs over ``--http`` read as those on stdio are (``safe_text.clean_json``)
    before the SDK parses it: its parser answers a lone surrogate escape with a parse error. A body
    past the SDK's own limit goes on as it came, for the SDK to refuse."""

    def __init__(self, app):
        from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

        self.app = app
        self.limit = DEFAULT_MAX_REQUEST_BODY_SIZE

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        messages, size = [], 0
        while True:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body") or size > self.limit:
                break
        whole = messages[-1]["type"] == "http.request" and not messages[-1].get("more_body")
        body = b"".join(m.get("body", b"") for m in messages)
        cleaned = clean_json(body.decode("utf-8", "replace")).encode() if whole else body
        if cleaned != body:
            messages = [{"type": "http.request", "body": cleaned, "more_body": False}]
            headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
            scope = {**scope, "headers": [*headers, (b"content-length", str(len(cleaned)).encode())]}

        async def replayed():
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replayed, send)


def _serve_http(server, data_dir: Path, port: int) -> None:
    """Streamable HTTP on 127.0.0.1, every request checked for the token (as ``serve``'s /api/ is)."""
    import uvicorn

    from .api.security import Guard, ServerOptions, load_token, refusal_rules

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except (OSError, OverflowError) as exc:
        listener.close()
        log.error(
            "cannot listen on 127.0.0.1:%s (%s); choose another --port (0 takes a free one)",
            port,
            getattr(exc, "strerror", None) or exc,
        )
        raise typer.Exit(1) from None
    listener.listen(128)
    port = listener.getsockname()[1]
    token = load_token(data_dir)
    hint = (
        f"send the token `sensetree mcp --http` printed (also in {data_dir / 'server.token'}) as Authorization: Bearer"
    )
    app = Guard(
        _CleanBodies(server.streamable_http_app(host="127.0.0.1")),
        refusal_rules(token, ServerOptions(port=port), hint),
        "/",
    )
    print(f"SenseTree MCP server on http://127.0.0.1:{port}/mcp (Ctrl-C to stop)", file=sys.stderr)
    print(f"token: {token} (send it as the header `Authorization: Bearer {token}`)", file=sys.stderr, flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).run(sockets=[listener])


def register(app: typer.Typer) -> None:
    app.command()(mcp)
