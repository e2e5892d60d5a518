"""The keyword phase's work on one file, run in a worker process: file -> hash -> text -> chunks.

Everything here is a pure function of the file on disk and the job, so a worker can be
killed at any moment (a timeout, a stop) without leaving anything half-written: the main
process stores what comes back. An archive comes back with its members, each a file of its
own for the index, named ``<archive path>/<member path>``.

OCR is slow (seconds a page), so it waits: the keyword phase first stores what reads without
it (``ocr="later"`` counts the pages that need it), and a second pass (``ocr="now"``) reads
those files again with OCR before their vectors are made.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG

from ..safe_text import printable
from ..store.terms import Analysis, analyse_document
from .chunker import chunk_spans
from .confine import OutsideRoots, RootGuard
from .extract import (
    Extraction,
    ExtractionError,
    Ocr,
    OcrSettings,
    archive_members,
    context_descriptor,
    extract,
    extract_bytes,
    ignore_files,
    is_archive,
)
from .extract.base import human_size
from .extract.sniff import type_from_name
from .sense import excerpt_sense, stored_texts
from .walker import block_summary, inner_ignores, member_reason, member_rules

log = logging.getLogger(__name__)
ARCHIVE_TIME_FACTOR = 10  # an archive may take this many times a file's time limit: it holds many files


@dataclass(frozen=True)
class Job:
    path: str
    kind: str  # 'file' or 'block'
    stored_hash: str | None  # the content whose text is stored: the same hash means nothing to do
    chunk_size: int = 1000
    overlap: int = 200
    max_file_bytes: int = 50 * 1024 * 1024
    ocr: str = "later"  # 'off', 'later' (count the pages that need it) or 'now'
    ocr_settings: OcrSettings = field(default_factory=OcrSettings)
    roots: tuple[str, ...] = ()  # what the file is read through (confine.RootGuard); none: a path the user named


@dataclass(frozen=True)
class Sent:
    """A file read by the process that queued it, for a worker that cannot see its path (``distributed.py``)."""

    data: bytes
    mtime: float
    size: int


@dataclass
class Prepared:
    """What the main process needs to store a file's text rows, or why it cannot."""

    path: str
    kind: str = "file"
    content_hash: str = ""
    mtime: float = 0.0
    size: int = 0
    doc_type: str = ""
    chunks: list[str] = field(default_factory=list)
    locations: list[str | None] = field(default_factory=list)  # per chunk: JSON of the places it covers
    excerpt: str = ""  # the sense until a model writes one
    analyses: list[Analysis] = field(default_factory=list)  # of the stored texts, chunk 0 behind the excerpt
    text_chars: int = 0
    is_block: bool = False  # a block folder's sense is its fixed description, never a model's
    context_only: bool = False
    failure: str | None = None  # content unreadable: indexed by its context entry, ends failed
    notes: list[str] = field(default_factory=list)  # why it is context only, pages OCR could not read
    unchanged: bool = False  # same content as the stored text: nothing to extract
    vanished: bool = False
    members: int = 0  # files inside a block folder
    extract_seconds: float | None = None  # None: extraction did not run
    ocr_pages: int = 0
    ocr_seconds: float = 0.0
    ocr_wanted: int = 0  # pages waiting for the OCR pass
    archive_members: list[Prepared] = field(default_factory=list)


def file_hash(path: str) -> str:
    """SHA-256 of the content; FileNotFoundError when the path is no longer a regular file.

    Opened without blocking: a FIFO put in a file's place after the scan would otherwise wait
    for a writer forever and stall the whole queue.
    """
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not S_ISREG(os.fstat(fd).st_mode):
            raise FileNotFoundError(errno.ENOENT, "no longer a regular file", path)
        for block in iter(lambda: os.read(fd, 1 << 20), b""):
            digest.update(block)
    finally:
        os.close(fd)
    return digest.hexdigest()


def time_limit(job: Job, seconds: float) -> float:
    """The seconds a worker may spend on ``job`` before it is cut off; OCR pages have their own limit."""
    limit = seconds * (ARCHIVE_TIME_FACTOR if is_archive(job.path) else 1)
    if job.ocr == "now":
        limit += job.ocr_settings.max_pages * job.ocr_settings.page_timeout
    return limit


def prepare(job: Job, sent: Sent | None = None) -> Prepared:
    """Hash, extract and chunk one file (or describe one block folder); from ``sent`` when the file was
    read elsewhere. Unexpected errors propagate: the caller counts them as an attempt."""
    item = Prepared(job.path)
    try:
        if job.kind == "block":
            _prepare_block(job, item)
        else:
            _prepare_file(job, item, sent)
    except FileNotFoundError:
        item.vanished = True
    return item


