"""The engine's operations, each declared once: a parameter object and a result type; the handler
that takes the one and returns the other is in ``handlers/`` (bound by ``@handles``).

The interfaces derive their own declarations from these (CLI arguments and options in
``interfaces/operations_cli.py``, HTTP query parameters in ``interfaces/api/operations.py``, MCP
tool schemas in ``interfaces/mcp_tools.py``, the assistant's tool schemas in ``chat/tools.py``) and
only render results. Adding an operation is: its parameter class and an ``Operation`` entry here,
one ``@handles`` function in the handler module of its area, and the stage that does the work.

A parameter is a dataclass field annotated ``Annotated[type, Doc(...)]``: the type says how to
read it, ``Doc`` what an interface shows (help, bounds, the CLI flag). ``Operation.parse`` reads
values from text or JSON (a query string, a tool call) and checks the bounds, so every interface
refuses the same input with the same ``BadInput`` message.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Mapping

from .answers import (
    Diagnosis,
    Download,
    FileContents,
    FileDetail,
    FolderMode,
    Ignored,
    Indexed,
    Listing,
    ModelsCatalogue,
    Opened,
    PageImage,
    Preview,
    ProbeReport,
    Pulled,
    Queue,
    Requeued,
    RootAdded,
    RootRemoved,
    Roots,
    Sense,
    SettingChanged,
    SettingsView,
    Status,
    Summary,
    TakenBack,
)
from .errors import BadInput
from .ingest.progress import Progress as IndexProgress
from .search.types import SearchResponse, SimilarResponse, TreeResponse

MAX_PATH_CHARS = 32_767  # the longest path any system allows (Windows' extended-length paths)
READ_CHARS = 20_000  # what read_file gives a model of a file's text (MCP and the assistant: its budget cuts more)


@dataclass(frozen=True)
class Doc:
    """What the interfaces show about one parameter beyond its type."""

    help: str
    ge: int | None = None  # bounds of a number
    le: int | None = None
    max_length: int | None = None  # of a text
    min_length: int | None = None
    flag: str | None = None  # the CLI option ("--limit"); "--<name>" when None
    short: str | None = None  # its short form ("-n")
    argument: bool = False  # a CLI argument (positional) rather than an option
    http: str | None = None  # the query parameter's name when it is not the field's ("q")
    tools: bool = True  # offered to models (MCP clients, the assistant) too
    tool_default: int | None = None  # a model reads every result it asks for: fewer by default for it,
    tool_le: int | None = None  # and at most this many
    pattern: str | None = None  # a text must match this (a regular expression, whole)


@dataclass(frozen=True)
class Param:
    """One field of a parameter object, as an interface needs it."""

    name: str
    type: type  # the bare type: str, int, float or bool; object: any JSON value, or text
    optional: bool  # None is allowed
    default: Any  # dataclasses.MISSING when required
    doc: Doc

    @property
    def required(self) -> bool:
        return self.default is dataclasses.MISSING


@functools.cache
def params_of(params: type) -> tuple[Param, ...]:
    """The fields of the parameter class ``params``, in order."""
    hints = typing.get_type_hints(params, include_extras=True)
    found = []
    for f in dataclasses.fields(params):
        hint = hints[f.name]
        doc = next((m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Doc)), None)
        if doc is None:
            raise TypeError(f"{params.__name__}.{f.name} needs Annotated[..., Doc(...)]")
        bare = typing.get_args(hint)[0]
        union = typing.get_args(bare) if _is_union(bare) else ()
        value_type = next((t for t in union if t is not type(None)), bare)
        found.append(Param(f.name, value_type, type(None) in union, f.default, doc))
    return tuple(found)


@functools.cache
def _tool_view(params: type) -> tuple[Param, ...]:
    shown = []
    for param in params_of(params):
        doc = param.doc
        if not doc.tools:
            continue
        if doc.tool_default is not None or doc.tool_le is not None:
            default = param.default if doc.tool_default is None else doc.tool_default
            param = dataclasses.replace(param, default=default, doc=dataclasses.replace(doc, le=doc.tool_le or doc.le))
        shown.append(param)
    return tuple(shown)


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


class Effect(StrEnum):
    """What an operation does to the index, which decides how an interface runs it."""

    READS = "reads"  # a question: GET, answered by a running server when there is one
    QUEUES = "queues"  # puts files back in the queue: POST; a server indexes them soon after
    EXCLUSIVE = "exclusive"  # takes the writer lock: POST; a server's own indexing steps aside meanwhile


@dataclass(frozen=True)
class Operation:
    """One thing a user can ask of the engine, whichever interface they use."""

    name: str  # the CLI command, and the tool name with ``tool``
    summary: str  # one line: CLI help, route summary, tool description
    params: type  # the parameter dataclass
    result: type  # has ``as_dict()`` and ``from_dict()``; its handler (``handlers/``) returns it
    tool: str | None = None  # offered to MCP clients and the assistant under this name
    detail: str = ""  # more for a model than the summary says: what comes back, how to use it
    effect: Effect = Effect.READS
    http: str | None = None  # the HTTP method where it is not the effect's (GET or POST): PUT, DELETE
    path: str | None = None  # the route where it is not /api/<name> (several operations on one resource)
    progress: bool = False  # the handler takes ``on_progress``: a streaming interface shows each step
    events: Any = str  # what ``on_progress`` hears: a step in words, or typed events (``index``)
    local: bool = False  # runs in the process that asks, for as long as it takes: no HTTP route,
    # never sent to a running server (``index``: a server indexes on its own)
    media: str | None = None  # the answer is bytes of this type, not JSON (``page``: image/png)

    @property
    def route(self) -> str:
        return self.path or f"/api/{self.name}"

    @property
    def verb(self) -> str:
        """The HTTP method: GET for a question, POST for a change, unless ``http`` says otherwise."""
        return self.http or ("GET" if self.effect is Effect.READS else "POST")

    @property
    def in_query(self) -> bool:
        """Whether the parameters travel in the query string (GET, DELETE) rather than a JSON body."""
        return self.verb in ("GET", "DELETE")

    def fields(self, tool: bool = False) -> tuple[Param, ...]:
        """The parameters as people give them, or with ``tool`` as a model is offered them (those it
        may set, with its own default and bound)."""
        return _tool_view(self.params) if tool else params_of(self.params)

    def parse(self, values: Mapping[str, Any], tool: bool = False, typed: bool = False) -> Any:
        """The parameter object from text or JSON values (missing or empty: the default); ``BadInput``
        naming the parameter when a value is missing, of the wrong kind or out of bounds. ``tool``: the
        values a model gave, read as ``fields(tool=True)`` declares them. ``typed``: what a person typed
        at a terminal, where an empty text is still a value and a long one no burden to carry (the
        engine answers both, and cuts a long query with a notice)."""
        known = {p.name: p for p in self.fields(tool)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise BadInput(f"{self.name} takes no {', '.join(unknown)} (it takes {', '.join(known)})")
        read = {}
        for param in known.values():
            value = values.get(param.name)
            blank = value is None or (isinstance(value, str) and not value.strip() and not (typed and param.required))
            if blank:
                if param.required:
                    raise BadInput(f"{self.name} needs {param.name}: {param.doc.help}")
                if param.default is not dataclasses.MISSING:
                    read[param.name] = param.default
                continue
            read[param.name] = _read(param, value)
        return self.check(self.params(**read), tool, bounded=not typed)

    def check(self, params: Any, tool: bool = False, bounded: bool = True) -> Any:
        """``params`` when every value is within its bounds; ``BadInput`` otherwise. Not ``bounded``:
        texts may be longer than a request may carry."""
        for param in self.fields(tool):
            value, doc = getattr(params, param.name), param.doc
            if value is None:
                if not param.optional:
                    raise BadInput(f"{param.name} is required: {doc.help}")
                continue
            if doc.ge is not None and value < doc.ge:
                raise BadInput(
                    f"{param.name} must be at least {doc.ge}"
                    + (f" (and at most {doc.le})" if doc.le is not None else "")
                    + f", not {value}"
                )
            if doc.le is not None and value > doc.le:
                raise BadInput(f"{param.name} must be at most {doc.le}, not {value}")
            if doc.min_length is not None and isinstance(value, str) and len(value) < doc.min_length:
                raise BadInput(
                    f"{param.name} must have at least {doc.min_length} character{'s' if doc.min_length != 1 else ''}"
                )
            if bounded and doc.max_length is not None and isinstance(value, str) and len(value) > doc.max_length:
                raise BadInput(f"{param.name} is longer than {doc.max_length:,} characters")
            if doc.pattern is not None and isinstance(value, str) and not re.fullmatch(doc.pattern, value):
                raise BadInput(f"{param.name} must match {doc.pattern}, not {value!r}")
        return params

    def query(self, params: Any) -> dict[str, Any]:
        """``params`` as a query string's values (for a running server), under the route's names."""
        return {
            p.doc.http or p.name: getattr(params, p.name) for p in self.fields() if getattr(params, p.name) is not None
        }

    def run(self, engine: Any, params: Any, bounded: bool = True, **extra: Any) -> Any:
        """The engine's answer (``Engine.run``: the operation's handler), ``params`` checked first; ``extra``
        (``on_progress``, the assistant's ``model``) goes to a handler that takes it."""
        return engine.run(self.check(params, bounded=bounded), **extra)


def _read(param: Param, value: Any) -> Any:
    kind = param.type
    if kind is object:  # read where it is used (a setting's value, by the setting's type)
        return value
    try:
        if kind is bool:
            if isinstance(value, bool):
                return value
            if str(value).lower() in ("1", "true", "yes", "on"):
                return True
            if str(value).lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if kind is int and isinstance(value, float) and not value.is_integer():
            raise ValueError(value)
        return kind(value)
    except (TypeError, ValueError):
        raise BadInput(f"{param.name} must be {kind.__name__}, not {value!r}") from None


# --- the operations -------------------------------------------------------------------------------

# The parameters several operations share, declared once.
Query = Annotated[str, Doc("What the files should be about, in words.", max_length=10_000, argument=True, http="q")]
Scope = Annotated[str | None, Doc("Only files under this folder.")]
Types = Annotated[
    str | None,
    Doc("Only these types, comma-separated: pdf,docx,md,jpg (a type or an extension).", flag="--type", http="type"),
]
After = Annotated[str | None, Doc("Only files modified on or after this day (YYYY-MM-DD).")]
Before = Annotated[str | None, Doc("Only files modified on or before this day (YYYY-MM-DD).")]
AsWritten = Annotated[
    bool,
    Doc(
        "Search the words as typed: no file type, time or folder is read from them, no typo corrected"
        " (a notice names the words read or corrected otherwise)."
    ),
]


@dataclass(frozen=True)
class SearchParams:
    query: Query
    scope: Scope = None
    limit: Annotated[int, Doc("How many files, best first.", ge=1, le=100, short="-n", tool_default=10, tool_le=50)] = (
        20
    )
    types: Types = None
    modified_after: After = None
    modified_before: Before = None
    hybrid: Annotated[
        bool | None,
        Doc("Override retrieval.hybrid (false: the dense leg only).", flag="--hybrid/--no-hybrid", tools=False),
    ] = None
    rerank: Annotated[bool | None, Doc("Override retrieval.rerank.", flag="--rerank/--no-rerank", tools=False)] = None
    literal: AsWritten = False


@dataclass(frozen=True)
class TreeParams:
    query: Query
    scope: Scope = None
    limit: Annotated[int, Doc("Chunks considered (10-1000).", ge=10, le=1000, tools=False)] = 400
    types: Types = None
    modified_after: After = None
    modified_before: Before = None
    literal: AsWritten = False


@dataclass(frozen=True)
class SimilarParams:
    path: Annotated[str, Doc("A file in your folders (as search shows it).", max_length=MAX_PATH_CHARS, argument=True)]
    scope: Annotated[str | None, Doc("Only files under this folder.")] = None
    limit: Annotated[int, Doc("How many files (1-100).", ge=1, le=100, short="-n")] = 10


@dataclass(frozen=True)
class BrowseParams:
    path: Annotated[
        str | None,
        Doc(
            "A folder inside the indexed roots; the roots themselves when left out.",
            argument=True,
            max_length=MAX_PATH_CHARS,
        ),
    ] = None


@dataclass(frozen=True)
class RetryParams:
    path: Annotated[
        str | None,
        Doc("A failed file or a folder; every failed file when left out.", argument=True, max_length=MAX_PATH_CHARS),
    ] = None


@dataclass(frozen=True)
class ReindexParams:
    path: Annotated[
        str, Doc("A file, or a folder whose files are all read again.", argument=True, max_length=MAX_PATH_CHARS)
    ]


@dataclass(frozen=True)
class IgnoreParams:
    path: Annotated[
        str | None,
        Doc(
            "A file or folder to leave out of the index; every failed file when left out.",
            argument=True,
            max_length=MAX_PATH_CHARS,
        ),
    ] = None


@dataclass(frozen=True)
class UnignoreParams:
    path: Annotated[str, Doc("An ignored file or folder, to index again.", argument=True, max_length=MAX_PATH_CHARS)]


Focus = Annotated[
    str | None, Doc("A question the user asked about the whole file; without one, a summary.", max_length=2000)
]


@dataclass(frozen=True)
class SummariseParams:
    path: Annotated[str, Doc("A file or small folder.", argument=True, max_length=MAX_PATH_CHARS)]
    question: Focus = None


@dataclass(frozen=True)
class CompareParams:
    path: Annotated[str, Doc("The first file.", argument=True, max_length=MAX_PATH_CHARS)]
    other: Annotated[str, Doc("The second file.", argument=True, max_length=MAX_PATH_CHARS)]
    question: Focus = None


@dataclass(frozen=True)
class ReadParams:
    path: Annotated[
        str,
        Doc(
            "Full path of a file inside an indexed root, as search_files gives.",
            argument=True,
            max_length=MAX_PATH_CHARS,
        ),
    ]


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in [
        Operation(
            "search",
            "Ranked files for a query: hybrid retrieval, fused, reranked, one result per file.",
            SearchParams,
            SearchResponse,
            tool="search_files",
            detail="Each result has its rank, full path, file name, a score between 0 and 1 (higher is more "
            "relevant), a snippet of the passage that matched, that passage's chunk_index and location "
            'in the file (a page, slide, sheet or chapter, with a label such as "p. 12"), and the '
            "other paths holding an identical copy (duplicates). types, modified_after and "
            "modified_before narrow the search to those files. Notices say when retrieval was degraded.",
        ),
        Operation(
            "tree",
            "The meaning tree: which part of your folders is about the query.",
            TreeParams,
            TreeResponse,
            tool="meaning_tree",
        ),
        Operation(
            "similar",
            "Files most like this one: nearest by meaning, one result per file.",
            SimilarParams,
            SimilarResponse,
            tool="similar_files",
            detail="Give the full path of a file inside the indexed roots (a search result's path). Returns "
            "the files closest to it in meaning, in search_files' shape, best first; apart from them "
            "its identical copies (copies) and its versions: files that share most of its wording, "
            "newest first, with their modification time and the share of wording they share.",
        ),
        Operation(
            "summarise",
            "Summarise a whole file or small folder, part by part.",
            SummariseParams,
            Summary,
            tool="summarise_file",
            progress=True,
            detail="The whole file is read in parts that fit the model, each part noted with the pages it covers, "
            "then the whole written from those notes; a folder gives each file's summary, then the whole. "
            "Returns summary (its sentences cite notes as [n]), notes (n, path, name, where: the pages or "
            "part, text), parts read and notices (what was left out).",
        ),
        Operation(
            "compare",
            "What differs between two files.",
            CompareParams,
            Summary,
            tool="compare_files",
            progress=True,
            detail="Give two full paths. Returns summary (what differs, citing notes as [n]) and notes: A's and "
            "B's parts with their pages, and for two versions of one text each changed passage and its "
            "page.",
        ),
        Operation(
            "browse",
            "A folder's entries, folders first, with each one's index status (the roots without a path).",
            BrowseParams,
            Listing,
            tool="list_directory",
            detail="Each entry has name, path, is_dir, kind (file, folder, or block: a folder indexed as one "
            "unit), status (indexed, keyword, pending, failed, block, block member, ignored or not "
            "indexed; null for a plain folder), doc_type, and error (why a failed file failed). Hidden "
            "entries are left out; more counts the entries past the listing's limit.",
        ),
        Operation(
            "read",
            "Read the text of one file inside the indexed roots; PDF, Office, EPUB, HTML and e-mail come "
            "as plain text.",
            ReadParams,
            FileContents,
            tool="read_file",
            detail="Returns an object with path, name, doc_type, context_only, text, total_chars, truncated and "
            f"note. Only the first {READ_CHARS} characters are returned: when the text is longer, truncated "
            "is true and note says how much was left out. context_only is true when the content could not "
            "be read (a scanned PDF, an unknown binary); text then only describes the file (name, folder, "
            "size).",
        ),
        Operation(
            "retry",
            "Requeue failed files; `sensetree index` picks them up.",
            RetryParams,
            Requeued,
            effect=Effect.QUEUES,
        ),
        Operation(
            "reindex",
            "Index a file, or every file under a folder, again from scratch.",
            ReindexParams,
            Requeued,
            effect=Effect.QUEUES,
        ),
        Operation(
            "ignore",
            "Leave a file or folder out of the index for good (every failed file when no path is given).",
            IgnoreParams,
            Ignored,
            effect=Effect.EXCLUSIVE,
        ),
        Operation(
            "unignore",
            "Take an ignored file or folder back into the index.",
            UnignoreParams,
            TakenBack,
            effect=Effect.QUEUES,
        ),
    ]
}

