"""``sensetree serve``: the web app and its API, with indexing and watching in the same process.

With ``--read-only`` it is a search node instead: it serves an index another process writes
(``--index URI``, or the data dir's own), starts no indexer and writes nothing, and can run in
as many copies as wanted, on as many machines, behind any load balancer.
"""

from __future__ import annotations

import socket
import sys
import threading
import webbrowser
from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import SenseTreeError
from . import served
from .exits import stopped_by_signals
from .open import open_engine
from .terminal import log_warnings

READ_REQUEST_BYTES = 1 << 20  # a request's line and headers read whole before the app answers (see server_config)
STOP_SECONDS = 1  # seconds, for open connections to finish, then for the indexer to stop, on SIGTERM or Ctrl+C


def register(app: typer.Typer) -> None:
    app.command()(serve)


def serve(
    port: int = typer.Option(8765, "--port", help="Port on 127.0.0.1 (0 = any free port)."),
    host: str = typer.Option(
        "127.0.0.1",
        "--host",
        help="Address to listen on. Anything but loopback lets other machines connect (they still need the token).",
    ),
    no_browser: bool = typer.Option(False, "--no-browser", help="Do not open the browser."),
    no_index: bool = typer.Option(False, "--no-index", help="Serve only; another process indexes."),
    read_only: bool = typer.Option(
        False, "--read-only", help="A search node: serve an index another process writes, write nothing."
    ),
    index: Optional[str] = typer.Option(
        None,
        "--index",
        metavar="URI",
        help="With --read-only: the index to serve (a folder or s3://bucket/prefix; default: the data dir's own).",
    ),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Where the index lives."),
):
    """Open the web app: search, meaning tree, explorer, queue, chat and settings, in your browser."""
    import uvicorn  # the web stack loads here, not with every command

    from .api import ServerOptions, create_app, is_loopback, load_token
    from .background import BackgroundIndexer

    log_warnings("%(levelname)s %(name)s: %(message)s")
    if index is not None and not read_only:
        typer.echo("error: --index serves another process's index: add --read-only", err=True)
        raise typer.Exit(2)
    try:
        engine = open_engine(
            data_dir, lambda notice: typer.echo(notice, err=True), index if read_only else None, read_only
        )
    except SenseTreeError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    remote = not is_loopback(host)
    try:
        listener = _bind(host, port)
    except OSError as exc:
        typer.echo(f"error: cannot listen on {host}:{port} ({exc.strerror or exc}); choose another --port", err=True)
        raise typer.Exit(1) from None
    port = listener.getsockname()[1]
    token = load_token(engine.data_dir)
    indexer = None if no_index or read_only else BackgroundIndexer(engine)
    app = create_app(engine, token, ServerOptions(host, port, allow_remote=remote), indexer)
    server = uvicorn.Server(server_config(app))
    url = f"http://127.0.0.1:{port}/#token={token}" if not remote else f"http://{host}:{port}/#token={token}"
    typer.echo(f"SenseTree is running at {url}", err=False)
    if remote:
        typer.echo(f"warning: listening on {host}: other machines can connect (they need the token)", err=True)
    sys.stdout.flush()
    if indexer:
        indexer.start()
    if not no_browser:
        threading.Timer(0.5, webbrowser.open, args=(url,)).start()
    announced = served.announce(engine.data_dir, host, port)  # `search`, `tree`, `ask` come here
    stopped = threading.Event()
    try:
        with stopped_by_signals(stopped, interrupt=False):  # uvicorn stops on the signal, then hands it on here
            server.run(sockets=[listener])
    finally:
        served.withdraw(announced)
        # A round still scanning after that: the process ends without closing under it (a stop loses nothing).
        if indexer is None or indexer.stop(timeout=STOP_SECONDS):
            app.state.chats.close()
            engine.close()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(128)
    listener.set_inheritable(True)
    return listener


def server_config(app: Any) -> Any:
    """The web server's settings. A request line of up to 1 MiB is read whole (h11's own bound is 16 KiB of
    an unfinished request: past it the connection was dropped while the client was still sending, which it
    saw as a reset), so that the app answers one that is too long with 414 and why (``api/app.py``)."""
    import uvicorn

    return uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=STOP_SECONDS,
        h11_max_incomplete_event_size=READ_REQUEST_BYTES,
    )
