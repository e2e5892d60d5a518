"""What the explorer shows: a folder's entries with their index status, a file's detail, its text.

Read-only views over the catalog, the chunk store and the disk, for the web app and the MCP
server. Every path is checked by a ``RootGuard`` first: nothing outside the roots is listed
or read, whatever the caller sends.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import paths
from .confine import RootGuard
from .ingest.chunker import normalize_text
from .ingest.extract import ExtractionError, extract
from .ingest.walker import block_reason, is_hidden
from .store.catalog import Catalog
from .store.chunks import ChunkStore

PREVIEW_CHARS = 200_000
LIST_LIMIT = 2000


class NoPreview(ValueError):
    """The file exists inside a root but its text cannot be extracted."""


@dataclass
class Entry:
    name: str
    path: str
    is_dir: bool
    kind: str                  # file, folder or block
    status: str | None         # indexed, pending, failed, block, block member, ignored, not indexed
    doc_type: str | None = None
    chunks: int = 0
    error: str | None = None
    members: int = 0


@dataclass
class Listing:
    path: str | None
    parent: str | None
    entries: list[Entry] = field(default_factory=list)
    more: int = 0  # entries left out past LIST_LIMIT

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "parent": self.parent, "entries": [asdict(e) for e in self.entries],
                "more": self.more}


class Browser:
    def __init__(self, catalog: Catalog, store: ChunkStore, roots: list[str]):
        self.catalog, self.store, self.roots = catalog, store, roots
        self.guard = RootGuard(roots)
        self._modes = catalog.folder_modes()  # manual choices: block, recursive, ignore

    def listing(self, folder: str | None) -> Listing:
        """The roots when ``folder`` is None, else the folder's entries, folders first."""
        if not folder:
            return Listing(None, None, [self._folder_entry(root, root) for root in self.roots])
        folder = self.guard.check(folder)
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"{folder} is not a folder")
        parent = None if folder in self.roots else paths.normalize(os.path.dirname(folder))
        with os.scandir(folder) as it:
            names = sorted((e for e in it if not is_hidden(e.name)),
                           key=lambda e: (not e.is_dir(follow_symlinks=False), e.name.lower()))
        entries = [self._entry(e) for e in names[:LIST_LIMIT]]
        return Listing(folder, parent, entries, max(0, len(names) - LIST_LIMIT))

    def _entry(self, item: os.DirEntry) -> Entry:
        path = paths.normalize(item.path)
        if item.is_dir(follow_symlinks=False):
            return self._folder_entry(item.name, path)
        return self._file_entry(item.name, path)

    def _folder_entry(self, name: str, path: str) -> Entry:
        row = self.catalog.file(path)
        if row is not None and row.kind == "block":
            return Entry(name, path, True, "block", _status(row.status, "block"), row.doc_type, row.chunks, row.error,
                         row.members)
        if self._modes.get(path) == "ignore":
            return Entry(name, path, True, "folder", "ignored")
        return Entry(name, path, True, "folder", None)

    def _file_entry(self, name: str, path: str) -> Entry:
        row = self.catalog.file(path)
        if row is not None:
            return Entry(name, path, False, "file", row.status, row.doc_type, row.chunks, row.error)
        if self._modes.get(path) == "ignore":
            return Entry(name, path, False, "file", "ignored")
        block = next((b for b in self.catalog.blocks() if paths.is_under(path, b)), None)
        return Entry(name, path, False, "file", "block member" if block else "not indexed")


    def detail(self, path: str) -> dict[str, Any]:
        """Everything the detail panel shows about one file or folder."""
        path = self.guard.check(path)
        if not os.path.lexists(path):
            raise FileNotFoundError(f"{path} does not exist")
        is_dir = os.path.isdir(path)
        row = self.catalog.file(path)
        sense = self.catalog.sense(path)
        stat = os.stat(path)
        chunks = [{"chunk_index": c["chunk_index"], "text": c["text"]} for c in self.store.chunks_of(path)] if row else []
        reason = None
        if is_dir:
            try:
                reason = block_reason(Path(path), sorted(os.listdir(path)))
            except OSError:
                reason = None
        return {
            "path": path, "name": paths.name_of(path), "is_dir": is_dir, "is_root": path in self.guard.roots,
            "kind": row.kind if row else ("folder" if is_dir else "file"),
            "status": row.status if row else None, "doc_type": row.doc_type if row else None,
            "size": stat.st_size, "mtime": stat.st_mtime, "chunks_count": row.chunks if row else 0,
            "attempts": row.attempts if row else 0, "error": row.error if row else None,
            "sense": {"text": sense.text, "source": sense.source, "pinned": sense.pinned} if sense else None,
            "chunks": chunks, "folder_mode": self._modes.get(path), "block_reason": reason,
        }

    def preview(self, path: str, chunk_index: int = 0) -> dict[str, Any]:
        """The file's extracted text, and where the chunk that matched sits in it."""
        path = self.guard.check(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path} is not a file")
        try:
            text = normalize_text(extract(Path(path)).text)
        except ExtractionError as exc:
            raise NoPreview(f"{paths.name_of(path)} cannot be previewed: {exc}") from None
        start = end = -1
        chunk = next((c["text"] for c in self.store.chunks_of(path) if c["chunk_index"] == chunk_index), None)
        if chunk:
            body = chunk.split("\n\n", 1)[1] if chunk_index == 0 and chunk.startswith("[") and "\n\n" in chunk else chunk
            start, end = _locate(text, body)
        return {"path": path, "name": paths.name_of(path), "text": text[:PREVIEW_CHARS], "start": start,
                "end": min(end, PREVIEW_CHARS) if start < PREVIEW_CHARS else -1, "chunk_index": chunk_index,
                "truncated": len(text) > PREVIEW_CHARS}


def _locate(text: str, chunk: str, words: int = 30) -> tuple[int, int]:
    """Where a chunk sits in the text, or (-1, -1). The chunker joins lines and the overlap with
    a space, so the chunk's words are matched with any whitespace between them."""
    tokens = chunk.split()
    if not tokens:
        return -1, -1
    head = re.search(r"\s+".join(map(re.escape, tokens[:words])), text)
    if head is None:
        return -1, -1
    tail = re.compile(r"\s+".join(map(re.escape, tokens[-words:]))).search(text, head.start())
    return head.start(), tail.end() if tail else min(len(text), head.start() + len(chunk))


def _status(status: str, kind: str) -> str:
    return kind if status == "indexed" else status