# --- what the engine says about itself, the roots, a file's sense, what the web app shows of a file ---


@dataclass(frozen=True)
class StatusParams:
    """``status`` takes nothing."""


@dataclass(frozen=True)
class QueueParams:
    limit: Annotated[
        int | None,
        Doc("How many files of each waiting list; all when left out (every failed file is listed).", ge=1, tools=False),
    ] = None


@dataclass(frozen=True)
class RootsParams:
    """``roots`` takes nothing."""


@dataclass(frozen=True)
class AddRootParams:
    path: Annotated[
        str, Doc("A folder to index in place (nothing is copied).", argument=True, max_length=MAX_PATH_CHARS)
    ]


@dataclass(frozen=True)
class RemoveRootParams:
    path: Annotated[
        str,
        Doc(
            "A root to stop indexing; its entries leave the index (the files are untouched).",
            argument=True,
            max_length=MAX_PATH_CHARS,
        ),
    ]


@dataclass(frozen=True)
class SenseParams:
    path: Annotated[str, Doc("A file in your folders.", argument=True, max_length=MAX_PATH_CHARS)]


@dataclass(frozen=True)
class PinParams:
    path: Annotated[str, Doc("A file in your folders.", argument=True, max_length=MAX_PATH_CHARS)]
    sense: Annotated[str, Doc("What the file is about, in words: re-indexing never overwrites it.", max_length=4000)]


