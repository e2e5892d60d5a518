"""The indexing pipeline: file -> text -> chunks -> sense -> vectors -> store.

Preparation (hash, extraction, chunking, sense) runs on a small thread pool ahead of the
embedding, so the embedding model — the bottleneck — is never idle waiting for a file.
Files are embedded and written in batches: one LanceDB delete + append per batch, then
one SQLite transaction marks them indexed. A file counts as indexed only after its
vectors are stored, so a run that is killed resumes where it stopped and never leaves a
half-written file (its old rows are replaced on the next pass).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG
from typing import Callable, TypeVar

import numpy as np

from ..models.embeddings import Embedder, EmbeddingError, EndpointUnavailable, wait_time
from ..store.catalog import Catalog, FileRow
from ..store.chunks import ChunkRow, ChunkStore
from .chunker import chunk_text, normalize_text
from .extract import Extraction, ExtractionError, context_descriptor, extract
from .sense import Sense, SenseWriter, embedded_texts, stored_texts
from .walker import block_summary

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3
BATCH_CHUNKS = 256  # chunks per embedding + write round: a small tail batch costs throughput
BATCH_FILES = 256  # files per write round, for many tiny files
LOOKAHEAD = 32      # files prepared ahead of the embedder

T = TypeVar("T")


class IndexingPaused(RuntimeError):
    """The embedding endpoint stayed down longer than we were asked to wait; files stay pending."""


@dataclass
class Progress:
    """Live counters for progress bars and the queue view."""

    total: int = 0
    done: int = 0
    chunks: int = 0
    failed: int = 0
    current: str = ""
    started: float = field(default_factory=time.monotonic)
    paused: str = ""  # why the queue is waiting, if it is
    embed_seconds: float = 0.0
    prepare_seconds: float = 0.0
    extract_seconds: float = 0.0  # per stage, for the queue's throughput figures
    extracted: int = 0
    sense_seconds: float = 0.0
    sensed: int = 0

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0


@dataclass
class Prepared:
    row: FileRow
    content_hash: str = ""
    mtime: float = 0.0
    size: int = 0
    doc_type: str = ""
    stored: list[str] = field(default_factory=list)
    embedded: list[str] = field(default_factory=list)
    sense: Sense | None = None
    failure: str | None = None  # content unreadable: indexed by context only, status failed
    unchanged: bool = False     # same content as the stored vectors: nothing to do
    vanished: bool = False
    error: str | None = None    # an unexpected error: counts as one attempt
    prepare_seconds: float = 0.0
    extract_seconds: float | None = None  # None: the stage did not run for this file
    sense_seconds: float | None = None


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


def wait_for_endpoint(call: Callable[[], T], progress: Progress, max_wait: float, stop: threading.Event,
                      notify: Callable[[Progress], None]) -> T:
    """``call()``, retried with backoff while the endpoint is unavailable; IndexingPaused after ``max_wait`` seconds.

    ``progress.paused`` says why the queue waits, for as long as it does.
    """
    attempt, waited = 0, 0.0
    while True:
        try:
            result = call()
            progress.paused = ""
            return result
        except EndpointUnavailable as exc:
            delay = wait_time(attempt, exc.retry_after)
            if waited + delay > max_wait:
                progress.paused = ""
                raise IndexingPaused(f"{exc}; gave up after waiting {waited:.0f} s, files stay pending") from exc
            progress.paused = f"{exc}; retrying in {delay:.0f} s"
            log.warning(progress.paused)
            notify(progress)
            if stop.wait(delay):
                raise IndexingPaused("stopped while the endpoint was down") from exc
            waited += delay
            attempt += 1


@dataclass
class IndexOptions:
    chunk_size: int = 1000
    overlap: int = 200
    max_file_bytes: int = 50 * 1024 * 1024
    qualify_documents: bool = True
    qualify_context: bool = True
    max_endpoint_wait: float = 600.0  # seconds the queue waits for a down endpoint before pausing


class Indexer:
    def __init__(self, catalog: Catalog, store: ChunkStore, embedder: Embedder, senses: SenseWriter,
                 options: IndexOptions):
        self.catalog, self.store, self.embedder, self.senses, self.options = catalog, store, embedder, senses, options
        self._notify: Callable[[Progress], None] = lambda p: None

    # preparation (thread pool) ----------------------------------------------------
    def prepare(self, row: FileRow) -> Prepared:
        started = time.perf_counter()
        item = Prepared(row)
        try:
            if row.kind == "block":
                self._prepare_block(item)
            else:
                self._prepare_file(item)
        except FileNotFoundError:
            item.vanished = True
        except Exception as exc:  # a bug or an OS error: counted, retried, never stops the queue
            log.exception("preparing %s failed", row.path)
            item.error = f"{type(exc).__name__}: {exc}"
        item.prepare_seconds = time.perf_counter() - started
        return item

    def _prepare_block(self, item: Prepared) -> None:
        path = Path(item.row.path)
        stat = path.stat()
        count, extensions, examples = block_summary(path)
        self.catalog.set_members(item.row.path, count)
        types = ", ".join(f"{ext} ({n})" for ext, n in extensions) or "none"
        text = (f"Folder {path.name} in {path.parent}, indexed as one unit: {count} files. "
                f"Dominant types: {types}. Examples: {', '.join(examples)}.")
        item.mtime, item.size, item.doc_type = stat.st_mtime, 0, "folder-block"
        item.content_hash = "block:" + hashlib.sha256(f"{path}:{stat.st_mtime}:{count}".encode()).hexdigest()
        item.unchanged = item.content_hash == item.row.content_hash
        if not item.unchanged:
            self._finish(item, text, Sense(f"Folder {path.name} holding {count} files ({types}).", "excerpt"))

    def _prepare_file(self, item: Prepared) -> None:
        path = item.row.path
        stat = os.stat(path)
        item.mtime, item.size = stat.st_mtime, stat.st_size
        by_stat = "ctx:" + hashlib.sha256(f"{path}:{stat.st_mtime}:{stat.st_size}".encode()).hexdigest()
        try:
            item.content_hash = by_stat if stat.st_size > self.options.max_file_bytes else file_hash(path)
        except PermissionError:  # extract() says so in one line, and the file keeps its context entry
            item.content_hash = by_stat
        item.unchanged = item.content_hash == item.row.content_hash
        if item.unchanged:
            return
        started = time.perf_counter()
        try:
            extraction = extract(Path(path), max_bytes=self.options.max_file_bytes)
        except ExtractionError as exc:
            item.failure = str(exc)
            extraction = Extraction(context_descriptor(Path(path), "unreadable"), "context", True)
        item.extract_seconds = time.perf_counter() - started
        text = normalize_text(extraction.text)
        if not text.strip():
            extraction = Extraction(context_descriptor(Path(path), "empty"), "context", True)
            text = extraction.text
        item.doc_type = extraction.doc_type
        pinned = self.catalog.sense(path)
        if pinned and pinned[2]:
            sense = Sense(pinned[0], "pinned")
        else:
            qualify = self.options.qualify_context if extraction.context_only else self.options.qualify_documents
            p = Path(path)
            started = time.perf_counter()
            sense = self.senses.write(text, name=p.name, folder=p.parent.name, doc_type=item.doc_type, qualify=qualify)
            item.sense_seconds = time.perf_counter() - started
        self._finish(item, text, sense)

    def _finish(self, item: Prepared, text: str, sense: Sense) -> None:
        chunks = chunk_text(text, self.options.chunk_size, self.options.overlap) or [text.strip() or item.row.path]
        item.sense = sense
        item.stored = stored_texts(chunks, sense.text, item.doc_type)
        item.embedded = embedded_texts(item.stored, sense.text, Path(item.row.path).name)

    # the run ----------------------------------------------------------------------
    def run(self, progress: Progress | None = None, on_update: Callable[[Progress], None] | None = None,
            stop: threading.Event | None = None) -> Progress:
        """Index every pending row. Returns the final counters; raises IndexingPaused if the endpoint stays down."""
        progress = progress or Progress()
        stop = stop or threading.Event()
        self._notify = on_update or (lambda p: None)
        queue = deque(self.catalog.pending())
        progress.total += len(queue)
        batch: list[Prepared] = []
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="prepare") as pool:
            inflight: deque[Future[Prepared]] = deque()

            def refill() -> None:
                while queue and len(inflight) < LOOKAHEAD:
                    inflight.append(pool.submit(self.prepare, queue.popleft()))

            refill()
            while inflight and not stop.is_set():
                item = inflight.popleft().result()
                refill()
                progress.current = item.row.path
                progress.prepare_seconds += item.prepare_seconds
                if item.extract_seconds is not None:
                    progress.extracted += 1
                    progress.extract_seconds += item.extract_seconds
                if item.sense_seconds is not None:
                    progress.sensed += 1
                    progress.sense_seconds += item.sense_seconds
                if item.vanished:
                    self.store.delete_paths([item.row.path])
                    self.catalog.delete([item.row.path])
                    progress.done += 1
                elif item.error:
                    if self.catalog.mark_failed(item.row.path, item.error, max_attempts=MAX_ATTEMPTS) >= MAX_ATTEMPTS:
                        progress.failed += 1
                        progress.done += 1
                    else:
                        queue.append(item.row)  # try again after the rest of the queue
                        refill()
                elif item.unchanged:
                    self.catalog.mark_indexed([(item.row.path, item.content_hash, item.mtime, item.size,
                                                item.row.doc_type or "", item.row.chunks)])
                    progress.done += 1
                else:
                    batch.append(item)
                if batch and (sum(len(b.embedded) for b in batch) >= BATCH_CHUNKS or len(batch) >= BATCH_FILES
                              or not inflight):
                    self._flush(batch, progress, stop)
                    batch = []
                if on_update:
                    on_update(progress)
            if batch and not stop.is_set():
                self._flush(batch, progress, stop)
        progress.current = ""
        if on_update:
            on_update(progress)
        return progress

    def _embed(self, texts: list[str], progress: Progress, stop: threading.Event) -> np.ndarray:
        """Embed, waiting out a down endpoint with backoff instead of failing every file (SPEC §7.3)."""

        def embed() -> np.ndarray:
            started = time.perf_counter()
            vectors = self.embedder.embed_passages(texts)
            progress.embed_seconds += time.perf_counter() - started
            return vectors

        return wait_for_endpoint(embed, progress, self.options.max_endpoint_wait, stop, self._notify)

    def _flush(self, batch: list[Prepared], progress: Progress, stop: threading.Event) -> None:
        texts = [t for item in batch for t in item.embedded]
        try:
            vectors = self._embed(texts, progress, stop)
        except EmbeddingError as exc:
            if isinstance(exc, EndpointUnavailable) or len(batch) == 1:
                if len(batch) == 1 and not isinstance(exc, EndpointUnavailable):
                    self._fail(batch[0], f"embedding failed: {exc}", progress)
                    return
                raise
            for item in batch:  # isolate the file the model refuses
                self._flush([item], progress, stop)
            return
        rows, offset = [], 0
        for item in batch:
            for index, text in enumerate(item.stored):
                rows.append(ChunkRow(item.row.path, index, text, vectors[offset + index], item.content_hash, item.mtime))
            offset += len(item.stored)
        self.catalog.forget_hashes(item.row.path for item in batch)
        self.store.replace_files([item.row.path for item in batch], rows, self.embedder.identity, self.embedder.dimension)
        self.catalog.save_senses((i.row.path, i.sense.text, i.sense.source) for i in batch if i.sense)
        self.catalog.mark_indexed((i.row.path, i.content_hash, i.mtime, i.size, i.doc_type, len(i.stored))
                                  for i in batch if not i.failure)
        for item in batch:
            if item.failure:
                self.catalog.mark_failed(item.row.path, item.failure, max_attempts=1)  # deterministic: no retry
                self.catalog.set_failed_context(item.row.path, "context", len(item.stored))
                progress.failed += 1
        progress.done += len(batch)
        progress.chunks += len(rows)

    def _fail(self, item: Prepared, error: str, progress: Progress) -> None:
        if self.catalog.mark_failed(item.row.path, error, max_attempts=MAX_ATTEMPTS) >= MAX_ATTEMPTS:
            progress.failed += 1
        progress.done += 1

