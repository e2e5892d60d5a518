"""``sensetree mcp``: the index as a Model Context Protocol server, so other assistants can use it.

Four read-only tools over the same engine as every other interface, with the same confinement
as the chat assistant: a path is checked by a ``RootGuard`` before anything is read or listed,
and a refusal is a tool error the model can read, never a traceback. On stdio, stdout is the
protocol, so everything else (logs, notices) goes to stderr.
"""

import inspect
import logging
import os
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from typing_extensions import TypedDict

from .. import paths
from ..confine import OutsideRoots, RootGuard
from ..engine import Engine
from ..ingest.extract import ExtractionError, extract
from ..search.types import TreeNode

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

log = logging.getLogger("sensetree.mcp")

READ_CHARS = 20_000
TREE_DEPTH = 4        # levels shown below the top of the meaning tree
TREE_CHILDREN = 8     # strongest children shown per folder
TREE_HEAT_FLOOR = 0.5  # children cooler than this share of the hottest node are left out
DEFAULT_PORT = 8766  # next to `sensetree serve` on 8765

INSTRUCTIONS = """SenseTree searches the user's own indexed folders by meaning (hybrid dense + BM25 retrieval).
Use search_files to find which files talk about something, meaning_tree to see which part of the folder
tree is about it, then read_file on a result's path to read it; list_directory with an empty path shows the
roots. Only paths inside the indexed roots can be read or listed; anything else is refused."""


class SearchHit(TypedDict):
    rank: int
    path: str
    name: str
    score: float
    snippet: str
    chunk_index: int


class SearchAnswer(TypedDict):
    query: str
    scope: str | None
    results: list[SearchHit]
    notices: list[str]


class Branch(TypedDict):
    name: str
    path: str
    is_dir: bool
    heat: float
    children: list["Branch"]
    omitted: int


class MeaningTree(TypedDict):
    query: str
    scope: str | None
    tree: Branch | None
    notices: list[str]


class FileText(TypedDict):
    path: str
    name: str
    doc_type: str
    context_only: bool
    text: str
    total_chars: int
    truncated: bool
    note: str | None


class DirectoryEntry(TypedDict):
    name: str
    path: str
    is_dir: bool
    kind: str
    status: str | None
    doc_type: str | None
    error: str | None


class DirectoryListing(TypedDict):
    path: str | None
    entries: list[DirectoryEntry]
    more: int


LIMITS = {"read_chars": READ_CHARS, "tree_depth": TREE_DEPTH, "tree_children": TREE_CHILDREN}


