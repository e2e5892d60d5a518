"""``sensetree mcp``: the index as a Model Context Protocol server, so other assistants can use it.

The tools are in ``mcp_tools`` (imported when the command runs). On stdio, stdout is the protocol,
so everything else (logs, notices) goes to stderr.
"""

import logging
import sys
from pathlib import Path
from typing import Optional

import typer

from .open import open_engine

log = logging.getLogger("sensetree.mcp")

DEFAULT_PORT = 8766  # next to `sensetree serve` on 8765


def mcp(http: bool = typer.Option(False, "--http", help="Serve streamable HTTP on 127.0.0.1 instead of stdio."),
        port: Optional[int] = typer.Option(None, "--port", help=f"Port for --http (default {DEFAULT_PORT})."),
        index: Optional[str] = typer.Option(None, "--index", metavar="URI",
                                            help="Serve this index read-only (a folder or s3://bucket/prefix) that "
                                                 "another process writes."),
        data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Where the index lives (default: user data "
                                                "folder; SENSETREE_HOME overrides).")):
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
                port = port or DEFAULT_PORT
                print(f"SenseTree MCP server on http://127.0.0.1:{port}/mcp (Ctrl-C to stop)", file=sys.stderr)
                server.run("streamable-http", host="127.0.0.1", port=port)
            else:
                server.run("stdio")
        except KeyboardInterrupt:
            pass


def register(app: typer.Typer) -> None:
    app.command()(mcp)
