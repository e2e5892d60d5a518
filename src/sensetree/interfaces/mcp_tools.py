"""The MCP tools: the index for other assistants, read-only, over the same engine as every interface.

The engine's operations that name a tool (``operations.TOOLS``), with the same confinement as the chat assistant (the engine's ``Reader``): a path is
checked before anything is read or listed, and a refusal is a tool error the model can read,
never a traceback. Imported only by ``sensetree mcp``: the SDK takes most of a second to import.
"""

import inspect
import os
from dataclasses import fields, replace
from importlib.metadata import version
from typing import TYPE_CHECKING, Annotated, Any, Callable, get_type_hints

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict

from ..answers import Entry, FileContents, Listing
from ..engine import Engine
from ..errors import NotFound, SenseTreeError
from ..operations import READ_CHARS, TOOLS, Operation, Param
from ..reader import OutsideRoots
from ..search.types import SearchResponse, SearchResult, SimilarResponse, TreeNode, TreeResponse, Version

TREE_DEPTH = 4  # levels shown below the top of the meaning tree
TREE_CHILDREN = 8  # strongest children shown per folder
TREE_HEAT_FLOOR = 0.5  # children cooler than this share of the hottest node are left out
LIMITS = {"read_chars": READ_CHARS, "tree_depth": TREE_DEPTH, "tree_children": TREE_CHILDREN}

INSTRUCTIONS = """SenseTree searches the user's own indexed folders by meaning (hybrid dense + BM25 retrieval).
Use search_files to find which files talk about something, meaning_tree to see which part of the folder
tree is about it, then read_file on a result's path to read it; list_directory with an empty path shows the
roots. Only paths inside the indexed roots can be read or listed; anything else is refused."""

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def _view(name: str, result: type, keys: tuple[str, ...], **more: Any) -> Any:
    """A tool's view of a result: ``more``, then ``keys`` of the result's JSON typed as the result declares them."""
    hints = get_type_hints(result, include_extras=True)
    return TypedDict(name, {**more, **{key: hints[key] for key in keys}})  # type: ignore[operator]


# what a model is shown of a search result: no ranks or scores of the legs
if TYPE_CHECKING:  # a view made at run time is no type to a checker: it sees the JSON object it is
    SearchHit = dict[str, Any]
    DirectoryEntry = dict[str, Any]
    FileText = dict[str, Any]
else:
    SearchHit = _view(
        "SearchHit",
        SearchResult,
        ("path", "name", "score", "snippet", "chunk_index", "location", "location_label", "duplicates"),
        rank=int,
    )
    DirectoryEntry = _view("DirectoryEntry", Entry, ("name", "path", "is_dir", "kind", "status", "doc_type", "error"))
    FileText = _view("FileText", FileContents, tuple(field.name for field in fields(FileContents)))  # all of it


class SearchAnswer(TypedDict):
    query: str
    scope: str | None
    results: list[SearchHit]
    notices: list[str]


class SimilarAnswer(SearchAnswer):
    copies: list[str]
    versions: list[Version]


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


class DirectoryListing(TypedDict):
    path: str | None
    entries: list[DirectoryEntry]
    more: int


def _search_answer(response: SearchResponse, params: Any) -> SearchAnswer:
    hits = [
        SearchHit(rank=rank, **{key: r.as_dict()[key] for key in SearchHit.__annotations__ if key != "rank"})
        for rank, r in enumerate(response.results, start=1)
    ]
    return SearchAnswer(query=response.query, scope=params.scope, results=hits, notices=list(response.notices))


def _similar_answer(response: SimilarResponse, params: Any) -> SimilarAnswer:
    return SimilarAnswer(**_search_answer(response, params), copies=response.copies, versions=list(response.versions))


def _listing_answer(listing: Listing, params: Any) -> DirectoryListing:
    entries = [
        DirectoryEntry(**{key: getattr(e, key) for key in DirectoryEntry.__annotations__}) for e in listing.entries
    ]
    return DirectoryListing(path=listing.path, entries=entries, more=listing.more)


