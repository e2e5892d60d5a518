"""Archives (.zip, .tar, .tar.gz/.tgz, .tar.bz2, .tar.xz, single-file .gz/.bz2/.xz) and their members.

Each member is a file of its own for the index, named by a *virtual path*: the
archive's path, a slash, and the member's path inside it::

    /home/ada/projects-2019.zip/report/final.docx
    /home/ada/projects-2019.zip/old/photos.zip/scan.png     (an archive inside: at most two levels)
    /home/ada/server.log.gz/server.log                      (a single compressed file)

`extract()` accepts such a path like any other (for previews); the indexer walks an
archive with `archive_members()` and extracts each member with `extract_bytes()`.

Guards, each refusing one member with a one-line reason while the rest stays
usable: a member larger than the file size limit, one whose compressed size is more
than its declared size can take (a lying zip header), one that expands more than
MAX_ZIP_RATIO times, an encrypted one. The walk stops at MAX_MEMBERS members and
MAX_EXPANDED bytes read in all (which also bounds skipping over a refused tar
member). Links, devices, names that climb out of the archive (``../x``, ``/etc/x``,
``C:x``), names that are not UTF-8 and names holding a NUL are skipped, each with a note
(folders are skipped silently: their files are listed on their own).

Every member has a virtual path of its own, also when the archive holds two members of the
same name, or a member whose name is the path of a nested archive's member (``inner.zip``
beside a member named ``inner.zip/x.txt``): the later one is named ``x (2).txt``, with a
note. The walk is deterministic, so the same name always finds the same member again.
"""

from __future__ import annotations

import bz2
import functools
import gzip
import io
import itertools
import lzma
import stat
import tarfile
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Protocol

from ..walker import BLOCK_NAMES, MAX_IGNORE_BYTES, is_hidden
from . import limits
from .base import Block, ExtractionError, Job, human_size, reason
from .zipguard import most_compressed_bytes

MAX_DEPTH = 2
"""The archive on disk is level 1, an archive inside it level 2; archives deeper than that are not opened."""

MAX_MEMBERS = 10_000
MAX_NOTES = 20
"""Notes kept per walk (skipped or renamed members); the rest are counted in one more line."""
MAX_EXPANDED = 1024**3
"""Bytes decompressed in all while walking one archive, nested ones included."""

_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tbz", ".tar.xz", ".txz")
_SINGLE_SUFFIXES = (".gz", ".bz2", ".xz")


class _Stream(Protocol):
    """What the walk reads from: an archive's file, or the decompressed stream over it."""

    def read(self, size: int = -1, /) -> bytes: ...


_DECOMPRESSORS: tuple[tuple[bytes, Callable[[BinaryIO], _Stream]], ...] = (
    (b"\x1f\x8b", lambda file: gzip.GzipFile(fileobj=file)),
    (b"BZh", bz2.BZ2File),
    (b"\xfd7zXZ\x00", lzma.LZMAFile),
)
EXTENSIONS = ("zip", "tar", "tgz", "tbz2", "tbz", "txz", "gz", "bz2", "xz")


@dataclass(frozen=True)
class Member:
    """One file inside an archive.

    `read()` gives its bytes (ExtractionError, one line, if it is refused or broken). It is
    cheapest while the walk is on this member; once the walk is over, it walks the archive
    again up to the member (a tar archive is a stream).
    """

    name: str  # its path inside the archive, with '/' between folders: "report/final.docx"
    path: str  # its virtual path: "<archive path>/<name>"
    size: int  # bytes, as the archive declares them
    mtime: float  # 0.0 where the archive does not record one (use the archive's own)
    depth: int  # 1 in the archive on disk, 2 in an archive inside that
    refused: str | None = None  # why it is not read, in one line
    _reader: Callable[[], bytes] | None = field(default=None, repr=False, compare=False)

    def read(self) -> bytes:
        if self.refused is not None or self._reader is None:
            raise ExtractionError(f"refusing {self.name}: {self.refused}")
        return self._reader()


