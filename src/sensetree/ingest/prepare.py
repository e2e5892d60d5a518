"""The keyword phase's work on one file, run in a worker process: file -> hash -> text -> chunks.

Everything here is a pure function of the file on disk and the job, so a worker can be
killed at any moment (a timeout, a stop) without leaving anything half-written: the main
process stores what comes back.
"""

from __future__ import annotations

import errno
import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG

from .chunker import chunk_text, normalize_text
from .extract import Extraction, ExtractionError, context_descriptor, extract
from .sense import excerpt_sense
from .walker import block_summary


@dataclass(frozen=True)
class Job:
    path: str
    kind: str                   # 'file' or 'block'
    stored_hash: str | None     # the content whose text is stored: the same hash means nothing to do
    chunk_size: int = 1000
    overlap: int = 200
    max_file_bytes: int = 50 * 1024 * 1024


@dataclass
class Prepared:
    """What the main process needs to store a file's text rows, or why it cannot."""

    path: str
    content_hash: str = ""
    mtime: float = 0.0
    size: int = 0
    doc_type: str = ""
    chunks: list[str] = field(default_factory=list)
    excerpt: str = ""            # the sense until a model writes one
    text_chars: int = 0
    is_block: bool = False       # a block folder's sense is its fixed description, never a model's
    context_only: bool = False
    failure: str | None = None   # content unreadable: indexed by its context entry, ends failed
    unchanged: bool = False      # same content as the stored text: nothing to extract
    vanished: bool = False
    members: int = 0             # files inside a block folder
    extract_seconds: float | None = None  # None: extraction did not run


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


def prepare(job: Job) -> Prepared:
    """Hash, extract and chunk one file (or describe one block folder). Unexpected errors propagate:
    the caller counts them as an attempt."""
    item = Prepared(job.path)
    try:
        if job.kind == "block":
            _prepare_block(job, item)
        else:
            _prepare_file(job, item)
    except FileNotFoundError:
        item.vanished = True
    return item


def context_entry(path: str, reason: str, doc_type: str = "context") -> Prepared:
    """A file whose content cannot be read still gets an entry that finds it by name and place."""
    text = context_descriptor(Path(path), "unreadable")
    return Prepared(path, doc_type=doc_type, chunks=[text], excerpt=excerpt_sense(text), text_chars=len(text),
                    context_only=True, failure=reason)


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
    text = (f"Folder {path.name} in {path.parent}, indexed as one unit: {count} files. "
            f"Dominant types: {types}. Examples: {', '.join(examples)}.")
    item.chunks = _chunks(text, job)
    item.excerpt = f"Folder {path.name} holding {count} files ({types})."
    item.text_chars = len(text)


def _prepare_file(job: Job, item: Prepared) -> None:
    stat = os.stat(job.path)
    item.mtime, item.size = stat.st_mtime, stat.st_size
    by_stat = "ctx:" + hashlib.sha256(f"{job.path}:{stat.st_mtime}:{stat.st_size}".encode()).hexdigest()
    try:
        item.content_hash = by_stat if stat.st_size > job.max_file_bytes else file_hash(job.path)
    except PermissionError:  # extract() says so in one line, and the file keeps its context entry
        item.content_hash = by_stat
    item.unchanged = item.content_hash == job.stored_hash
    if item.unchanged:
        return
    started = time.perf_counter()
    path = Path(job.path)
    try:
        extraction = extract(path, max_bytes=job.max_file_bytes)
    except ExtractionError as exc:
        item.failure = str(exc)
        extraction = Extraction(context_descriptor(path, "unreadable"), "context", True)
    item.extract_seconds = time.perf_counter() - started
    text = normalize_text(extraction.text)
    if not text.strip():
        extraction = Extraction(context_descriptor(path, "empty"), "context", True)
        text = extraction.text
    item.doc_type, item.context_only = extraction.doc_type, extraction.context_only
    item.chunks = _chunks(text, job) or [text.strip() or job.path]
    item.excerpt, item.text_chars = excerpt_sense(text), len(text)


def _chunks(text: str, job: Job) -> list[str]:
    return chunk_text(text, job.chunk_size, job.overlap)