def build_server(engine: Engine) -> "MCPServer":
    """The four tools over ``engine``; the roots are read at every call, so a root added later is seen."""
    # Imported here, not at the top: the SDK takes most of a second to import, which every other
    # command would pay. The parameter types live here too, as the tool signatures are read from them.
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations
    from pydantic import Field

    Query = Annotated[str, Field(description="What the files should be about, in words (not a file name pattern).")]
    Scope = Annotated[str | None, Field(description="Optional folder to search in, inside an indexed root.")]
    FilePath = Annotated[str, Field(description="Full path of a file inside an indexed root, as search_files gives.")]
    FolderPath = Annotated[str, Field(description="Full path of a folder inside an indexed root; empty for the roots.")]
    Limit = Annotated[int, Field(ge=1, le=50, description="How many files to return (1-50).")]
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)
    server = MCPServer("sensetree", instructions=INSTRUCTIONS, version=version("sensetree"), log_level="WARNING")

    def tool(fn: Callable[..., Any]) -> None:
        """Register a read-only tool; its docstring states the limits, filled in from the constants."""
        server.add_tool(fn, description=inspect.cleandoc(fn.__doc__ or "").format(**LIMITS), annotations=read_only)

    def confined(path: str) -> str:
        try:
            return RootGuard(engine.roots()).check(path)
        except OutsideRoots as exc:
            raise ToolError(f"refused: {exc}") from None

    def scope_folder(scope: str | None) -> str | None:
        if not scope:
            return None
        folder = confined(scope)
        if not os.path.isdir(folder):
            raise ToolError(f"{folder} is not a folder")
        return folder

    def search_files(query: Query, scope: Scope = None, limit: Limit = 10) -> SearchAnswer:
        """Find the user's files that are about the query, best first, one result per file.

        Returns an object with query, scope, results and notices. Each result has its rank, full path,
        file name, a score between 0 and 1 (higher is more relevant), a snippet of the passage that
        matched and that passage's chunk_index. Pass a result's path to read_file for the whole text.
        Notices say when retrieval was degraded (a search leg that could not run, a skipped stage).
        """
        if not query.strip():
            raise ToolError("give a query: what the files should be about")
        folder = scope_folder(scope)
        response = engine.search(query, folder, limit)
        # A link to a file is indexed where it sits, but read_file refuses what it leads to outside the
        # roots; a snippet of it would hand out that text all the same.
        guard = RootGuard(engine.roots())
        results = [r for r in response.results if _inside(guard, r.path)]
        notices = list(response.notices)
        if len(results) < len(response.results):
            notices.append(f"{len(response.results) - len(results)} result(s) left out: they are links that lead "
                           "outside the indexed roots")
        hits = [SearchHit(rank=rank, path=r.path, name=r.name, score=round(r.score, 4), snippet=r.snippet,
                          chunk_index=r.chunk_index) for rank, r in enumerate(results, start=1)]
        return SearchAnswer(query=response.query, scope=folder, results=hits, notices=notices)

    def meaning_tree(query: Query, scope: Scope = None) -> MeaningTree:
        """Show which part of the folder tree is about the query: a map of where the topic lives, not a ranked list.

        Returns an object with query, scope, tree and notices. The tree is nested nodes with name, path,
        is_dir, heat, children and omitted: heat is between 0 and 1, a folder's heat is that of its
        hottest file, children come hottest first. To stay readable it shows {tree_depth} levels below
        the top, at most {tree_children} children per folder and none cooler than half the hottest node;
        omitted counts the children left out. tree is null when nothing is indexed there.
        """
        if not query.strip():
            raise ToolError("give a query: what the files should be about")
        folder = scope_folder(scope)
        node, notices = engine.tree(query, folder)
        tree = _prune(node, node.score * TREE_HEAT_FLOOR) if node else None
        return MeaningTree(query=query, scope=folder, tree=tree, notices=notices)

    def read_file(path: FilePath) -> FileText:
        """Read the text of one file inside the indexed roots; PDF, Office, EPUB, HTML and e-mail come as plain text.

        Returns an object with path, name, doc_type, context_only, text, total_chars, truncated and
        note. Only the first {read_chars} characters are returned: when the text is longer, truncated
        is true and note says how much was left out. context_only is true when the content could not be
        read (a scanned PDF, an unknown binary); text then only describes the file (name, folder, size).
        """
        file = confined(path)
        if not os.path.isfile(file):
            raise ToolError(f"{file} is not a file (list_directory shows a folder's entries)")
        try:
            extraction = extract(Path(file), max_bytes=engine.index_options().max_file_bytes)
        except ExtractionError as exc:
            raise ToolError(f"{paths.name_of(file)} cannot be read: {exc}") from None
        total = len(extraction.text)
        note = None
        if total > READ_CHARS:
            note = f"only the first {READ_CHARS} of {total} characters are shown"
        elif extraction.context_only:
            note = "the content could not be read; the text describes the file instead"
        return FileText(path=file, name=paths.name_of(file), doc_type=extraction.doc_type,
                        context_only=extraction.context_only, text=extraction.text[:READ_CHARS], total_chars=total,
                        truncated=total > READ_CHARS, note=note)

    def list_directory(path: FolderPath) -> DirectoryListing:
        """List a folder inside the indexed roots, folders first, with each entry's index status.

        An empty path lists the indexed roots themselves. Returns an object with path, entries and more.
        Each entry has name, path, is_dir, kind (file, folder, or block: a folder indexed as one unit),
        status (indexed, pending, failed, block, block member, ignored or not indexed; null for a plain
        folder), doc_type, and error (why a failed file failed). Hidden entries are left out; more counts
        the entries past the listing's limit.
        """
        try:
            listing = engine.browser().listing(path.strip())
        except FileNotFoundError as exc:
            raise ToolError(str(exc)) from None
        except OutsideRoots as exc:
            raise ToolError(f"refused: {exc}") from None
        except OSError as exc:
            raise ToolError(f"cannot list {path}: {exc.strerror or exc}") from None
        entries = [DirectoryEntry(name=e.name, path=e.path, is_dir=e.is_dir, kind=e.kind, status=e.status,
                                  doc_type=e.doc_type, error=e.error) for e in listing.entries]
        return DirectoryListing(path=listing.path, entries=entries, more=listing.more)

    for fn in (search_files, meaning_tree, read_file, list_directory):
        tool(fn)
    return server


def _inside(guard: RootGuard, path: str) -> bool:
    try:
        guard.check(path)
    except OutsideRoots:
        return False
    return True


def _prune(node: TreeNode, floor: float, depth: int = 0) -> Branch:
    shown = [c for c in node.children if c.score >= floor][:TREE_CHILDREN] if depth < TREE_DEPTH else []
    return Branch(name=node.name or "(all roots)", path=node.path, is_dir=node.is_dir, heat=round(node.score, 4),
                  children=[_prune(c, floor, depth + 1) for c in shown], omitted=len(node.children) - len(shown))


def mcp(http: bool = typer.Option(False, "--http", help="Serve streamable HTTP on 127.0.0.1 instead of stdio."),
        port: Optional[int] = typer.Option(None, "--port", help=f"Port for --http (default {DEFAULT_PORT})."),
        data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Where the index lives (default: user data "
                                                "folder; SENSETREE_HOME overrides).")):
    """Serve the index to other assistants over the Model Context Protocol (stdio, or --http)."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    if port is not None and not http:
        log.error("--port needs --http (on stdio there is no port)")
        raise typer.Exit(2)
    with Engine(data_dir) as engine:
        for notice in engine.notices:
            log.warning(notice)
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