@dataclass(frozen=True)
class FileParams:
    path: Annotated[str, Doc("A file or folder in your folders.", argument=True, max_length=MAX_PATH_CHARS)]


@dataclass(frozen=True)
class PreviewParams:
    path: Annotated[str, Doc("A file in your folders.", argument=True, max_length=MAX_PATH_CHARS)]
    chunk: Annotated[
        int, Doc("The chunk whose place in the text is given (a search result's chunk_index).", ge=0, le=2**31 - 1)
    ] = 0  # chunk numbers are stored as 32-bit integers
    mark: Annotated[
        str | None, Doc("start,end: characters of the text to mark (a cited sentence).", pattern=r"\d{1,9},\d{1,9}")
    ] = None


@dataclass(frozen=True)
class PageParams:
    path: Annotated[str, Doc("A PDF in your folders.", argument=True, max_length=MAX_PATH_CHARS)]
    page: Annotated[int, Doc("The page, from 1.", ge=1, le=2**31 - 1)] = 1  # what PDFium counts pages in


@dataclass(frozen=True)
class OpenParams:
    path: Annotated[str, Doc("An absolute path inside a root.", argument=True, max_length=MAX_PATH_CHARS)]
    page: Annotated[int | None, Doc("The page to open at, where the viewer takes one.", ge=1, le=2**31 - 1)] = None


