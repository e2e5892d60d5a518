"""Reading files for people and models: the one confined reader (SPEC §6: never outside the roots).

The chat tools, the MCP server, the HTTP preview and the explorer all read, list and quote
through a ``Reader``, so there is one confinement check, one link policy and one set of limits.

A path from a model or a web request is untrusted: it may climb out with ``..``, follow a
symbolic link that leaves a root, name a sibling that shares a prefix (``Docs`` vs ``DocsEvil``),
another drive, or play on case where the file system ignores it. Every path is checked twice:
as written (normalised, case-insensitive where the file system ignores case) and as resolved on
disk, and comes back spelled as the disk spells it. The link
policy follows from that: a link is what it leads to when that lies inside a root, and is left
out (of listings and of search results) or refused (to read) when it leads outside.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import fs_rules, paths
from .ingest.chunker import rejoin
from .ingest.extract import ExtractionError, extract, is_archive
from .store.stored_text import without_head
from .ingest.walker import is_hidden
from .store.chunks import ChunkStore

# The limits, in one place: what each kind of reader is handed at most.
CHAT_READ_CHARS = 4000      # the assistant's read_file (SPEC §6)
TOOL_READ_CHARS = 20_000    # another assistant's read_file, over MCP
PREVIEW_CHARS = 200_000     # the web app's preview
CHAT_LIST_ENTRIES = 200     # the assistant's list_directory (SPEC §6)
LIST_ENTRIES = 2000         # the explorer's and MCP's folder listings

_DRIVE_OR_UNC = re.compile(r"^(?:[A-Za-z]:[\\/]|[\\/]{2})")


class OutsideRoots(ValueError):
    """A path no reader may touch: outside the roots as written, or once links are resolved."""


class Unreadable(ValueError):
    """The file or folder is inside the roots but cannot be read (corrupt, no permission); the message says why.

    A path that is not there, or not a file (or not a folder) as asked, raises FileNotFoundError.
    """


class RootGuard:
    def __init__(self, roots: list[str]):
        self.roots = [paths.normalize(r) for r in roots]
        self._real_roots = [_real(r) for r in self.roots]

    def check(self, path: str) -> str:
        """The normalised path when it lies inside a root both as written and once links are resolved."""
        if not path or "\0" in path:
            raise OutsideRoots("an empty or malformed path")
        if not (os.path.isabs(path) or _DRIVE_OR_UNC.match(path)):
            path = self._relative(path)
        norm = paths.normalize(path)
        if not any(paths.is_under(norm, root) for root in self.roots):
            raise OutsideRoots(f"{path} is outside the folders you may read ({', '.join(self.roots) or 'none'})")
        real = _real(norm)
        if not any(paths.is_under(real, root) for root in self._real_roots):
            raise OutsideRoots(f"{path} leads outside the folders you may read (through a link)")
        return fs_rules.true_case(norm)

    def allows(self, path: str) -> bool:
        try:
            self.check(path)
        except OutsideRoots:
            return False
        return True

    def _relative(self, path: str) -> str:
        """A relative path is taken in the first root that has it (models often drop the root)."""
        for root in self.roots:
            candidate = os.path.join(root, path)
            if os.path.lexists(candidate):
                return candidate
        return os.path.join(self.roots[0], path) if self.roots else path


def _real(path: str) -> str:
    """Links resolved; a Windows-style path on another OS cannot exist here, so it stays as written."""
    if paths.is_windows_path(path) and os.name != "nt":
        return path
    return paths.normalize(os.path.realpath(path))


def archive_of(path: str) -> str | None:
    """The archive on disk that holds the member ``path`` names (``<archive>/<member>``), or None."""
    for parent in Path(path).parents:
        if parent.exists():
            return str(parent) if parent.is_file() and is_archive(parent.name) else None
    return None


def on_disk(path: str) -> bool:
    """Whether a search result is still there: the file, or the archive that holds it."""
    return os.path.exists(path) or archive_of(path) is not None


@dataclass(frozen=True)
class FileText:
    path: str
    name: str
    doc_type: str
    context_only: bool  # the content could not be read: the text describes the file instead
    text: str           # at most the limit asked for
    total_chars: int

    @property
    def truncated(self) -> bool:
        return self.total_chars > len(self.text)


@dataclass(frozen=True)
class FolderEntry:
    name: str
    path: str
    is_dir: bool


@dataclass
class FolderListing:
    path: str
    entries: list[FolderEntry] = field(default_factory=list)
    more: int = 0  # entries past the limit


class Reader:
    """Reads text, lists folders and quotes stored chunks, inside ``roots`` only."""

    def __init__(self, roots: list[str], store: ChunkStore, max_file_bytes: int = 50 * 1024 * 1024):
        self.guard = RootGuard(roots)
        self.store = store
        self.max_file_bytes = max_file_bytes

    @property
    def roots(self) -> list[str]:
        return self.guard.roots

    def check(self, path: str) -> str:
        return self.guard.check(path)

    def allows(self, path: str) -> bool:
        return self.guard.allows(path)

    def read_text(self, path: str, limit: int) -> FileText:
        """The extracted text of a file or of a member of an archive (PDF, Office, e-mail... as text), at most
        ``limit`` characters. Pages only OCR can read come from the index, which OCR read once already."""
        path = self.check(path)
        if not os.path.isfile(path) and archive_of(path) is None:
            raise FileNotFoundError(f"{path} is not a file")
        try:
            extraction = extract(Path(fs_rules.os_path(path)), max_bytes=self.max_file_bytes, ocr="later")
        except ExtractionError as exc:
            raise Unreadable(f"{paths.name_of(path)} cannot be read: {exc}") from None
        text, context_only = extraction.text, extraction.context_only
        stored = self.store.chunks_of(path) if extraction.ocr_wanted else []
        if stored:
            text = rejoin([without_head(stored[0]["text"]), *(c["text"] for c in stored[1:])], 10**9)
            context_only = False
        return FileText(path, paths.name_of(path), extraction.doc_type, context_only, text[:limit], len(text))

    def list_folder(self, path: str, limit: int) -> FolderListing:
        """A folder's entries, folders first, hidden ones and links leading outside the roots left out."""
        path = self.check(path)
        if not os.path.isdir(path):
            raise FileNotFoundError(f"{path} is not a folder")
        try:
            with os.scandir(fs_rules.os_path(path)) as it:
                items = [e for e in it if not is_hidden(e.name) and (not e.is_symlink() or self.allows(e.path))]
        except OSError as exc:
            raise Unreadable(f"cannot list {path}: {exc.strerror or exc}") from None
        items.sort(key=lambda e: (not e.is_dir(), e.name.lower()))
        entries = [FolderEntry(e.name, paths.normalize(os.path.join(path, e.name)), e.is_dir()) for e in items[:limit]]
        return FolderListing(path, entries, max(0, len(items) - limit))

    def chunk(self, path: str, chunk_index: int) -> dict | None:
        """One stored chunk of a file inside the roots (what a search result matched): text, location."""
        return self.store.chunk(self.check(path), chunk_index)

    def chunk_text(self, path: str, chunk_index: int) -> str | None:
        found = self.chunk(path, chunk_index)
        return found["text"] if found else None
