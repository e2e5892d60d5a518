"""The semantic phase: chunks stored by the keyword phase get their sense and their vectors.

Work is taken in the order people look for things: what the user just previewed, searched or scoped
to, then the most recently modified files; and every file's first chunk (with its sense) before the rest
of any file, so that each file can be found by meaning early. A batch is sized by the model's measured speed so
that about ``BATCH_SECONDS`` of work stands between two commits, whatever the model; a large
file is embedded over several batches and turns ``indexed`` when its last chunk has a vector.
Each batch is one ``merge_insert`` (atomic), then one SQLite transaction: a kill anywhere
loses at most one batch, and the next run finds exactly the chunks still without a vector.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from .. import paths
from ..models.devices import DEVICE_META
from ..models.embeddings import AbandoningEmbedder, Embedder, EmbeddingError, EndpointUnavailable
from ..store.catalog import Catalog, FileRow, SenseRow
from ..errors import StoreDamaged
from ..store.chunks import ChunkStore
from ..store.repair import one_line
from ..store.table import ChunkRow
from ..store.writes import STORE_ERRORS
from .chunker import rejoin
from .progress import Progress
from .reuse import VectorReuse
from ..store.stored_text import sense_head
from .sense import SENSE_INPUT_CHARS, SenseWriter, embedded_text, embedding_context
from .pause import wait_for_endpoint
from .workers import Stopped, call_interruptibly

log = logging.getLogger(__name__)

BATCH_SECONDS = 4.0  # model time per commit, at the measured rate
FIRST_BATCH = 8  # chunks, while the rate is not known yet
MAX_BATCH = 1024  # chunks per commit, however fast the model
CALL_SECONDS = 1.0  # model time per call: the stop flag is looked at between calls too
FILES_PER_BATCH = 256  # files looked at per batch (most are small)
OPENINGS_LOOKAHEAD = 20_000  # queued files looked at for one whose first chunk waits (the openings go first)
OPENING_CHUNKS = 6  # chunks rejoined for the sense input (SENSE_INPUT_CHARS)
MAX_REPAIRS = 3  # readings again of a file whose stored text does not match the catalog, before it fails
RATE_META = "semantic_rate"  # the latest rate and when, for `sensetree status` in another process


@dataclass
class _File:
    row: FileRow
    sense: SenseRow  # its sense; where it has none yet, an excerpt's, empty
    chunks: list[dict]  # the stored chunks to embed in this batch, in chunk order
    opening: list[str]  # the texts of its first stored chunks: what a model reads to write the sense


class SemanticPhase:
    def __init__(
        self,
        catalog: Catalog,
        store: ChunkStore,
        embedder: Callable[[], Embedder],
        senses: SenseWriter,
        max_endpoint_wait: float,
        refresh: Callable[[Progress], None],
        reuse: VectorReuse | None = None,
    ):
        self.catalog, self.store, self.senses = catalog, store, senses
        self._reuse = reuse  # vectors of texts embedded before (ingest/reuse.py); None embeds every text
        self._max_wait = max_endpoint_wait
        self._embedder = embedder  # loads the model, waiting for a down endpoint (may raise IndexingPaused)
        self._refresh = refresh
        self._model_lock = threading.Lock()  # one model call at a time, also after a call was abandoned

    def batch(self, progress: Progress, stop: threading.Event, notify: Callable[[Progress], None]) -> bool:
        """Embed about BATCH_SECONDS' worth of chunks and commit them; False when nothing is left. Raises Stopped."""
        budget = self._budget(progress)
        rows, openings_only = self._openings(budget), True
        if not rows:
            rows, openings_only = self.catalog.files.keyword_ready(FILES_PER_BATCH), False
        if not rows:
            return False
        progress.phase = "semantic"
        embedder = self._embedder()
        files, complete = self._gather(rows if openings_only else _enough(rows, budget))
        take: list[_File] = []
        for file in files:
            room = budget - sum(len(f.chunks) for f in take)
            if room <= 0:
                break
            chunks = file.chunks[:1] if openings_only and file.chunks[0]["chunk_index"] == 0 else file.chunks[:room]
            take.append(_File(file.row, file.sense, chunks, file.opening))
        complete += [f.row.path for f, t in zip(files, take) if len(t.chunks) == len(f.chunks)]
        if take:
            progress.current = take[0].row.path
            notify(progress)
            self._embed_and_store(take, embedder, progress, stop, notify)
        self.catalog.states.mark_embedded(complete)
        self._refresh(progress)
        return True

    # which chunks --------------------------------------------------------------------
    def _openings(self, budget: int) -> list[FileRow]:
        """Up to ``budget`` files in queue order whose first chunk has no vector yet: every file's opening
        (with its sense) is embedded before the rest of any file, so that each file can be found by
        meaning early. Empty once every waiting file has its opening."""
        waiting = self.store.queries.unembedded_openings(OPENINGS_LOOKAHEAD)
        if not waiting:
            return []
        return [row for row in self.catalog.files.keyword_ready(OPENINGS_LOOKAHEAD) if row.path in waiting][:budget]

    def _gather(self, rows: list[FileRow]) -> tuple[list[_File], list[str]]:
        """The files with chunks left to embed, in queue order, and the paths that have none left.

        A file whose stored text is not what the catalog says (a crash, a repair) goes back to the
        keyword phase instead.
        """
        stored = self.store.queries.stored_chunks([r.path for r in rows])
        whole = []
        for row in rows:
            indexes, hashes = stored[row.path]
            if indexes == set(range(row.chunks)) and row.chunks > 0 and hashes == {row.content_hash}:
                whole.append(row)
            else:  # its stored text is not what the catalog says: store it again
                self._repair(row.path, "its stored text never matched what was read")
        pending = defaultdict(list)
        for chunk in self.store.queries.unembedded([r.path for r in whole]):
            pending[chunk["path"]].append(chunk)
        senses = self.catalog.senses.many(r.path for r in whole)
        files, complete = [], []
        for row in whole:
            if not pending[row.path]:
                complete.append(row.path)
            elif (
                senses.get(row.path)
                and senses[row.path].source == "pending"
                and pending[row.path][0]["chunk_index"] != 0
            ):
                self._repair(row.path, "its sense was left half-written")  # by a killed run: start the file over
            else:
                chunks = pending[row.path]
                files.append(
                    _File(
                        row,
                        senses.get(row.path) or SenseRow("", "excerpt", False),
                        chunks,
                        [c["text"] for c in chunks[:OPENING_CHUNKS]],
                    )
                )
        return files, complete

    @staticmethod
    def _budget(progress: Progress) -> int:
        if progress.embed_rate <= 0:
            return FIRST_BATCH
        return max(1, min(MAX_BATCH, int(progress.embed_rate * BATCH_SECONDS)))

    # the work --------------------------------------------------------------------------
    def _embed_and_store(
        self,
        take: list[_File],
        embedder: Embedder,
        progress: Progress,
        stop: threading.Event,
        notify: Callable[[Progress], None],
    ) -> None:
        ready = [r for r in (self._with_sense(file, stop, progress) for file in take) if r is not None]
        texts = [
            embedded_text(c["chunk_index"], c["text"], context, file.sense.source)
            for file, context in ready
            for c in file.chunks
        ]
        started = time.perf_counter()
        try:
            vectors, sent = self._new_or_reused(embedder, texts, progress, stop, notify)
        except EmbeddingError as exc:
            if isinstance(exc, EndpointUnavailable):
                raise
            if len(ready) == 1:
                self._fail(ready[0][0], f"embedding failed: {exc}", progress)
                return
            for file, _ in ready:  # find the file the model refuses; the others go on
                self._embed_and_store([file], embedder, progress, stop, notify)
            return
        seconds = time.perf_counter() - started
        chunks = [c for file, _ in ready for c in file.chunks]
        try:
            self.store.writes.set_vectors(
                [
                    ChunkRow(
                        c["path"],
                        c["chunk_index"],
                        c["text"],
                        vector,
                        c["content_hash"],
                        c["mtime"],
                        c["location"],
                        c["doc_type"] or "",
                        c["size"] or 0,
                        c.get("lang"),
                        c.get("terms"),
                    )
                    for c, vector in zip(chunks, vectors)
                ],
                embedder.identity,
                embedder.dimension,
            )
        except StoreDamaged:
            raise  # the store's fault, not the files': the run stops for the repair
        except STORE_ERRORS as exc:  # the store refuses the batch: find the file it refuses; the others go on
            if len(ready) > 1:
                for file, _ in ready:
                    self._embed_and_store([file], embedder, progress, stop, notify)
                return
            damage = self.store.repair.verify()
            if damage:
                raise StoreDamaged(damage) from exc
            self._fail(ready[0][0], f"storing its vectors failed: {one_line(exc)}", progress)
            return
        self.catalog.senses.save(
            (f.row.path, f.sense.text, f.sense.source) for f, _ in ready if f.sense.source != "pinned"
        )
        progress.embedding.add(len(chunks), seconds)
        progress.sent_to_model += sent
        if sent:  # the model's rate sizes the batches and calls: reused vectors cost it nothing
            progress.note_batch_rate(sent, seconds)
        self.catalog.set_meta(RATE_META, json.dumps({"chunks_per_s": progress.embed_rate, "at": time.time()}))
        placement = getattr(embedder, "placement", None)  # a device that failed mid-run shows in `status`
        if placement is not None:
            self.catalog.set_meta(DEVICE_META, json.dumps(asdict(placement)))

    def _with_sense(self, file: _File, stop: threading.Event, progress: Progress) -> tuple[_File, str] | None:
        """The file with its final sense (chunk 0's text rewritten to carry it), and its embedding context.

        A sense still 'pending' is written by the model now, from the start of the file's text.
        """
        doc_type = file.row.doc_type or ""
        sense = file.sense
        if sense.source == "pending":
            first = file.chunks[0]
            old_head = sense_head(sense.text, doc_type)
            if not first["text"].startswith(old_head):
                self._repair(file.row.path, "its first chunk never matched its sense")  # store it again
                return None
            raw = [first["text"][len(old_head) :], *file.opening[1:]]
            path = Path(file.row.path)
            started = time.perf_counter()
            written = call_interruptibly(
                lambda: self.senses.write(
                    rejoin(raw, SENSE_INPUT_CHARS), name=path.name, folder=path.parent.name, doc_type=doc_type
                ),
                stop,
            )
            if written.source == "llm":
                progress.sense.add(1, time.perf_counter() - started)
            sense = SenseRow(written.text, written.source, False)
            first["text"] = sense_head(sense.text, doc_type) + raw[0]
            first["terms"] = None  # analysed again by the store, with the sense it now carries
        file.sense = sense
        return file, embedding_context(sense.text, paths.name_of(file.row.path))

    def _new_or_reused(
        self,
        embedder: Embedder,
        texts: list[str],
        progress: Progress,
        stop: threading.Event,
        notify: Callable[[Progress], None],
    ) -> tuple[np.ndarray, int]:
        """The texts' vectors, and how many texts the model was asked for."""

        def embed(distinct: list[str]) -> np.ndarray:
            return self._vectors(embedder, distinct, progress, stop, notify)

        if self._reuse is None:
            return embed(texts), len(texts)
        sent_before = self._reuse.counts.sent
        vectors = self._reuse.vectors(embedder.identity, embedder.dimension, texts, embed)
        return vectors, self._reuse.counts.sent - sent_before

    def _vectors(
        self,
        embedder: Embedder,
        texts: list[str],
        progress: Progress,
        stop: threading.Event,
        notify: Callable[[Progress], None],
    ) -> np.ndarray:
        """The texts' vectors, in calls of about CALL_SECONDS each, so that a stop is seen between them too
        (an embedder that drops its calls on a stop itself, ``abandon()``, gets the whole batch: see
        ``ClusterEmbedder``); a down endpoint is waited for with backoff instead of failing every file (design §7.2)."""
        abandoning = embedder if isinstance(embedder, AbandoningEmbedder) else None
        if abandoning is not None:
            size = max(1, len(texts))
        elif progress.embed_rate:
            size = max(1, int(progress.embed_rate * CALL_SECONDS))
        else:
            size = FIRST_BATCH
        parts = []
        try:
            for start in range(0, len(texts), size):
                part = texts[start : start + size]
                parts.append(
                    wait_for_endpoint(
                        lambda: call_interruptibly(lambda: embedder.embed_passages(part), stop, self._model_lock),
                        progress,
                        self._max_wait,
                        stop,
                        notify,
                        self.catalog.set_meta,
                    )
                )
        except Stopped:
            if abandoning is not None:
                abandoning.abandon()
            raise
        return np.concatenate(parts) if parts else np.zeros((0, embedder.dimension), np.float32)

    def _fail(self, file: _File, reason: str, progress: Progress) -> None:
        """The model or the store refuses this file: it fails, and stays findable by keyword."""
        self.catalog.states.mark_failed(file.row.path, reason, max_attempts=1)
        progress.failed += 1

    def _repair(self, path: str, reason: str) -> None:
        """Back to the keyword phase to store its text again, a bounded number of times (then failed)."""
        self.catalog.states.requeue_for_repair(path, f"{reason} after {MAX_REPAIRS} readings", max_attempts=MAX_REPAIRS)


def _enough(rows: list[FileRow], budget: int) -> list[FileRow]:
    """The first rows of the queue whose chunks fill the batch (at least one row): no need to read more."""
    total = 0
    for count, row in enumerate(rows, start=1):
        total += row.chunks
        if total >= budget:
            return rows[:count]
    return rows