class _Late(Exception):
    """The walk that listed a member is over: its archive must be opened again."""


def is_archive(name: str) -> bool:
    lowered = name.lower()
    return lowered.endswith(_TAR_SUFFIXES) or lowered.rpartition(".")[2] in EXTENSIONS


def archive_members(
    path: Path | str,
    *,
    max_member_bytes: int = limits.MAX_FILE_BYTES,
    notes: list[str] | None = None,
    data: bytes | None = None,
    file: BinaryIO | None = None,
    nested: bool = True,
) -> Iterator[Member]:
    """The members of the archive at ``path`` (or in ``data``, its bytes read elsewhere, or in ``file``,
    opened elsewhere and closed here), nested archives' members included, in archive order.

    Raises ExtractionError (one line) when the archive itself cannot be opened; ``notes``,
    when given, collects one line per member skipped and a line when the walk stops early.
    """
    path = Path(path)
    walk = _Walk(max_member_bytes, notes if notes is not None else [], read_nested=nested)
    try:
        with io.BytesIO(data) if data is not None else file or path.open("rb") as opened:
            for member in walk.members(opened, path.name, str(path), depth=1):
                yield _late_readable(member, max_member_bytes)
    except OSError as exc:
        raise ExtractionError(f"cannot read: {path}: {exc.strerror or exc}") from None
    finally:
        walk.over = True


def _late_readable(member: Member, max_member_bytes: int) -> Member:
    """``member``, whose read() walks the archive again when its own walk is over."""
    if member._reader is None:
        return member
    reader = member._reader

    def read() -> bytes:
        try:
            return reader()
        except _Late:
            return read_virtual(Path(member.path), max_member_bytes)

    return replace(member, _reader=read)


def read_virtual(path: Path, max_bytes: int) -> bytes:
    """The bytes of the archive member that the virtual ``path`` names."""
    archive = next((parent for parent in path.parents if parent.is_file()), None)
    if archive is None or not is_archive(archive.name):
        raise ExtractionError(f"cannot read: {path}: not a file")
    walk = _Walk(max_bytes, [])
    with archive.open("rb") as file:
        for member in walk.members(file, archive.name, str(archive), depth=1):
            if member.path == str(path):
                return member.read()
    raise ExtractionError(f"cannot read: {path}: no such member in {archive.name}")


def read_archive(data: bytes, job: Job) -> Iterator[Block]:
    """An archive as a document: the list of its members, so that it is found by what it holds."""
    walk = _Walk(job.max_bytes, job.notes, read_nested=False)
    lines = []
    for member in walk.members(io.BytesIO(data), job.name, job.name, depth=1):
        if _left_out(member.name):
            continue
        note = f", not read: {member.refused}" if member.refused else ""
        lines.append(f"{member.name} ({human_size(member.size)}{note})")
    yield f"Archive {job.name}: {len(lines)} file{'' if len(lines) == 1 else 's'}" + "".join(
        f"\n{line}" for line in lines
    )


IGNORE_NAMES = (".gitignore", ".sensetreeignore")  # walker.IGNORE_FILES


def ignore_files(
    path: Path | str,
    *,
    data: bytes | None = None,
    file: BinaryIO | None = None,
    max_member_bytes: int = limits.MAX_FILE_BYTES,
) -> dict[str, dict[str, str | None]]:
    """The ignore files an archive holds, those of the archives inside it included (as a folder on disk
    holds those of its subfolders), by the folder that holds them, its path inside this archive ("" for
    its top, ``inner.zip/docs`` inside a nested one): {folder: {file name: text}}. The text is None for
    one larger than ``walker.MAX_IGNORE_BYTES``, which is not read (``walker.inner_ignores`` holds its
    folder back). An archive that cannot be read holds none; ``max_member_bytes`` bounds a nested archive
    as indexing does."""
    found: dict[str, dict[str, str | None]] = {}
    top = str(Path(path))
    try:
        for member in archive_members(path, max_member_bytes=max_member_bytes, data=data, file=file):
            folder, _, name = member.path[len(top) + 1 :].rpartition("/")
            if name not in IGNORE_NAMES:
                continue
            try:
                text = None if member.size > MAX_IGNORE_BYTES else member.read()
            except ExtractionError:
                text = None if member.refused else b""  # refused: too large; unreadable: no rules, as on disk
            if text is not None and len(text) > MAX_IGNORE_BYTES:  # a header that lied about its size
                text = None
            found.setdefault(folder, {})[name] = None if text is None else text.decode("utf-8", "replace")
    except ExtractionError:
        pass
    return found


