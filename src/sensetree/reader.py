"""Reading files for people and models: the one confined reader (design §5: never outside the roots).

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
import stat
from dataclasses import dataclass, field
from pathlib import Path

from . import fs_rules, paths
from .errors import BadInput, NotFound, WrongKind
from .ingest.chunker import rejoin
from .ingest.confine import NotServed, OutsideRoots, RootGuard
from .ingest.extract import Extraction, ExtractionError, archive_members, context_descriptor, extract_bytes, is_archive
from .ingest.extract.base import human_size
from .ingest.extract.registry import formats_markdown
from .ingest.extract.sniff import type_from_name
from .ingest.walker import is_hidden, rules_for
from .safe_text import has_surrogates, without_surrogates
from .store.chunks import ChunkStore
from .store.stored_text import without_head

__all__ = [
    "FileText",
    "FolderEntry",
    "FolderListing",
    "NotFound",
    "NotServed",
    "OutsideRoots",
    "Reader",
    "RootGuard",
    "Unreadable",
    "WrongKind",
    "absent",
    "archive_of",
    "on_disk",
    "same_file",
]

# The limits, in one place: what each kind of reader is handed at most.
PREVIEW_CHARS = 200_000  # the web app's preview (read_file's limit, operations.READ_CHARS, is declared with it)
LIST_ENTRIES = 2000  # the explorer's folder listings: list_directory (MCP, the assistant), the web app


class Unreadable(BadInput):
    """The file or folder is inside the roots but cannot be read (corrupt, no permission); the message says why.

    A path that is not there raises ``NotFound``, one that is not a file (or not a folder) as asked
    ``WrongKind`` (both are FileNotFoundError): see ``absent``.
    """

    status = 422


_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


def absent(path: str, wanted: str = "file", why: str = "") -> NotFound:
    """The error for ``path`` when it is not the ``wanted`` kind ("file" or "folder"): each case its own
    message (not there, a link to nothing, a folder where a file was asked, a FIFO...), raised by the
    caller. ``why`` is added to the message ("compare takes two files")."""
    name, tail = path, f" ({why})" if why else ""
    try:
        found = os.stat(fs_rules.os_path(path))
    except FileNotFoundError:
        if os.path.lexists(fs_rules.os_path(path)):
            return NotFound(f"{name} is a link to something that no longer exists{tail}")
        return NotFound(f"{name} does not exist (deleted or moved?){tail}")
    except OSError as exc:  # a link that loops, a name too long, a parent that is a file
        return NotFound(f"{name} cannot be reached: {exc.strerror or exc}{tail}")
    if stat.S_ISDIR(found.st_mode):
        return (
            WrongKind(f"{name} is a folder, not a file{tail}")
            if wanted == "file"
            else NotFound(f"{name} is not a folder{tail}")
        )
    kind = next((said for test, said in _KINDS if test(found.st_mode)), None)
    if kind:
        return WrongKind(f"{name} is {kind}, not a file: only regular files are read{tail}")
    if wanted == "folder":
        return WrongKind(f"{name} is a file, not a folder{tail}")
    return NotFound(f"{name} is not a file{tail}")


def archive_of(path: str) -> str | None:
    """The archive on disk that holds the member ``path`` names (``<archive>/<member>``), or None.

    A member's path may be longer than the OS takes (``ENAMETOOLONG``): such a parent is not on disk."""
    for parent in Path(path).parents:
        if os.path.exists(parent):  # False, not an error, for a name too long
            return str(parent) if os.path.isfile(parent) and is_archive(parent.name) else None
    return None


def same_file(first: str, second: str) -> bool:
    """Whether two paths name one file: spelled alike, or one a link to the other (or both to a third),
    or hard links to one file. Archive members are the same only when spelled alike."""
    if paths.normalize(first) == paths.normalize(second):
        return True
    try:
        return os.path.samefile(fs_rules.os_path(first), fs_rules.os_path(second))
    except (OSError, ValueError):  # a member of an archive, gone meanwhile
        return False


def on_disk(path: str) -> bool:
    """Whether a search result is still there: the file, or the archive that holds it."""
    return os.path.exists(path) or archive_of(path) is not None


@dataclass(frozen=True)
class FileText:
    path: str
    name: str
    doc_type: str
    context_only: bool  # the content could not be read: the text describes the file instead
    text: str  # at most the limit asked for
    total_chars: int
    spans: tuple = ()  # where in the file each stretch of the text comes from (pages...), when the extractor says

    @property
    def truncated(self) -> bool:
        return self.total_chars > len(self.text)


@dataclass(frozen=True)
class FolderEntry:
    name: str
    path: str
    is_dir: bool
    problem: str | None = None  # why it cannot be read or indexed (a link that loops, an undecodable name)


@dataclass
class FolderListing:
    path: str
    entries: list[FolderEntry] = field(default_factory=list)
    more: int = 0  # entries past the limit


