"""What the explorer shows: a folder's entries with their index status, a file's detail, its text.

Read-only, for the web app and the MCP server (``handlers.files.explorer``), over the catalog, the chunk
store and the disk. Files are listed and read through the engine's confined ``Reader``: nothing
outside the roots is listed or read, whatever the caller sends.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium

from . import pages, paths
from .answers import Entry, Listing
from .ingest.walker import block_reason
from .operations import READ_CHARS
from .reader import LIST_ENTRIES, PREVIEW_CHARS, FolderEntry, Reader, Unreadable, absent
from .search.snippets import place
from .store.catalog import Catalog
from .store.chunks import ChunkStore
from .store.stored_text import body


class Explorer:
    def __init__(self, reader: Reader, catalog: Catalog, store: ChunkStore):
        self.reader = reader
        self.catalog = catalog
        self.store = store
        self._modes = self.catalog.roots.folder_modes()  # manual choices: block, recursive, ignore

    def listing(self, folder: str | None) -> Listing:
        """The roots when ``folder`` is None, else the folder's entries, folders first."""
        if not folder:
            return Listing(None, None, [self._entry(FolderEntry(root, root, True)) for root in self.reader.roots])
        found = self.reader.list_folder(folder, LIST_ENTRIES)
        parent = None if found.path in self.reader.roots else paths.normalize(os.path.dirname(found.path))
        return Listing(found.path, parent, [self._entry(e) for e in found.entries], found.more)

    def _entry(self, item: FolderEntry) -> Entry:
        if item.problem:
            return Entry(
                item.name,
                item.path,
                item.is_dir,
                "folder" if item.is_dir else "file",
                "not indexed",
                error=item.problem,
            )
        row = self.catalog.files.get(item.path)
        ignored = self._modes.get(item.path) == "ignore"
        if item.is_dir:
            if row is not None and row.kind == "block":
                status = "block" if row.status == "indexed" else row.status
                return Entry(
                    item.name, item.path, True, "block", status, row.doc_type, row.chunks, row.error, row.members
                )
            return Entry(item.name, item.path, True, "folder", "ignored" if ignored else None)
        if row is not None:
            return Entry(item.name, item.path, False, "file", row.status, row.doc_type, row.chunks, row.error)
        if ignored:
            return Entry(item.name, item.path, False, "file", "ignored")
        block = next((b for b in self.catalog.files.blocks() if paths.is_under(item.path, b)), None)
        return Entry(item.name, item.path, False, "file", "block member" if block else "not indexed")

    def detail(self, path: str) -> dict[str, Any]:
        """Everything the detail panel shows about one file or folder (an ignored one too: it has no
        chunks to show, and the panel takes it back)."""
        path = self.reader.check(path, ignored=False)
        if not os.path.lexists(path):
            raise absent(path)
        try:
            stat = os.stat(path)
        except OSError as exc:  # a link that loops, a name too long
            raise Unreadable(f"{paths.name_of(path)} cannot be read: {exc.strerror or exc}") from None
        is_dir = os.path.isdir(path)
        row = self.catalog.files.get(path)
        sense = self.catalog.senses.of(path)
        chunks = (
            [{"chunk_index": c["chunk_index"], "text": c["text"]} for c in self.store.queries.chunks_of(path)]
            if row
            else []
        )
        reason = None
        if is_dir:
            try:
                reason = block_reason(Path(path), sorted(os.listdir(path)))
            except OSError:
                reason = None
        return {
            "path": path,
            "name": paths.name_of(path),
            "is_dir": is_dir,
            "is_root": path in self.reader.roots,
            "kind": row.kind if row else ("folder" if is_dir else "file"),
            "status": row.status if row else None,
            "doc_type": row.doc_type if row else None,
            "size": stat.st_size,
            "mtime": stat.st_mtime,
            "chunks_count": row.chunks if row else 0,
            "attempts": row.attempts if row else 0,
            "error": row.error if row else None,
            "sense": {"text": sense.text, "source": sense.source, "pinned": sense.pinned} if sense else None,
            "chunks": chunks,
            "folder_mode": self._modes.get(path),
            "block_reason": reason,
        }

    def preview(self, path: str, chunk_index: int = 0, mark: tuple[int, int] | None = None) -> dict[str, Any]:
        """The file's extracted text, and where the chunk that matched sits in it; with ``mark``
        (a cited sentence's span, as ``quote_spans`` gives it), that range too, kept inside the text."""
        shown = self.reader.read_text(path, PREVIEW_CHARS)
        text = shown.text
        start = end = -1
        chunk = self.reader.chunk(shown.path, chunk_index)
        if chunk:
            start, end = _locate(text, body(chunk["text"], chunk_index))
        location, label = place(chunk.get("location") if chunk else None)
        marked = page_mark = None
        if mark is not None:
            low, high = max(0, min(mark[0], len(text))), max(0, min(mark[1], len(text)))
            marked = {"start": low, "end": high} if high > low else None
            if marked and shown.doc_type == "pdf":
                page_mark = self._page_mark(shown.path, text[low:high], (location or {}).get("page", 1))
        return {
            "path": shown.path,
            "name": shown.name,
            "text": text,
            "start": start,
            "end": end,
            "chunk_index": chunk_index,
            "location": location,
            "location_label": label,
            "truncated": shown.truncated,
            "mark": marked,
            "page_mark": page_mark,
        }

    def _page_mark(self, path: str, sentence: str, near_page: int) -> dict | None:
        """The marked sentence on the PDF's page, where its text layer has it (a scanned page has none)."""
        try:
            found = pages.find_sentence(self.reader.read_bytes(path), sentence, find_quote, near_page)
        except (OSError, Unreadable, pdfium.PdfiumError):
            return None
        return found.as_dict() if found else None

    def page_image(self, path: str, page: int) -> bytes:
        """Page ``page`` of a PDF inside the roots, rendered as a PNG (the preview shows a cited sentence on it)."""
        data = self.reader.read_bytes(path)
        try:
            return pages.render_page(data, page)
        except pdfium.PdfiumError:
            raise Unreadable(f"{paths.name_of(path)} is not a PDF that can be shown") from None

    def quote_spans(self, path: str, quotes: list[tuple[int | None, str]]) -> list[QuoteSpan]:
        """Where each quote (a sentence of a chunk, as a prompt showed it: whitespace joined, perhaps cut)
        sits in the file's text, the text the preview shows; ``(chunk_index, quote)`` each, a chunk_index of
        None for a quote from the file's start. A quote not found gives its chunk's span, ``exact`` False;
        a chunk not found either gives None. The file is read once for all its quotes."""
        try:
            shown = self.reader.read_text(path, PREVIEW_CHARS)
        except (FileNotFoundError, Unreadable):
            return [QuoteSpan(None, None, False) for _ in quotes]
        text, path = shown.text, shown.path
        located: dict[int | None, tuple[int, int]] = {}
        out = []
        for chunk_index, quote in quotes:
            if chunk_index is None:
                located[None] = (0, min(len(text), READ_CHARS))
            elif chunk_index not in located:
                chunk = self.reader.chunk(path, chunk_index)
                located[chunk_index] = _locate(text, body(chunk["text"], chunk_index)) if chunk else (-1, -1)
            low, high = located[chunk_index]
            found = find_quote(text, quote, low, high) if low >= 0 else None
            found = found or find_quote(text, quote)
            if found:
                out.append(QuoteSpan(*found, True))
            else:
                out.append(QuoteSpan(low, high, False) if low >= 0 else QuoteSpan(None, None, False))
        return out