def _read_answer(read: FileContents, params: Any) -> FileText:
    return FileText(**read.as_dict())


def _tree_answer(response: TreeResponse, params: Any) -> MeaningTree:
    node = response.tree
    tree = _prune(node, node.score * TREE_HEAT_FLOOR) if node else None
    return MeaningTree(query=response.query, scope=params.scope, tree=tree, notices=response.notices)


# How an operation's result reaches an MCP client (its output schema from the function's return type),
# and what the tool's description adds for it; a result type without an entry is sent as its JSON.
ANSWERS: dict[type, Callable[[Any, Any], Any]] = {
    SearchResponse: _search_answer,
    SimilarResponse: _similar_answer,
    TreeResponse: _tree_answer,
    Listing: _listing_answer,
    FileContents: _read_answer,
}
SHOWN = {
    TreeResponse: "To stay readable the tree shows {tree_depth} levels below the top, at most {tree_children} "
    "children per folder and none cooler than half the hottest node; omitted counts the "
    "children left out. tree is null when nothing is indexed there.",
    SearchResponse: "Pass a result's path to read_file for the whole text.",
}


def operation_tool(engine: Engine, op: Operation) -> Callable[..., Any]:
    """An MCP tool for ``op``: its schema from the parameter object, a refusal or bad input as a tool error."""
    answer_type = get_type_hints(ANSWERS[op.result])["return"] if op.result in ANSWERS else op.result

    def tool(**values: Any) -> Any:
        try:
            params = op.parse(values, tool=True)
            if getattr(params, "scope", None):
                params = replace(params, scope=_scope_folder(engine, params.scope))
            result = op.run(engine, params)
        except OutsideRoots as exc:
            raise ToolError(f"refused: {exc}") from None
        except NotFound as exc:
            raise ToolError(f"{exc} (list_directory shows a folder's entries)") from None
        except SenseTreeError as exc:
            raise ToolError(str(exc)) from None
        return ANSWERS[op.result](result, params) if op.result in ANSWERS else result.as_dict()

    tool.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(
                p.name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=_tool_annotation(p),
                default=inspect.Parameter.empty if p.required else p.default,
            )
            for p in op.fields(tool=True)
        ],
        return_annotation=answer_type,
    )
    tool.__name__ = op.tool or op.name
    tool.__doc__ = "\n\n".join(part for part in (op.summary, op.detail, SHOWN.get(op.result, "")) if part)
    return tool


def _scope_folder(engine: Engine, scope: str) -> str:
    """A scope a model gives is a folder inside the roots, or the call is refused (a person is shown
    a notice instead: a model is better told plainly)."""
    folder = engine.reader().check(scope)
    if not os.path.isdir(folder):
        raise ToolError(f"{folder} is not a folder")
    return folder


def _tool_annotation(param: Param) -> Any:
    kind = param.type | None if param.optional else param.type
    return Annotated[
        kind, Field(description=param.doc.help, ge=param.doc.ge, le=param.doc.le, max_length=param.doc.max_length)
    ]


def build_server(engine: Engine) -> MCPServer:
    server = MCPServer("sensetree", instructions=INSTRUCTIONS, version=version("sensetree"), log_level="WARNING")
    for op in TOOLS.values():
        _register(server, operation_tool(engine, op))
    return server


def _register(server: MCPServer, tool: Callable[..., Any]) -> None:
    """A read-only tool; its docstring states the limits, filled in from the constants."""
    server.add_tool(tool, description=inspect.cleandoc(tool.__doc__ or "").format(**LIMITS), annotations=READ_ONLY)


def _prune(node: TreeNode, floor: float, depth: int = 0) -> Branch:
    shown = [c for c in node.children if c.score >= floor][:TREE_CHILDREN] if depth < TREE_DEPTH else []
    return Branch(
        name=node.name or "(all roots)",
        path=node.path,
        is_dir=node.is_dir,
        heat=round(node.score, 4),
        children=[_prune(c, floor, depth + 1) for c in shown],
        omitted=len(node.children) - len(shown),
    )