@dataclass(frozen=True)
class FolderModeParams:
    path: Annotated[str, Doc("A folder in your folders.", argument=True, max_length=MAX_PATH_CHARS)]
    mode: Annotated[
        str | None,
        Doc(
            "block (indexed as one unit), recursive (file by file), or none to go back to the heuristics.",
            pattern="block|recursive",
        ),
    ] = None


@dataclass(frozen=True)
class SettingsParams:
    """``settings`` takes nothing."""


@dataclass(frozen=True)
class SetParams:
    key: Annotated[str, Doc("The setting's name, such as retrieval.rerank.", argument=True, max_length=200)]
    value: Annotated[object, Doc("A value of the setting's type (JSON), or text to read as one.", argument=True)]
    confirm: Annotated[
        bool,
        Doc(
            "Go ahead with a change that wipes the index (embedding.model or embedding.base_url "
            "while the index holds files): without it such a change is refused, saying what it "
            "would wipe.",
            flag="--yes",
            short="-y",
            tools=False,
        ),
    ] = False


@dataclass(frozen=True)
class ModelsParams:
    """``models`` takes nothing."""


@dataclass(frozen=True)
class PullParams:
    name: Annotated[str, Doc("A reranker the registry knows (`sensetree models list`).", argument=True, max_length=200)]


