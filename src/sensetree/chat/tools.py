"""The assistant's tools: the engine's operations that name a tool (search, read, list, ...), never outside
the indexed roots or the chat's scope (the engine's ``Reader``), their results as text the model cites."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .. import paths
from ..answers import FileContents, Listing, Summary
from ..errors import SenseTreeError
from ..handlers.files import chunk_text
from ..operations import TOOLS, Operation
from ..reader import OutsideRoots
from ..search.types import SearchResponse, SearchResult, SimilarResponse
from ..summaries import ChatModel

SEARCH_LIMIT = 8
# a tool's output is blocks, one per source, each opening with the line "[n] name — path"
_BLOCK = re.compile(r"^\[(\d+)\] [^\n]*\n", re.MULTILINE)


@dataclass
class Source:
    """A file that grounded the answer; ``n`` is the number the model cites it by."""

    n: int
    path: str
    name: str
    score: float | None
    snippet: str
    chunk_index: int | None
    origin: str  # "seed", "search" or "read"
    cited: bool = False
    location: dict | None = None  # where in the file the excerpt is: {"page": 12}
    location_label: str = ""  # "p. 12", "slide 3": shown beside the name, "report.pdf p. 12"

    @property
    def label(self) -> str:
        return f"{self.name} {self.location_label}" if self.location_label else self.name

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "path": self.path,
            "name": self.name,
            "score": None if self.score is None else round(self.score, 6),
            "snippet": self.snippet,
            "chunk_index": self.chunk_index,
            "location": self.location,
            "location_label": self.location_label,
            "origin": self.origin,
            "cited": self.cited,
        }


@dataclass
class Sources:
    """Every file this answer saw, numbered in order of first appearance, one entry per path."""

    items: dict[str, Source] = field(default_factory=dict)

    def add(self, path: str, score: float | None, snippet: str, chunk_index: int | None, origin: str) -> Source:
        known = self.items.get(path)
        if known is None:
            known = self.items[path] = Source(
                len(self.items) + 1, path, paths.name_of(path), score, snippet, chunk_index, origin
            )
        elif score is not None and (known.score is None or score > known.score):
            known.score, known.snippet, known.chunk_index = score, snippet, chunk_index
        return known

    def add_result(self, result: SearchResult, origin: str) -> Source:
        source = self.add(result.path, result.score, result.snippet, result.chunk_index, origin)
        if source.chunk_index == result.chunk_index:  # this result's excerpt stands for the file
            source.location, source.location_label = result.location, result.location_label
        return source

    def by_number(self, n: int) -> Source | None:
        return next((s for s in self.items.values() if s.n == n), None)

    def __iter__(self):
        return iter(self.items.values())

    def __len__(self) -> int:
        return len(self.items)


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


# The engine's operations the assistant may call, with the values it does not choose: a search brings
# as many excerpts as the prompt has room for, and reads its words as the person's own search would (MCP
# clients choose ``literal``; here its schema would take a small model's window from the conversation).
# MCP clients are offered the same operations (``interfaces/mcp_tools.py``).
OPERATIONS = {
    "search_files": {"limit": SEARCH_LIMIT, "literal": False},
    "similar_files": {},
    "summarise_file": {},
    "compare_files": {},
    "read_file": {},
    "list_directory": {},
}
CITABLE = "Returns numbered excerpts you can cite."
STEPS = {"search": "searching", "read": "reading", "browse": "listing"}  # what the user sees the tool do

JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _operation_schema(op: Operation, fixed: dict[str, Any]) -> dict[str, Any]:
    """An engine operation as a tool the model may call: its schema from the parameter object."""
    fields = [p for p in op.fields(tool=True) if p.name not in fixed]
    properties = {p.name: {"type": JSON_TYPES[p.type], "description": p.doc.help} for p in fields}
    cites = "" if op.result is Listing else CITABLE
    return _function(
        op.tool or op.name, f"{op.summary} {cites}".strip(), properties, [p.name for p in fields if p.required]
    )


# The whole-file tools are listed once a conversation asks for whole files or folders: every request
# carries the tools' schemas, and on a small window theirs would push the conversation out sooner.
# SCHEMAS: the tools listed from the first question; WITH_WHOLE_FILES: those and the whole-file ones.
WHOLE_FILE_TOOLS = ("summarise_file", "compare_files")
WITH_WHOLE_FILES = [_operation_schema(TOOLS[name], fixed) for name, fixed in OPERATIONS.items()]
SCHEMAS = [s for s in WITH_WHOLE_FILES if s["function"]["name"] not in WHOLE_FILE_TOOLS]
TOOL_NAMES = {s["function"]["name"] for s in WITH_WHOLE_FILES}
_WHOLE = re.compile(
    r"summar|compar|differ|changed|overview|outline|gist|what(?: is|'s) in |whole|entire|"
    r"zusammenfass|vergleich|résum|resum|riassun|confront",
    re.IGNORECASE,
)


def asks_for_whole_files(question: str) -> bool:
    """Whether a question asks for a summary, a comparison or a folder's contents (any of a few languages)."""
    return bool(_WHOLE.search(question))