def context_entry(path: str, reason: str, doc_type: str = "context") -> Prepared:
    """A file whose content cannot be read still gets an entry that finds it by name and place."""
    text = context_descriptor(Path(path), "unreadable")
    return Prepared(
        path,
        doc_type=doc_type,
        chunks=[text],
        locations=[None],
        excerpt=excerpt_sense(text),
        text_chars=len(text),
        context_only=True,
        failure=reason,
    )


def _prepare_block(job: Job, item: Prepared) -> None:
    path = Path(job.path)
    stat = path.stat()
    count, extensions, examples = block_summary(path)
    types = ", ".join(f"{ext} ({n})" for ext, n in extensions) or "none"
    item.mtime, item.size, item.doc_type, item.members, item.is_block = stat.st_mtime, 0, "folder-block", count, True
    item.content_hash = "block:" + hashlib.sha256(f"{path}:{stat.st_mtime}:{count}".encode()).hexdigest()
    item.unchanged = item.content_hash == job.stored_hash
    if item.unchanged:
        return
    text = (
        f"Folder {path.name} in {path.parent}, indexed as one unit: {count} files. "
        f"Dominant types: {types}. Examples: {', '.join(examples)}."
    )
    item.chunks = [c.text for c in chunk_spans(text, job.chunk_size, job.overlap)]
    item.locations = [None] * len(item.chunks)
    item.excerpt = f"Folder {path.name} holding {count} files ({types})."
    item.text_chars = len(text)
    _analyse(item)


def _read(job: Job, item: Prepared) -> Sent | Extraction:
    """The file's bytes, read through the root guard; or, where they are not read (over the size limit, no
    permission), the context entry that stands for the file (``item.failure`` says why it is unreadable).

    A file swapped since the scan for a link that leads out of the roots reads as vanished: what the link
    leads to is never read, and the next scan leaves the link out too."""
    try:
        contents = RootGuard(job.roots).read(job.path, job.max_file_bytes)
    except OutsideRoots as exc:
        log.warning("skipped %s", printable(str(exc)))
        raise FileNotFoundError(errno.ENOENT, str(exc), job.path) from None
    except FileNotFoundError:
        raise
    except OSError as exc:
        stat = os.lstat(job.path)
        item.mtime, item.size = stat.st_mtime, stat.st_size
        item.failure = f"cannot read: {job.path}: {exc.strerror or exc}"
        return Extraction(context_descriptor(Path(job.path), "unreadable"), "context", True)
    if contents.data is None:
        item.mtime, item.size = contents.stat.st_mtime, contents.stat.st_size
        kind = f"file too large to index ({human_size(item.size)})"
        doc_type = type_from_name(Path(job.path).name) or "context"  # as extract() types it: found by type too
        return Extraction(context_descriptor(Path(job.path), kind), doc_type, True, notes=(kind,))
    return Sent(contents.data, contents.stat.st_mtime, len(contents.data))


def _prepare_file(job: Job, item: Prepared, sent: Sent | None) -> None:
    unread = None  # the context entry of a file whose content is not read
    if sent is None and job.roots:
        read = _read(job, item)
        sent, unread = (read, None) if isinstance(read, Sent) else (None, read)
    if sent is not None:  # the sender keeps to the size limit: a larger file is prepared where it is (context only)
        item.mtime, item.size = sent.mtime, sent.size
    elif unread is None:
        stat = os.stat(job.path)
        item.mtime, item.size = stat.st_mtime, stat.st_size
    by_stat = "ctx:" + hashlib.sha256(f"{job.path}:{item.mtime}:{item.size}".encode()).hexdigest()
    try:
        if unread is not None or item.size > job.max_file_bytes:
            item.content_hash = by_stat
        else:
            item.content_hash = hashlib.sha256(sent.data).hexdigest() if sent else file_hash(job.path)
    except PermissionError:  # extract() says so in one line, and the file keeps its context entry
        item.content_hash = by_stat
    item.unchanged = item.content_hash == job.stored_hash and job.ocr != "now"
    if item.unchanged:
        return
    started = time.perf_counter()
    try:
        if unread is not None:
            extraction = unread
        elif sent is None:
            extraction = extract(Path(job.path), max_bytes=job.max_file_bytes, ocr=_ocr(job))
        else:
            extraction = extract_bytes(sent.data, job.path, ocr=_ocr(job), max_bytes=job.max_file_bytes)
    except ExtractionError as exc:
        item.failure = str(exc)
        extraction = Extraction(context_descriptor(Path(job.path), "unreadable"), "context", True)
    _fill(item, extraction, job)
    if is_archive(job.path) and item.failure is None:
        skipped: list[str] = []  # members the walk skipped or renamed: the archive's notes, for the queue
        item.archive_members = list(_members(job, item.mtime, sent, skipped))
        item.notes += [note for note in skipped if note not in item.notes]
    item.extract_seconds = time.perf_counter() - started