@dataclass(frozen=True)
class DoctorParams:
    """``doctor`` takes nothing."""


@dataclass(frozen=True)
class ProbeParams:
    role: Annotated[str, Doc("embedding, sense or chat.")]
    base_url: Annotated[str | None, Doc("The endpoint to try; the role's setting when left out.")] = None
    model: Annotated[str | None, Doc("The model it should have; the role's setting when left out.")] = None
    api_key: Annotated[str | None, Doc("Its key; the role's setting when left out.")] = None


OPERATIONS.update(
    {
        op.name: op
        for op in [
            Operation("status", "Roots, counts per status, models in use, index size.", StatusParams, Status),
            Operation(
                "queue", "Files waiting to be indexed and files that failed, with their last error.", QueueParams, Queue
            ),
            Operation("roots", "The folders indexed in place.", RootsParams, Roots),
            Operation(
                "add",
                "Register a folder as a root (nothing is copied; run `sensetree index` next).",
                AddRootParams,
                RootAdded,
                effect=Effect.QUEUES,
                path="/api/roots",
            ),
            Operation(
                "remove",
                "Stop indexing a root and drop its entries from the index (the files are untouched).",
                RemoveRootParams,
                RootRemoved,
                effect=Effect.EXCLUSIVE,
                http="DELETE",
                path="/api/roots",
            ),
            Operation(
                "sense",
                "Show a file's sense: a line on what it is about, from the sense model or pinned by hand.",
                SenseParams,
                Sense,
            ),
            Operation(
                "pin",
                "Correct a file's sense by hand; a pinned sense is never overwritten by re-indexing.",
                PinParams,
                Sense,
                effect=Effect.QUEUES,
                http="PUT",
                path="/api/sense",
            ),
            Operation(
                "file", "One file's or folder's detail: status, sense, chunks, last error.", FileParams, FileDetail
            ),
            Operation(
                "preview",
                "A file's extracted text, with the offsets of one chunk (and of a range to mark).",
                PreviewParams,
                Preview,
            ),
            Operation(
                "page",
                "A page of a PDF, rendered as a PNG (the preview marks a cited sentence on it).",
                PageParams,
                PageImage,
                media="image/png",
            ),
            Operation(
                "open",
                "Open a file in the system's default application (at a page, where it takes one).",
                OpenParams,
                Opened,
                http="POST",
            ),
            Operation(
                "folder-mode",
                "Index a folder as one block, or its contents file by file (none: as the heuristics decide).",
                FolderModeParams,
                FolderMode,
                effect=Effect.QUEUES,
            ),
            Operation("settings", "Every setting and the models per role.", SettingsParams, SettingsView),
            Operation(
                "set",
                "Change one setting (written to settings.toml); a new embedding model re-indexes everything.",
                SetParams,
                SettingChanged,
                effect=Effect.EXCLUSIVE,
                http="PUT",
                path="/api/settings",
            ),
            Operation(
                "models",
                "Embedding models bundled with the install, and the rerankers known to the registry.",
                ModelsParams,
                ModelsCatalogue,
            ),
            Operation(
                "pull",
                "Download a reranker into the data dir's models folder (needs the internet).",
                PullParams,
                Pulled,
                progress=True,
                events=Download,
                local=True,
            ),
            Operation(
                "doctor",
                "What is installed, what is missing and how to get it, and where things live. Loads no model.",
                DoctorParams,
                Diagnosis,
            ),
            Operation(
                "endpoint-test",
                "Is an endpoint reachable, does it have the model, which dimension.",
                ProbeParams,
                ProbeReport,
                http="POST",
            ),  # a key travels in a body, never in an address
        ]
    }
)


