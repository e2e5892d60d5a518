"""Answers of the engine's operations that belong to no search stage: a folder's listing, what a
change to the queue or the roots did, status and the queue, a file's sense, what the web app shows of
a file. Light on purpose: every interface imports them (a command answered by a running server loads
neither the stores nor the models)."""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

if TYPE_CHECKING:
    from pydantic import TypeAdapter


@dataclass(frozen=True)
class Rounded:
    """A float's JSON rounded to ``digits`` places: ``Annotated[float, Rounded(6)]`` on a result's field.
    Its pydantic schema is made when a result's schema is first asked for (pydantic is not imported before)."""

    digits: int

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return {
            **handler(source),
            "serialization": core_schema.plain_serializer_function_ser_schema(
                functools.partial(round, ndigits=self.digits), return_schema=core_schema.float_schema()
            ),
        }


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def adapter(result: type) -> TypeAdapter[Any]:
    """The JSON of the result type ``result``, and its schema, derived from its annotations: a field's
    name (or the ``alias`` in its ``field(metadata=...)``), ``Rounded`` floats, fields left out
    (``exclude``, ``exclude_if``), as pydantic reads them from a dataclass. Made once per type."""
    made = _ADAPTERS.get(result)
    if made is None:
        from pydantic import TypeAdapter

        made = _ADAPTERS[result] = TypeAdapter(result)
    return made


class Fields:
    """A result whose JSON, and the way back, is derived from its dataclass's annotations (``adapter``):
    the JSON the CLI prints, the HTTP API and MCP send, and a served answer is read back from; the HTTP
    routes document the same schema in OpenAPI (``interfaces/schemas.py``)."""

    def as_dict(self) -> dict[str, Any]:
        json: dict[str, Any] = adapter(type(self)).dump_python(self, by_alias=True)
        return json

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Any:
        """Back from ``as_dict`` (a served answer); what a server adds of its own (``indexing``) is left out."""
        return adapter(cls).validate_python(d)


@dataclass
class Entry:
    name: str
    path: str
    is_dir: bool
    kind: str  # file, folder or block
    status: str | None  # indexed, keyword, pending, failed, block, block member, ignored, not indexed
    doc_type: str | None = None
    chunks: int = 0
    error: str | None = None
    members: int = 0


@dataclass
class Listing(Fields):
    path: str | None
    parent: str | None
    entries: list[Entry] = field(default_factory=list)
    more: int = 0  # entries left out past LIST_ENTRIES


@dataclass(frozen=True)
class Requeued(Fields):
    """How many files go back to the queue (``retry``, ``reindex``)."""

    requeued: int


@dataclass(frozen=True)
class Ignored(Fields):
    """How many paths were left out of the index (``ignore``)."""

    ignored: int


@dataclass(frozen=True)
class TakenBack(Fields):
    """The path ``unignore`` gave back to the index (the next scan picks it up)."""

    path: str


# --- what the engine says about itself (built by overview.py) and about one file --------------------


@dataclass(frozen=True)
class Phases(Fields):
    """keyword-ready N / M and semantic N / M, with an ETA while an indexer embeds (in any process)."""

    files: int
    keyword_ready: int
    semantic: int
    chunks_left: int
    embed_rate: float  # chunks a second, while an indexer is embedding
    semantic_eta_s: float | None
    meaning: str = ""  # the two figures in words: "meaning for 1,310 of 5,183 files; the rest by about 14:20"


@dataclass(frozen=True)
class QueuedFile:
    path: str
    kind: str
    status: str
    attempts: int
    error: str | None
    notes: str | None


@dataclass(frozen=True)
class Queue(Fields):
    """Failed files with their errors, then what waits for each phase, then what carries a note."""

    failed: list[QueuedFile]
    pending: list[QueuedFile]
    pending_count: int
    keyword: list[QueuedFile]
    keyword_count: int
    noted: list[QueuedFile]
    ignored: list[str]


@dataclass(frozen=True)
class Status(Fields):
    """Roots, counts per status, the two progress figures, the models in use, the index size, notices."""

    data_dir: str
    roots: list[str]
    offline_roots: dict[str, float]  # root -> offline since (epoch s): kept, out of results until back
    counts: dict[str, int]
    phases: Phases
    chunks: int
    embedding_model: str
    sense_model: str
    reranker: str
    devices: list[dict[str, Any]]
    pace: dict[str, Any] | None  # paused or slowed on battery
    index_bytes: int
    notices: list[str] = field(default_factory=list)
    # a settings change that would wipe the index, held until confirmed: what it would wipe, how to go on
    unconfirmed_change: str | None = None


@dataclass(frozen=True)
class Roots(Fields):
    """The folders indexed in place (``roots``)."""

    roots: list[str]


@dataclass(frozen=True)
class RootAdded(Fields):
    """The root ``add`` registered, as the index names it."""

    root: str


@dataclass(frozen=True)
class RootRemoved(Fields):
    """How many entries left the index with the root ``remove`` dropped."""

    removed: int


@dataclass(frozen=True)
class Sense(Fields):
    """A file's sense (``sense``), or the one just pinned (``pin``): None before the file is indexed."""

    path: str
    sense: str | None
    source: str | None
    pinned: bool


@dataclass(frozen=True)
class FileDetail(Fields):
    """Everything the web app's detail panel shows about one file or folder (``file``)."""

    path: str
    name: str
    is_dir: bool
    is_root: bool
    kind: str  # file, folder or block
    status: str | None  # None: not in the index
    doc_type: str | None
    size: int
    mtime: float
    chunks_count: int
    attempts: int
    error: str | None
    sense: dict[str, Any] | None  # text, source, pinned
    chunks: list[dict[str, Any]]  # chunk_index, text
    folder_mode: str | None  # block or recursive, as the user chose
    block_reason: str | None  # why a folder looks like a block