def _left_out(name: str) -> bool:
    """A member the walk leaves out whatever the ignore files say (they are applied where the root is
    known, ``walker.member_reason``): a hidden name on its way, or a block folder's file."""
    parts = name.split("/")
    return any(is_hidden(p) for p in parts) or any(p.lower() in BLOCK_NAMES for p in parts[:-1])


@dataclass
class _Walk:
    """One walk over an archive and the archives inside it, with its running totals."""

    max_member_bytes: int
    notes: list[str]
    read_nested: bool = True
    count: int = 0
    budget: int = field(default_factory=lambda: MAX_EXPANDED)  # bytes the walk may still decompress
    over: bool = False  # set once the walk has ended and its files are closed
    seen: set[str] = field(default_factory=set)  # virtual paths given out so far
    untold: int = 0  # notes past MAX_NOTES

    def note(self, line: str) -> None:
        """One line for the queue about a member skipped or renamed; past MAX_NOTES, only a count."""
        if sum(1 for n in self.notes if not n.startswith("(")) < MAX_NOTES:
            self.notes.append(line)
            return
        self.untold += 1
        summary = f"({self.untold} more member{'s' if self.untold > 1 else ''} skipped or renamed)"
        if self.notes and self.notes[-1].startswith("("):
            self.notes[-1] = summary
        else:
            self.notes.append(summary)

    def distinct(self, member: Member) -> Member:
        """``member`` under a virtual path no earlier member of the walk has: ``name (2).ext`` when taken."""
        if member.path not in self.seen:
            self.seen.add(member.path)
            return member
        folder, _, leaf = member.name.rpartition("/")
        stem, dot, suffix = leaf.partition(".") if not leaf.startswith(".") else (leaf, "", "")
        prefix = member.path[: len(member.path) - len(member.name)]
        for copy in itertools.count(2):
            name = (f"{folder}/" if folder else "") + f"{stem} ({copy}){dot}{suffix}"
            if prefix + name not in self.seen:
                break
        self.seen.add(prefix + name)
        self.note(f"{member.name}: a second member of that name, indexed as {name}")
        return replace(member, name=name, path=prefix + name)

    def members(self, file: BinaryIO, name: str, prefix: str, depth: int) -> Iterator[Member]:
        lowered = name.lower()
        head = file.read(8)
        file.seek(0)
        try:
            if head.startswith(b"PK"):
                entries = self._zip(file, prefix, depth)
            elif lowered.endswith(_TAR_SUFFIXES):
                entries = self._tar(file, prefix, depth)
            elif lowered.endswith(_SINGLE_SUFFIXES):
                entries = self._single(file, name, prefix, depth)
            else:
                raise ExtractionError(f"corrupt archive {name}: not a zip, tar or compressed file")
            for member in entries:
                if self.count >= MAX_MEMBERS:
                    self.notes.append(f"{name}: more than {MAX_MEMBERS:,} members, the rest were not read")
                    return
                self.count += 1
                member = self.distinct(member)
                yield member
                if depth < MAX_DEPTH and self.read_nested and member.refused is None and is_archive(member.name):
                    yield from self._nested(member)
        except _OverBudget:
            self.notes.append(f"{name}: stopped after expanding {human_size(MAX_EXPANDED)}")
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, lzma.LZMAError, ValueError) as exc:
            raise ExtractionError(f"corrupt archive {name}: {reason(exc)}") from None

    def _nested(self, member: Member) -> Iterator[Member]:
        try:
            data = member.read()
            yield from self.members(io.BytesIO(data), member.name.rpartition("/")[2], member.path, member.depth + 1)
        except ExtractionError as exc:
            self.notes.append(f"{member.name}: {exc}")

    # --- the formats ---------------------------------------------------------------------------

    def _zip(self, file: BinaryIO, prefix: str, depth: int) -> Iterator[Member]:
        archive = zipfile.ZipFile(file)
        for info in archive.infolist():
            if info.is_dir():
                continue
            file_type = stat.S_IFMT(info.external_attr >> 16)  # 0 when the zip was not made on Unix
            why = (
                "its name holds a NUL character"
                if "\0" in info.orig_filename
                else _unsafe(info.filename.replace("\\", "/")) or _zip_type_refusal(file_type)
            )
            if why:
                self.note(f"{_shown(info.orig_filename)}: skipped, {why}")
                continue
            name = _safe_name(info.filename.replace("\\", "/"))
            refused = self._zip_refusal(info)
            yield Member(
                name,
                f"{prefix}/{name}",
                info.file_size,
                _zip_time(info.date_time),
                depth,
                refused,
                None if refused else _bounded(functools.partial(_zip_bytes, archive, info), self),
            )

    def _zip_refusal(self, info: zipfile.ZipInfo) -> str | None:
        if info.flag_bits & 0x1:
            return "encrypted"
        if info.file_size > self.max_member_bytes:
            return f"too large to index ({human_size(info.file_size)})"
        if info.compress_size > most_compressed_bytes(info.file_size):
            return (
                f"declares {human_size(info.file_size)} but holds {human_size(info.compress_size)} compressed "
                "(possible zip bomb)"
            )
        if info.file_size > limits.ZIP_RATIO_FLOOR and info.file_size > info.compress_size * limits.MAX_ZIP_RATIO:
            return f"{human_size(info.compress_size)} would expand to {human_size(info.file_size)} (possible zip bomb)"
        return None

    def _tar(self, file: BinaryIO, prefix: str, depth: int) -> Iterator[Member]:
        stream = _Budgeted(_decompressed(file), self)
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            for info in archive:
                if info.isdir():
                    continue
                why = _unsafe(info.name) or _tar_type_refusal(info)
                if why:
                    self.note(f"{_shown(info.name)}: skipped, {why}")
                    continue
                name = _safe_name(info.name)
                refused = f"too large to index ({human_size(info.size)})" if info.size > self.max_member_bytes else None
                yield Member(
                    name,
                    f"{prefix}/{name}",
                    info.size,
                    float(info.mtime),
                    depth,
                    refused,
                    None if refused else _bounded(functools.partial(_tar_bytes, archive, info), self, streamed=True),
                )

    def _single(self, file: BinaryIO, name: str, prefix: str, depth: int) -> Iterator[Member]:
        inner = name.rpartition(".")[0] or name
        compressed = file.seek(0, io.SEEK_END)
        file.seek(0)

        def read() -> bytes:
            if self.over:
                raise _Late
            file.seek(0)
            data = _Budgeted(_decompressed(file), self).read(self.max_member_bytes + 1)
            if len(data) > self.max_member_bytes:
                raise ExtractionError(f"refusing {inner}: expands to more than {human_size(self.max_member_bytes)}")
            if len(data) > limits.ZIP_RATIO_FLOOR and len(data) > compressed * limits.MAX_ZIP_RATIO:
                raise ExtractionError(
                    f"refusing {inner}: {human_size(compressed)} would expand to "
                    f"{human_size(len(data))} (possible bomb)"
                )
            return data

        yield Member(inner, f"{prefix}/{inner}", _single_size(file), _single_time(file), depth, None, read)


