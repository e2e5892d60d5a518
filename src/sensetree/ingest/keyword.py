"""The keyword phase: every pending file's text is extracted, chunked and stored, without vectors yet.

It runs before and ahead of the semantic phase because it is fast (extraction, not models):
right after the scan, every readable file becomes findable by an exact word or name, and
the slow embedding fills in meaning afterwards. Files are prepared in worker processes
(``workers.WorkerPool``) and stored in batches: one LanceDB delete + append, then one SQLite
transaction marks them ``keyword``. A batch is committed at least every second, so what is
done is findable at once and a stop loses at most that second.

OCR (seconds a page) would hold every other file back, so it has a pass of its own: the first
pass stores what reads without it and counts the pages that need it; then ``run_ocr`` reads
those files again with OCR, before the semantic phase makes their vectors.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import replace
from pathlib import PurePath
from typing import Callable

from pebble import ProcessExpired

from .. import paths
from ..errors import StoreDamaged
from ..store.catalog import Catalog, FileRow, StoredText
from ..store.chunks import ChunkStore
from ..store.repair import one_line
from ..store.table import ChunkRow
from ..store.terms import Analysis
from ..store.writes import STORE_ERRORS
from .extract import is_archive
from .options import IndexOptions
from .pause import IndexingPaused
from .prepare import Job, Prepared, context_entry, prepare, time_limit
from .progress import Progress
from .sense import SENSE_MIN_TEXT, SenseWriter, stored_texts
from .workers import POLL_SECONDS, Pool, Stopped, stops_starting

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3  # an unexpected error (a bug, a worker that died) is retried this many times
BATCH_FILES = 256  # files per commit
BATCH_CHUNKS = 4096  # chunks per commit
FLUSH_SECONDS = 1.0  # the longest a prepared file waits to be stored


class KeywordPhase:
    def __init__(
        self,
        catalog: Catalog,
        store: ChunkStore,
        pool: Pool,
        senses: SenseWriter,
        options: IndexOptions,
        dimension: Callable[[], int],
        refresh: Callable[[Progress], None],
    ):
        self.catalog, self.store, self.pool, self.senses, self.options = catalog, store, pool, senses, options
        self._dimension = dimension  # the vector size, needed to create the table on the first write
        self._refresh = refresh  # re-reads the two progress figures from the catalog

    def run(self, progress: Progress, stop: threading.Event, notify: Callable[[Progress], None]) -> bool:
        """Store the text of every pending row; False when there was none. Raises Stopped."""
        waiting = self.catalog.files.pending()
        ocr = "later" if self.options.ocr.enabled else "off"
        worked = self._prepare_and_store(self._files_of(waiting), ocr, progress, stop, notify, interrupt=None)
        self._count_stuck({row.path for row in waiting})
        return worked

    def _count_stuck(self, waited: set[str]) -> None:
        """Rows that were waiting before the run and still wait after it (nothing the run did reached them)
        count an attempt each and fail after MAX_ATTEMPTS: no row can keep the queue busy forever."""
        for row in self.catalog.files.pending():
            if row.path in waited:
                self.catalog.states.mark_failed(
                    row.path,
                    "it stayed queued after it was read (for a member: its archive no longer holds it under that name)",
                    max_attempts=MAX_ATTEMPTS,
                )

    def run_ocr(
        self,
        progress: Progress,
        stop: threading.Event,
        notify: Callable[[Progress], None],
        interrupt: threading.Event | None,
    ) -> bool:
        """Read again, with OCR, the files that have pages only OCR can read; False when there was none.

        Ends early when ``interrupt`` is set (new files on disk come first)."""
        rows = self._files_of(self.catalog.files.waiting_for_ocr())
        return self._prepare_and_store(rows, "now", progress, stop, notify, interrupt)

    def _files_of(self, rows: list[FileRow]) -> list[FileRow]:
        """The rows to prepare: a member of an archive is prepared with its archive, never alone, and a
        member waiting (a retry, a new sense, a repair) has its archive read again even when it is unchanged."""
        chosen: dict[str, FileRow] = {}
        reread: set[str] = set()
        for row in rows:
            if row.kind == "member":
                archive = self._archive_of(row.path)
                if archive is None:  # its archive is gone: so is the member
                    self.store.writes.delete_paths([row.path])
                    self.catalog.states.delete([row.path])
                    continue
                reread.add(archive.path)
                row = archive
            chosen.setdefault(row.path, row)
        return [replace(row, content_hash=None) if row.path in reread else row for row in chosen.values()]

    def _archive_of(self, member: str) -> FileRow | None:
        for parent in PurePath(member).parents:
            row = self.catalog.files.get(str(parent))
            if row is not None and row.kind == "file":
                return row
        return None

    def _prepare_and_store(
        self,
        rows: list[FileRow],
        ocr: str,
        progress: Progress,
        stop: threading.Event,
        notify: Callable[[Progress], None],
        interrupt: threading.Event | None,
    ) -> bool:
        with stops_starting(stop):  # a stop while the worker processes start is heeded at once
            return self._prepare_and_store_rows(rows, ocr, progress, stop, notify, interrupt)

    def _prepare_and_store_rows(
        self,
        rows: list[FileRow],
        ocr: str,
        progress: Progress,
        stop: threading.Event,
        notify: Callable[[Progress], None],
        interrupt: threading.Event | None,
    ) -> bool:
        queue = deque(rows)
        if not queue:
            return False
        progress.phase = "keyword" if ocr != "now" else "ocr"
        inflight: dict[Future, FileRow] = {}
        batch: list[tuple[FileRow, Prepared]] = []
        batch_started = time.monotonic()
        lookahead = 4 * self.pool.workers
        try:
            while queue or inflight:
                while queue and len(inflight) < lookahead and not (interrupt and interrupt.is_set()):
                    row = queue.popleft()
                    job = self._job(row, ocr)
                    inflight[self.pool.submit(prepare, job, timeout=time_limit(job, self.options.file_timeout))] = row
                if stop.is_set():
                    raise Stopped()
                finished, _ = wait(inflight, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                for future in finished:
                    row = inflight.pop(future)
                    item = self._outcome(future, row, progress, queue)
                    if item is None:
                        continue
                    if not batch:
                        batch_started = time.monotonic()
                    batch.append((row, item))
                    progress.current = row.path
                chunks = sum(len(item.chunks) for _, item in batch)
                if batch and (
                    len(batch) >= BATCH_FILES
                    or chunks >= BATCH_CHUNKS
                    or time.monotonic() - batch_started >= FLUSH_SECONDS
                    or not (queue or inflight)
                ):
                    self._store_isolated(batch, progress)
                    batch = []
                notify(progress)
        except BaseException:
            self.pool.stop()  # what the workers were doing is abandoned; their files stay queued
            raise
        progress.current = ""
        return True

    def _job(self, row: FileRow, ocr: str) -> Job:
        o = self.options
        return Job(
            row.path,
            row.kind,
            row.content_hash,
            o.chunk_size,
            o.overlap,
            o.max_file_bytes,
            ocr,
            o.ocr.settings,
            roots=tuple(self.catalog.roots.all()),
        )

    def _outcome(self, future: Future, row: FileRow, progress: Progress, queue: deque[FileRow]) -> Prepared | None:
        """The prepared file, or a context entry for one that cannot be read; None when there is nothing
        to store (an attempt failed: the row goes back to the end of the queue, or fails for good)."""
        try:
            item = future.result()
        except TimeoutError:
            return context_entry(row.path, f"reading it took longer than {self.options.file_timeout:.0f} s")
        except MemoryError:
            return context_entry(row.path, "reading it needed more memory than a file may take")
        except (ProcessExpired, Exception) as exc:  # a bug, an OS error, a reader that crashed its worker
            log.warning("preparing %s failed: %s", row.path, exc)
            error = f"{type(exc).__name__}: {exc}"
            if self.catalog.states.mark_failed(row.path, error, max_attempts=MAX_ATTEMPTS) < MAX_ATTEMPTS:
                queue.append(row)
            else:
                progress.failed += 1
                progress.files_done += 1
            return None
        for part in (item, *item.archive_members):
            if part.extract_seconds is not None:
                progress.extraction.add(1, part.extract_seconds)
            if part.ocr_pages:
                progress.ocr.add(part.ocr_pages, part.ocr_seconds)
        return item

    def _store_isolated(self, batch: list[tuple[FileRow, Prepared]], progress: Progress) -> None:
        """Store the batch; when the store refuses it, each file alone, so that one file's failure (a
        bug, input LanceDB rejects) fails that file only, with its reason, and never the others."""
        try:
            self._store(batch, progress)
        except (IndexingPaused, StoreDamaged):
            raise  # not the files' fault: the whole run stops, the files stay pending
        except STORE_ERRORS as exc:
            if len(batch) > 1:
                for one in batch:
                    self._store_isolated([one], progress)
                return
            damage = self.store.repair.verify()
            if damage:
                raise StoreDamaged(damage) from exc
            row = batch[0][0]
            log.warning("storing %s failed: %s", row.path, exc)
            self.catalog.states.mark_failed(row.path, f"storing it failed: {one_line(exc)}", max_attempts=1)
            progress.failed += 1
            progress.files_done += 1

    def _not_ignored(self, archive: str, members: list[Prepared]) -> list[Prepared]:
        """The members of ``archive`` but those the user left out with ``sensetree ignore`` (a member, or a
        folder inside the archive): reading the archive again does not bring them back."""
        ignored = [
            p
            for p, mode in self.catalog.roots.folder_modes().items()
            if mode == "ignore" and paths.is_under(p, archive) and p != archive
        ]
        if not ignored:
            return members
        return [m for m in members if not any(paths.is_under(m.path, p) for p in ignored)]

    def _store(self, batch: list[tuple[FileRow, Prepared]], progress: Progress) -> None:
        gone = [item.path for _, item in batch if item.vanished]
        if gone:
            self._forget(gone)
        # Unchanged content keeps its rows; the semantic phase checks that its vectors are all there.
        self.catalog.states.mark_keyword(
            StoredText(
                row.path,
                item.content_hash,
                item.mtime,
                item.size,
                row.doc_type or "",
                row.chunks,
                ocr_wanted=row.ocr_wanted,
                notes=row.notes,
            )
            for row, item in batch
            if item.unchanged and not item.vanished
        )
        fresh = [item for _, item in batch if not (item.unchanged or item.vanished)]
        for row, item in batch:
            if is_archive(item.path) and not (item.unchanged or item.vanished):  # a failed read holds no members
                item.archive_members = self._not_ignored(item.path, item.archive_members)
                self._forget(
                    self.catalog.states.replace_archive_members(
                        item.path, row.root, ((m.path, m.size, m.mtime) for m in item.archive_members)
                    )
                )
                item.ocr_wanted += sum(m.ocr_wanted for m in item.archive_members)  # its OCR pass reads them all
                fresh += item.archive_members
        if fresh:
            self._store_text(fresh)
        progress.failed += sum(1 for item in fresh if item.failure)
        progress.files_done += len(batch)
        self._refresh(progress)

    def _forget(self, paths: list[str]) -> None:
        """Files gone from disk, or from their archive: their rows, and those of an archive's members."""
        if not paths:
            return
        members = [m for path in paths for m in self.catalog.files.under(path) if m != path]
        self.store.writes.delete_paths([*paths, *members])
        self.catalog.states.delete([*paths, *members])

    def _store_text(self, items: list[Prepared]) -> None:
        pinned = {path: row.text for path, row in self.catalog.senses.many(i.path for i in items).items() if row.pinned}
        rows, senses = [], []
        for item in items:
            sense = pinned.get(item.path, item.excerpt)
            if item.path not in pinned:
                senses.append((item.path, item.excerpt, "pending" if self._qualifies(item) else "excerpt"))
            analyses: list[Analysis | None] = list(item.analyses) or [None] * len(item.chunks)
            if item.path in pinned:
                analyses[0] = None  # chunk 0 carries the pinned sense, not the excerpt the worker analysed
            for index, text in enumerate(stored_texts(item.chunks, sense, item.doc_type)):
                analysis = analyses[index] if index < len(analyses) else None
                rows.append(
                    ChunkRow(
                        item.path,
                        index,
                        text,
                        None,
                        item.content_hash,
                        item.mtime,
                        location=item.locations[index] if index < len(item.locations) else None,
                        doc_type=item.doc_type,
                        size=item.size,
                        lang=analysis.language if analysis else None,
                        terms=analysis.terms if analysis else None,
                    )
                )
        paths = [item.path for item in items]
        self.catalog.states.forget_hashes(paths)  # a crash inside the swap must not leave a hash vouching for it
        self.store.writes.replace_files(paths, rows, "", self._dimension())
        self.catalog.senses.save(senses)
        for item in items:
            if item.members:
                self.catalog.states.set_members(item.path, item.members)
        self.catalog.states.mark_keyword(
            StoredText(
                i.path,
                i.content_hash,
                i.mtime,
                i.size,
                i.doc_type,
                len(i.chunks),
                i.failure,
                i.ocr_wanted,
                "\n".join(i.notes) or None,
            )
            for i in items
        )

    def _qualifies(self, item: Prepared) -> bool:
        """Whether a model will write this file's sense in the semantic phase (else the excerpt stays)."""
        wanted = self.options.qualify_context if item.context_only else self.options.qualify_documents
        return self.senses.uses_model and wanted and not item.is_block and item.text_chars >= SENSE_MIN_TEXT