@dataclass(frozen=True)
class IndexParams:
    watch: Annotated[bool, Doc("Keep running and index changes as they happen.", tools=False)] = False
    confirm: Annotated[
        bool,
        Doc(
            "Go ahead when the settings name another embedding model than the index was made with (settings.toml "
            "edited by hand), which wipes the index: without it `index` refuses and `--watch` keeps the index.",
            flag="--yes",
            short="-y",
            tools=False,
        ),
    ] = False


# Indexing runs where it is asked, under the writer lock, for as long as it takes (a server indexes on its
# own: ``interfaces/background.py``). ``on_progress`` hears the live figures (``IndexProgress``) as they
# change and, under ``watch``, each round's ``Indexed`` as it ends; the handler returns the last one.
OPERATIONS["index"] = Operation(
    "index",
    "Index every root: keyword first (every file findable by its words), then meaning (vectors).",
    IndexParams,
    Indexed,
    effect=Effect.EXCLUSIVE,
    progress=True,
    events=IndexProgress | Indexed,
    local=True,
)


# The assistant's question: its answer streams (tokens, tool steps) from the chat layer above the engine,
# so it is no ``Operation``; its parameters are declared here all the same, and the API's body is made
# from them (``POST /api/chat``).
@dataclass(frozen=True)
class AskParams:
    question: Annotated[str, Doc("The question.", min_length=1, max_length=10_000, argument=True)]
    scope: Annotated[str | None, Doc("Only use files under this folder.")] = None
    conversation: Annotated[
        str | None,
        Doc("Go on with this conversation (its start event names it); a new one when left out.", tools=False),
    ] = None


TOOLS: dict[str, Operation] = {op.tool: op for op in OPERATIONS.values() if op.tool}