class _OverBudget(Exception):
    pass


class _Budgeted(io.RawIOBase):
    """A stream that stops the walk once it has given out the walk's budget of bytes."""

    def __init__(self, raw: _Stream, walk: _Walk) -> None:
        self._raw, self._walk = raw, walk

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size if size is not None and size >= 0 else self._walk.budget + 1)
        self._walk.budget -= len(data)
        if self._walk.budget < 0:
            raise _OverBudget
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _bounded(read: Callable[[], bytes], walk: _Walk, *, streamed: bool = False) -> Callable[[], bytes]:
    """``read``, counted against the walk's budget (a streamed read counts itself), failing in one line."""

    def counted() -> bytes:
        if walk.over:
            raise _Late
        try:
            data = read()
        except _OverBudget:
            data = b""
            walk.budget = -1
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, lzma.LZMAError, ValueError) as exc:
            raise ExtractionError(f"corrupt member: {reason(exc)}") from None
        if not streamed:
            walk.budget -= len(data)
        if walk.budget < 0:
            raise ExtractionError(f"refusing member: the archive expands past {human_size(MAX_EXPANDED)}")
        return data

    return counted


def _zip_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    return archive.open(info).read()


def _tar_bytes(archive: tarfile.TarFile, info: tarfile.TarInfo) -> bytes:
    member = archive.extractfile(info)
    if member is None:  # not a regular file: the walk refused it before it got here
        raise ExtractionError(f"{_shown(info.name)} is not a regular file")
    return member.read()