@dataclass
class ToolOutcome:
    text: str  # what the model reads
    step: str  # what the user sees ("searching: ...")
    new_sources: list[Source] = field(default_factory=list)
    chunks: dict[int, int | None] = field(
        default_factory=dict
    )  # source number -> the chunk its text is (None: the file's start)


class Toolbox:
    """Runs the tools for one conversation: searches honour the chat scope, reads stay inside it."""

    def __init__(
        self, engine, scope: str | None, sources: Sources, model: ChatModel | None = None, on_progress: Any = None
    ):
        self.engine = engine
        self.scope = scope
        self.sources = sources
        self.reader = engine.reader(scope)
        self.model = model  # the conversation's model: a summary runs on it (None: the engine opens one)
        self.on_progress = on_progress  # a summary's "part 3 of 12", shown as it goes

    def run(self, name: str, arguments: str | dict[str, Any]) -> ToolOutcome:
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
            if not isinstance(args, dict):
                raise ValueError("arguments are not an object")
        except ValueError as exc:
            return ToolOutcome(f"error: the arguments are not valid JSON ({exc})", f"{name}: bad arguments")
        try:
            if name in OPERATIONS:
                return self.operation(TOOLS[name], args, OPERATIONS[name])
        except OutsideRoots as exc:
            return ToolOutcome(f"refused: {exc}", f"{name}: refused ({exc})")
        known = ", ".join(sorted(TOOL_NAMES))
        return ToolOutcome(f"error: there is no tool {name!r}; use one of {known}", f"unknown tool {name}")

    def operation(self, op: Operation, args: dict[str, Any], fixed: dict[str, Any]) -> ToolOutcome:
        """An engine operation offered as a tool: paths checked against this chat's scope, which is
        also the operation's scope when the model gives none, or names one outside it."""
        known = {p.name for p in op.fields(tool=True)}
        values = {key: value for key, value in args.items() if key in known}  # models add keys of their own
        values.update(fixed)
        note = ""
        for param in op.fields(tool=True):
            if param.name not in ("path", "other"):
                continue
            if not values.get(param.name) and not param.required:  # left out: the roots (list_directory)...
                values[param.name] = self.scope  # ... or, in a chat limited to a folder, that folder
            if values.get(param.name) or param.name in values and param.required:  # "" is refused, as any way out
                values[param.name] = self.reader.check(str(values[param.name]))
        if "scope" in known:
            try:
                values["scope"] = self.reader.check(str(values["scope"])) if values.get("scope") else self.scope
            except OutsideRoots:
                if not self.scope:
                    raise
                note, values["scope"] = f"(searched {self.scope} instead: this chat is limited to it)\n", self.scope
        what = " and ".join(str(values[k]) for k in ("path", "other") if values.get(k)) or values.get("query") or ""
        step = f"{STEPS.get(op.name, op.tool)}: {what}".rstrip(": ")
        if op.name == "search" and values.get("scope"):
            step += f" in {values['scope']}"
        extra = {"on_progress": self.on_progress, "model": self.model} if op.progress else {}
        try:
            result = op.run(self.engine, op.parse(values, tool=True), **extra)
        except OutsideRoots:
            raise
        except SenseTreeError as exc:
            return ToolOutcome(f"error: {exc}", f"{step} ({exc})")
        if isinstance(result, SimilarResponse):
            note += "".join(
                f"version of it ({v.shared:.0%} of the wording shared): {v.path}\n" for v in result.versions
            )
            note += "".join(f"identical copy: {copy}\n" for copy in result.copies)
        if isinstance(result, SearchResponse):
            return self._found(result, note, step)
        if isinstance(result, Summary):
            return self._summarised(result, step)
        if isinstance(result, FileContents):
            return self._read(result)
        if isinstance(result, Listing):
            return self._listed(result)
        return ToolOutcome(json.dumps(result.as_dict(), ensure_ascii=False), step)

    def _found(self, response: SearchResponse, note: str, step: str) -> ToolOutcome:
        """Ranked files as numbered excerpts the model can cite; each becomes a source of the answer."""
        found = []
        lines = []
        chunks: dict[int, int | None] = {}
        for result in response.results:
            source = self.sources.add_result(result, "search")
            found.append(source)
            chunks.setdefault(source.n, result.chunk_index)
            lines.append(f"[{source.n}] {source.label} — {result.path}\n{excerpt(self.engine, result, 600)}")
        notices = "".join(f"note: {n}\n" for n in response.notices)
        body = "\n\n".join(lines) if lines else "no matching file"
        return ToolOutcome(note + notices + body, f"{step} ({len(found)} found)", found, chunks)

    def _summarised(self, summary: Summary, step: str) -> ToolOutcome:
        """A summary as the model can cite it: the whole (its [k] marks turned into the pages they stand
        for, so they are not taken for source numbers), then one numbered block per file with its notes."""
        where = {
            note.n: f"({note.name} {note.where})" if summary.kind != "file" else f"({note.where})"
            for note in summary.notes
        }
        whole = re.sub(r"\[(\d+)\]", lambda m: where.get(int(m.group(1)), ""), summary.summary)
        head = {
            "file": "Summary of the whole file",
            "folder": "What the folder holds",
            "compare": "How the two files differ",
        }[summary.kind]
        blocks, found, chunks = [], [], dict[int, Any]()
        for path in dict.fromkeys(note.path for note in summary.notes):
            notes = [n for n in summary.notes if n.path == path]
            source = self.sources.add(path, None, _flat(notes[0].text)[:240], None, "read")
            found.append(source)
            chunks[source.n] = None
            lines = "\n".join(f"{n.text} (from {n.where})" for n in notes)
            blocks.append(f"[{source.n}] {source.name} — {path}\n{lines}")
        notices = "".join(f"note: {n}\n" for n in summary.notices)
        text = f"{head} (cite the numbered files below):\n{whole}\n{notices}\n" + "\n\n".join(blocks)
        return ToolOutcome(text, f"{step} ({summary.parts} part(s) read)", found, chunks)

    def _read(self, read: FileContents) -> ToolOutcome:
        """A file's text as one numbered source."""
        source = self.sources.add(read.path, None, _flat(read.text)[:240], None, "read")
        cut = f"\n[… first {len(read.text)} of {read.total_chars} characters]" if read.truncated else ""
        return ToolOutcome(
            f"[{source.n}] {source.name} — {read.path}\n{read.text}{cut}",
            f"reading: {read.path}",
            [source],
            {source.n: None},
        )

    def _listed(self, listing: Listing) -> ToolOutcome:
        """A folder's entries, one a line: [D] a folder, [F] a file, with its index status when it is not indexed."""
        lines = []
        for e in listing.entries:
            why = "; ".join(part for part in (e.status if e.status not in (None, "indexed") else None, e.error) if part)
            lines.append(("[D] " if e.is_dir else "[F] ") + e.name + (f" ({why})" if why else ""))
        if listing.more:
            lines.append(f"… and {listing.more} more")
        shown = listing.path or "the indexed roots"
        return ToolOutcome(f"{shown}\n" + "\n".join(lines or ["(empty)"]), f"listing: {shown}")

    def read_file(self, path: str) -> ToolOutcome:
        """The ``read_file`` tool, as a model would call it."""
        return self.run("read_file", {"path": path})

    def list_directory(self, path: str) -> ToolOutcome:
        """The ``list_directory`` tool (the ``browse`` operation), as a model would call it."""
        return self.run("list_directory", {"path": path})


def excerpt(engine, result: SearchResult, max_chars: int, flat: bool = True) -> str:
    """The text of the chunk that matched (the snippet is only 240 characters), cut at ``max_chars``;
    with its line breaks when not ``flat``."""
    text = chunk_text(engine, result.path, result.chunk_index) or result.snippet
    text = _flat(text) if flat else text.strip()
    return text if len(text) <= max_chars else text[:max_chars].rstrip() + "…"


def source_blocks(text: str, numbers: set[int]) -> tuple[str, list[tuple[int, str, str]]]:
    """A tool's output as what comes before the sources, then (number, "[n] name — path", text) per source."""
    found = [m for m in _BLOCK.finditer(text) if int(m.group(1)) in numbers]
    ends = [m.start() for m in found[1:]] + [len(text)]
    return (
        text[: found[0].start()] if found else text,
        [(int(m.group(1)), m.group(0).rstrip("\n"), text[m.end() : end].strip()) for m, end in zip(found, ends)],
    )


def _flat(text: str) -> str:
    return " ".join(text.split())