class Reader:
    """Reads text, lists folders and quotes stored chunks, inside ``roots`` only, and only what indexing reads."""

    def __init__(
        self,
        roots: list[str],
        store: ChunkStore,
        max_file_bytes: int = 50 * 1024 * 1024,
        ignored: list[str] | tuple[str, ...] = (),
    ):
        self.guard = RootGuard(roots, ignored)
        self.store = store
        self.max_file_bytes = max_file_bytes

    @property
    def roots(self) -> list[str]:
        return self.guard.roots

    def check(self, path: str, ignored: bool = True) -> str:
        """The normalised path; ``OutsideRoots`` outside the roots, ``NotServed`` where indexing never reads
        (with ``ignored`` False, what the user ignored passes: a detail without text)."""
        return self.guard.check_served(path, ignored)

    def allows(self, path: str) -> bool:
        try:
            self.check(path)
        except OutsideRoots:
            return False
        return True

    def read_text(self, path: str, limit: int) -> FileText:
        """The extracted text of a file or of a member of an archive (PDF, Office, e-mail... as text), at most
        ``limit`` characters. Pages only OCR can read come from the index, which OCR read once already."""
        path, archive = self._located(path)
        try:
            extraction = self._extract(path, archive)
        except ExtractionError as exc:
            raise Unreadable(f"{paths.name_of(path)} cannot be read: {exc}") from None
        text, context_only = extraction.text, extraction.context_only
        spans = extraction.spans
        stored = self.store.queries.chunks_of(path) if extraction.ocr_wanted else []
        if stored:
            text = rejoin([without_head(stored[0]["text"]), *(c["text"] for c in stored[1:])], 10**9)
            context_only, spans = False, ()
        return FileText(path, paths.name_of(path), extraction.doc_type, context_only, text[:limit], len(text), spans)

    def read_bytes(self, path: str) -> bytes:
        """A file's bytes (an archive member's, read out of its archive), for showing it as it is: a PDF's
        pages. ``Unreadable`` when it cannot be read or is larger than indexing reads."""
        path, archive = self._located(path)
        try:
            contents = self.guard.read(archive or path, self.max_file_bytes)
        except (NotFound, OutsideRoots):
            raise
        except FileNotFoundError:  # gone (or made a FIFO) since it was checked
            raise absent(path) from None
        except OSError as exc:
            raise Unreadable(f"{paths.name_of(path)} cannot be read: {exc.strerror or exc}") from None
        if contents.data is None:
            raise Unreadable(f"{paths.name_of(path)} is larger than {human_size(self.max_file_bytes)}")
        return contents.data if archive is None else self._member(archive, path, contents.data)

    def _located(self, path: str) -> tuple[str, str | None]:
        """The checked path of a file, and the archive that holds it when it is a member of one."""
        path = self.check(path)
        archive = None if os.path.isfile(path) else archive_of(path)
        if archive is None and not os.path.isfile(path):
            raise absent(path)
        return path, archive

    def _extract(self, path: str, archive: str | None) -> Extraction:
        """The file's text, from bytes read through the guard (the archive's, for a member)."""
        try:
            contents = self.guard.read(archive or path, self.max_file_bytes)
        except (NotFound, OutsideRoots):
            raise
        except FileNotFoundError:  # gone (or made a FIFO) since it was checked
            raise absent(path) from None
        except OSError as exc:
            raise ExtractionError(f"cannot read: {exc.strerror or exc}") from None
        if contents.data is None:
            if archive is not None:
                raise ExtractionError(f"its archive is larger than {human_size(self.max_file_bytes)}")
            kind = f"file too large to index ({human_size(contents.stat.st_size)})"
            doc_type = type_from_name(paths.name_of(path)) or "context"
            return Extraction(context_descriptor(Path(path), kind), doc_type, True, notes=(kind,))
        data = contents.data if archive is None else self._member(archive, path, contents.data)
        return extract_bytes(data, path, ocr="later", max_bytes=self.max_file_bytes)

    def _member(self, archive: str, path: str, data: bytes) -> bytes:
        for member in archive_members(archive, max_member_bytes=self.max_file_bytes, data=data):
            if member.path == path:
                return member.read()
        raise NotFound(f"{path} is not in {paths.name_of(archive)}")

    def list_folder(self, path: str, limit: int) -> FolderListing:
        """A folder's entries, folders first; what indexing leaves out (hidden, ignored) and links leading
        outside the roots left out. An entry that cannot be read or named is listed with its problem."""
        path = self.check(path)
        if not os.path.isdir(path):
            raise absent(path, "folder")
        rules = rules_for(path, max((r for r in self.roots if paths.is_under(path, r)), key=len))[1]
        try:
            with os.scandir(fs_rules.os_path(path)) as it:
                items = [
                    _folder_entry(e)
                    for e in it
                    if not is_hidden(e.name) and (not e.is_symlink() or self.guard.allows(e.path))
                ]
        except OSError as exc:
            raise Unreadable(f"cannot list {path}: {exc.strerror or exc}") from None
        items = [e for e in items if e.problem or not rules.reason(e.name, e.is_dir)]
        items.sort(key=lambda e: (not e.is_dir, e.name.lower()))
        return FolderListing(path, items[:limit], max(0, len(items) - limit))

    def chunk(self, path: str, chunk_index: int) -> dict | None:
        """One stored chunk of a file inside the roots (what a search result matched): text, location."""
        return self.store.queries.chunk(self.check(path), chunk_index)

    def chunk_text(self, path: str, chunk_index: int) -> str | None:
        found = self.chunk(path, chunk_index)
        return found["text"] if found else None


def _folder_entry(entry: os.DirEntry) -> FolderEntry:
    """One entry as a listing shows it; a link that loops or a name that is not valid UTF-8 with its problem,
    the name shown with U+FFFD where its bytes cannot be decoded."""
    name, path = without_surrogates(entry.name), without_surrogates(paths.normalize(entry.path))
    try:
        is_dir = entry.is_dir()
    except OSError as exc:
        return FolderEntry(name, path, False, f"cannot be read: {exc.strerror or exc}")
    if has_surrogates(entry.name):
        return FolderEntry(
            name, path, is_dir, "its name is not valid UTF-8, so it is not indexed; rename it to index it"
        )
    return FolderEntry(name, path, is_dir)


def formats_table() -> str:
    """The formats files are read in, as a Markdown table (docs/reference.md; ``ingest/extract/registry.py``)."""
    return formats_markdown()