def _decompressed(file: BinaryIO) -> _Stream:
    head = file.read(6)
    file.seek(0)
    for magic, opener in _DECOMPRESSORS:
        if head.startswith(magic):
            return opener(file)
    return file


def _unsafe(name: str) -> str | None:
    """Why a member's name cannot be a path inside the archive, or None when it can."""
    parts = [part for part in PurePosixPath(name).parts if part not in ("", ".")]
    if "\0" in name:
        return "its name holds a NUL character"
    if not parts:
        return "it has no name"
    if name.startswith("/"):
        return "its name is absolute"
    if ":" in parts[0]:
        return "its name starts with a drive"
    if ".." in parts:
        return "its name climbs out of the archive"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not valid UTF-8"
    return None


def _safe_name(name: str) -> str:
    """The member's name as a relative path: a name that ``_unsafe`` let through (one that climbs out, is absolute
    or is not UTF-8 is skipped before)."""
    return "/".join(part for part in PurePosixPath(name).parts if part not in ("", "."))


def _zip_type_refusal(file_type: int) -> str | None:
    if file_type in (0, stat.S_IFREG):
        return None
    return (
        "it is a symbolic link" if file_type == stat.S_IFLNK else "it is not a regular file (a device, FIFO or socket)"
    )


def _tar_type_refusal(info: tarfile.TarInfo) -> str | None:
    if info.isfile():
        return None
    if info.issym():
        return "it is a symbolic link"
    if info.islnk():
        return "it is a hard link"
    return "it is not a regular file (a device, FIFO or socket)"


def _shown(name: str) -> str:
    """A member's name for a note: undecodable bytes and control characters escaped, never raw."""
    return "".join(char if char.isprintable() else ascii(char)[1:-1] for char in name)


def _zip_time(date_time: tuple[int, int, int, int, int, int]) -> float:
    try:
        return time.mktime((*date_time, 0, 0, -1))
    except (OverflowError, ValueError):
        return 0.0


def _single_size(file: BinaryIO) -> int:
    """A single compressed file's size: gzip records it (modulo 4 GiB) in its last four bytes."""
    file.seek(0)
    head = file.read(2)
    if head == b"\x1f\x8b":
        file.seek(-4, io.SEEK_END)
        size = int.from_bytes(file.read(4), "little")
    else:
        size = 0
    file.seek(0)
    return size


def _single_time(file: BinaryIO) -> float:
    """gzip's header keeps the original file's modification time; other formats do not."""
    file.seek(0)
    head = file.read(8)
    file.seek(0)
    return float(int.from_bytes(head[4:8], "little")) if head[:2] == b"\x1f\x8b" else 0.0