@dataclass(frozen=True)
class QuoteSpan:
    """A quote's place in a file's text: [start, end) characters; ``exact`` False when only the
    chunk it came from was found (start and end None: not even that)."""

    start: int | None
    end: int | None
    exact: bool


QUOTE_ANCHOR_WORDS = 6  # a quote not found whole is found by its first and last words
QUOTE_RUN_SHARE = 2 / 3  # ...or by a run of at least this share of its words


def find_quote(text: str, quote: str, low: int = 0, high: int | None = None) -> tuple[int, int] | None:
    """Where ``quote`` sits in ``text[low:high]``, or None. The quote's words are matched with any
    whitespace between them (a prompt joins lines with a space); an ellipsis marks a cut and is
    no word; a word cut at the quote's end or start is matched as part of the text's word. A quote
    not found whole is found by its first and last few words, in order, not far apart, else by its
    longest run of words found whole (at least ``QUOTE_ANCHOR_WORDS`` and ``QUOTE_RUN_SHARE`` of them)."""
    tokens = quote.replace("…", " ").split()
    high = len(text) if high is None else min(high, len(text))
    if not tokens or low >= high:
        return None

    def search(words: list[str], start: int) -> re.Match | None:
        return re.compile(r"\s+".join(map(re.escape, words))).search(text, start, high)

    whole = search(tokens, low)
    if whole:
        return whole.start(), whole.end()
    if len(tokens) <= QUOTE_ANCHOR_WORDS:
        return None
    head = search(tokens[:QUOTE_ANCHOR_WORDS], low)
    while head:
        tail = search(tokens[-QUOTE_ANCHOR_WORDS:], head.end())
        if tail and tail.end() - head.start() <= 2 * len(quote) + 40:
            return head.start(), tail.end()
        head = search(tokens[:QUOTE_ANCHOR_WORDS], head.start() + 1)
    # an excerpt cut to its best sentences can join a line without a full stop (a heading) to a later
    # sentence: the quote's longest run of words found whole, from its end or its start, is where it sits
    for cut in range(1, len(tokens) - QUOTE_ANCHOR_WORDS + 1):
        if len(tokens) - cut < QUOTE_RUN_SHARE * len(tokens):
            break  # too little of the quote: its chunk's span says more
        for part in (tokens[cut:], tokens[: len(tokens) - cut]):
            found = search(part, low)
            if found:
                return found.start(), found.end()
    return None


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