def _members(job: Job, archive_mtime: float, sent: Sent | None, notes: list[str]):
    """Each member of the archive, prepared as a file of its own; a refused one by its context entry.
    ``notes`` gets a line for each member the walk skipped or renamed. A member the walk would leave out
    on disk (a hidden name, one the ignore files exclude, a block folder's files) is left out unread."""
    rules = member_rules(job.path, job.roots)
    opened = None
    if sent is None and job.roots:  # an archive over the size limit is walked, not read whole
        try:
            opened = os.fdopen(RootGuard(job.roots).open(job.path), "rb")
            with os.fdopen(RootGuard(job.roots).open(job.path), "rb") as first:
                ignores = inner_ignores(ignore_files(job.path, file=first, max_member_bytes=job.max_file_bytes))
        except (OSError, OutsideRoots) as exc:
            if opened is not None:
                opened.close()
            log.warning("skipped the members of %s: %s", printable(job.path), printable(str(exc)))
            return
    else:
        ignores = inner_ignores(
            ignore_files(job.path, data=sent.data if sent else None, max_member_bytes=job.max_file_bytes)
        )
    notes += [why for why in ignores.values() if isinstance(why, str)]  # folders held back, for the queue
    for member in archive_members(
        job.path, max_member_bytes=job.max_file_bytes, notes=notes, data=sent.data if sent else None, file=opened
    ):
        if member_reason(rules, member.path[len(job.path) + 1 :].split("/"), ignores):
            continue  # as the same name on disk: not read, not indexed
        item = Prepared(member.path, kind="member", mtime=member.mtime or archive_mtime, size=member.size)
        try:
            data = member.read()
        except ExtractionError as exc:
            refused = context_entry(member.path, str(exc))
            refused.kind, refused.mtime, refused.size = "member", item.mtime, item.size
            refused.content_hash = "member:" + hashlib.sha256(f"{member.path}:{member.size}".encode()).hexdigest()
            yield refused
            continue
        item.content_hash = hashlib.sha256(data).hexdigest()
        try:
            extraction = extract_bytes(data, member.path, ocr=_ocr(job), size=member.size, max_bytes=job.max_file_bytes)
        except ExtractionError as exc:
            item.failure = str(exc)
            extraction = Extraction(
                context_descriptor(Path(member.path), "unreadable", size=member.size), "context", True
            )
        _fill(item, extraction, job)
        yield item


def _fill(item: Prepared, extraction: Extraction, job: Job) -> None:
    """The chunks of an extraction, each with the place in the file it comes from."""
    text = extraction.text  # final: extraction normalises once (extract/normalise.py)
    if not text.strip():
        extraction = Extraction(context_descriptor(Path(item.path), "empty"), "context", True)
        text = extraction.text
    item.doc_type, item.context_only = extraction.doc_type, extraction.context_only
    chunks = [
        (chunk.text, place)
        for start, end, place in _parts(extraction)
        for chunk in chunk_spans(text[start:end], job.chunk_size, job.overlap)
    ]
    item.chunks = [chunk for chunk, _ in chunks] or [text.strip() or item.path]
    item.locations = [place for _, place in chunks] or [None]
    item.excerpt, item.text_chars = excerpt_sense(text), len(text)
    item.notes = list(extraction.notes)
    item.ocr_pages, item.ocr_seconds, item.ocr_wanted = (
        extraction.ocr_pages,
        extraction.ocr_seconds,
        extraction.ocr_wanted,
    )
    _analyse(item)


def _parts(extraction: Extraction) -> list[tuple[int, int, str | None]]:
    """(start, end, place as JSON) of the stretches chunked apart: each page, slide, sheet or chapter on
    its own, so that every chunk knows exactly where it comes from; unlocated text in between as it is."""
    parts: list[tuple[int, int, str | None]] = []
    at = 0
    for span in extraction.spans:
        if span.start > at:
            parts.append((at, span.start, None))
        parts.append((span.start, span.end, json.dumps([span.location], ensure_ascii=False, separators=(",", ":"))))
        at = span.end
    if at < len(extraction.text):
        parts.append((at, len(extraction.text), None))
    return parts


def _analyse(item: Prepared) -> None:
    """The keyword analysis of what will be stored, made here, in the worker, where the cores are."""
    item.analyses = analyse_document(stored_texts(item.chunks, item.excerpt, item.doc_type))


_OCRS: dict[OcrSettings, Ocr] = {}


def _ocr(job: Job):
    """What extract() is told about OCR: none, later, or this worker's OCR engine for the job's settings."""
    if job.ocr != "now":
        return None if job.ocr == "off" else "later"
    if job.ocr_settings not in _OCRS:
        _OCRS[job.ocr_settings] = Ocr(job.ocr_settings)
    return _OCRS[job.ocr_settings]