@dataclass(frozen=True)
class Preview(Fields):
    """A file's extracted text, where one chunk sits in it and a range to mark (``preview``)."""

    path: str
    name: str
    text: str
    start: int  # the chunk's characters in the text; -1 when not found
    end: int
    chunk_index: int
    location: dict[str, Any] | None
    location_label: str
    truncated: bool
    mark: dict[str, int] | None  # start, end
    page_mark: dict[str, Any] | None = None  # a PDF's marked range on its page: page, aspect, boxes (pages.py)


@dataclass(frozen=True)
class SettingsView(Fields):
    """Every setting with its value, default, help and type (``settings``), and the models per role."""

    settings: list[dict[str, Any]]
    models: dict[str, list[dict[str, Any]]]

    def values(self) -> dict[str, Any]:
        return {s["key"]: s["value"] for s in self.settings}


@dataclass(frozen=True)
class SettingChanged(Fields):
    """A setting's new value (``set``), and what the change did beside (a new embedding model: the vectors go)."""

    key: str
    value: Any
    notice: str | None


@dataclass(frozen=True)
class FolderMode(Fields):
    """How a folder is indexed from now on (``folder-mode``): as one block, file by file, or (None) as the
    heuristics decide."""

    path: str
    mode: str | None


@dataclass(frozen=True)
class ProbeReport(Fields):
    """Whether an endpoint answers, has the model, and which dimension its vectors have (``endpoint-test``)."""

    ok: bool
    reachable: bool
    model_present: bool | None  # None: the server does not list its models
    dimension: int | None
    message: str


@dataclass(frozen=True)
class ModelsCatalogue(Fields):
    """The embedding models bundled with the install (which one is in use) and the rerankers the registry
    knows, installed or not (``models``)."""

    embedding: list[dict[str, Any]]  # name, about, in_use
    rerankers: list[dict[str, Any]]  # name, size, licence, installed, where


@dataclass(frozen=True)
class FileContents(Fields):
    """The text of one file as a model reads it (``read``: the ``read_file`` tool of MCP and the assistant),
    at most ``reader.READ_CHARS`` characters of it."""

    path: str
    name: str
    doc_type: str
    context_only: bool  # the content could not be read: the text describes the file instead
    text: str
    total_chars: int
    truncated: bool
    note: str | None  # what was left out, in words


@dataclass(frozen=True)
class Indexed(Fields):
    """What one indexing run (or, under ``--watch``, one round) did (``index``)."""

    files: int
    keyword_ready: int
    semantic: int
    chunks_embedded: int
    chunks_left: int
    failed: int
    stopped: bool  # stopped before the queue was empty: the rest resumes next time
    seconds: float


@dataclass(frozen=True)
class Diagnosis(Fields):
    """What this install has per model role, what is missing and how to get it, where things live
    (``doctor``; ``models/install.py``)."""

    sensetree: str | None
    python: dict[str, Any]  # version, executable, supported
    platform: dict[str, Any]  # system, machine, name, supported, why
    folders: dict[str, str]  # data, settings, models, cache, model_cache
    settings_problem: str | None  # why the settings file could not be read, None when it could
    runtimes: dict[str, str | None]  # package -> version, None when not installed
    onnxruntime_providers: list[str]
    models: list[dict[str, Any]]  # role, name, state, where, how
    missing: list[dict[str, Any]]  # the models among them still to fetch


@dataclass(frozen=True)
class Download(Fields):
    """How far one file of a download is (``pull``'s progress)."""

    file: str
    done: int
    total: int  # 0 when the server does not say


@dataclass(frozen=True)
class Pulled(Fields):
    """A model downloaded into the data dir's models folder (``pull``)."""

    name: str
    folder: str


@dataclass(frozen=True)
class PageImage:
    """A page of a PDF rendered as a PNG (``page``): bytes, not JSON (``Operation.media``); its JSON carries
    them in base64."""

    data: bytes

    def as_dict(self) -> dict[str, Any]:
        return {"data": base64.b64encode(self.data).decode("ascii")}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PageImage:
        return cls(base64.b64decode(d["data"]))


@dataclass(frozen=True)
class Opened(Fields):
    """The file the desktop's application was asked to open (a member of an archive opens as its archive),
    and the page it opened at, where the viewer takes one (``open``)."""

    opened: str
    page: int | None


@dataclass
class Note:
    """What the model noted of one part of a file (or a folder's file, or a change between two files):
    the summary cites it by ``n``, and ``where`` says which pages or part it covers."""

    n: int
    path: str
    name: str
    where: str  # "pp. 3–5", "part 2 of 7", "its stored summary", "changed on p. 4"
    text: str
    location: dict | None = None  # the first place it covers: {"page": 3}
    cited: bool = False


@dataclass
class Summary(Fields):
    """A whole file, a small folder or two files summarised part by part (``summarise``, ``compare``)."""

    kind: str  # file, folder or compare
    paths: list[str]
    question: str | None
    summary: str  # the whole, each sentence citing notes as [n]
    notes: list[Note] = field(default_factory=list)
    parts: int = 0  # parts the model read
    notices: list[str] = field(default_factory=list)
    model: str = ""
    seconds: Annotated[float, Rounded(3)] = 0.0
