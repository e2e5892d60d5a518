"""Meaning on demand: a query's keyword candidates that wait for the semantic phase get their vectors now.

While the semantic phase fills in (hours on a laptop), the files a query is about may have no vector yet,
and the dense signal cannot judge them. Their chunks are embedded here, best keyword rank first, exactly as
the semantic phase would embed them: the same model, the same text (``sense.embedded_text``, the file's
context before later chunks). The work runs on a thread of its own and the search waits for it at most
``retrieval.on_demand_seconds``, model load and a slow first call included: what is embedded by then serves
the query, and a call still running finishes behind the answer. So the vectors can be kept: they go in
through the writer lock when this process can take it (the semantic phase then finds those chunks done),
and only those whose chunk, read again under the lock, still holds the text that was embedded (a file
re-indexed meanwhile keeps its new text); they are used for this query alone when the lock cannot be taken
(another process indexes, a search node, a read-only data dir). Kept or not, the files move to the front
of the semantic queue.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .. import paths
from ..errors import SenseTreeError
from ..models.embeddings import Embedder
from ..store.catalog import Catalog, SenseRow
from ..store.catalog_rows import Status
from ..store.chunks import ChunkStore
from ..store.table import ChunkRow
from .sense import embedded_text, embedding_context

log = logging.getLogger(__name__)

FIRST_CALL = 2  # chunks in the first model call, which measures the rate the others are sized by
BATCH = 16  # chunks per model call at most: the budget is checked between calls
LATE = "the search answered before they were stored"
Key = tuple[str, int]


@dataclass
class OnDemandReport:
    """What one query's meaning on demand did (``SearchResponse.fusion["on_demand"]``)."""

    wanted: int = 0  # candidates without a vector
    embedded: int = 0  # of them, embedded within the budget
    kept: int = 0  # of those, stored for good
    ms: float = 0.0
    why_not_kept: str = ""

    def as_dict(self) -> dict:
        return {
            "wanted": self.wanted,
            "embedded": self.embedded,
            "kept": self.kept,
            "ms": round(self.ms, 1),
            **({"why_not_kept": self.why_not_kept} if self.why_not_kept else {}),
        }


@dataclass
class _Job:
    """One search's chunks, embedded on a thread of their own: the search reads ``found`` at its deadline."""

    keys: list[Key]
    deadline: float  # perf_counter time past which no model call starts
    found: dict[Key, np.ndarray] = field(default_factory=dict)
    kept: int = 0
    why_not_kept: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)  # ``found`` grows while the search reads it
    done: threading.Event = field(default_factory=threading.Event)


@dataclass
class MeaningOnDemand:
    """Embeds the chunks a search asks for, within ``seconds()``, and keeps the vectors through ``writer``."""

    catalog: Callable[[], Catalog]
    store: Callable[[], ChunkStore]  # the context's, which may have none open (storage.uri unusable)
    embedder: Callable[[], Embedder]
    seconds: Callable[[], float]  # read at each search: a server's settings change under it
    # the writer lock for this call, or None when this process may not write (a search node, read-only)
    writer: Callable[[], AbstractContextManager[None] | None]
    _model_lock: threading.Lock = field(default_factory=threading.Lock)  # one call at a time, a late one included
    _keeping: threading.Lock = field(default_factory=threading.Lock)  # held while a job writes: ``close`` waits
    _closed: bool = False

    def vectors(self, keys: Sequence[Key]) -> tuple[dict[Key, np.ndarray], OnDemandReport]:
        """Vectors for ``keys`` (chunks without one, most wanted first): those embedded within the budget."""
        report = OnDemandReport(wanted=len(keys))
        seconds = self.seconds()
        if not keys or seconds <= 0:
            return {}, report
        started = time.perf_counter()
        job = _Job(list(dict.fromkeys(keys)), started + seconds)
        threading.Thread(target=self._work, args=(job,), name="meaning-on-demand", daemon=True).start()
        finished = job.done.wait(seconds)
        with job.lock:
            found = dict(job.found)
            report.kept, report.why_not_kept = (job.kept, job.why_not_kept) if finished else (0, LATE)
        report.embedded = len(found)
        report.ms = (time.perf_counter() - started) * 1000
        return found, report

    def close(self) -> None:
        """No job writes from now on; one writing now ends first (the storage closes next)."""
        with self._keeping:
            self._closed = True

    def _work(self, job: _Job) -> None:
        """Read, embed, keep: on the job's thread, which outlives the search when the model is slow."""
        try:
            rows, senses, texts = self._read(job.keys)
            if texts:
                embedder = self.embedder()
                self._embed(job, embedder, texts)
                if job.found:
                    kept, why = self._keep(embedder, rows, senses, dict(job.found))
                    with job.lock:
                        job.kept, job.why_not_kept = kept, why
        except Exception as exc:  # the model's trouble is the semantic phase's to report: the search goes on
            log.info("meaning on demand skipped: %s", exc)
        finally:
            job.done.set()

    def _read(self, keys: list[Key]) -> tuple[dict[Key, dict], dict[str, SenseRow], dict[Key, str]]:
        """The stored rows of ``keys`` still without a vector, their files' senses, and the text to embed of each."""
        rows = self._rows(keys)
        senses = self.catalog().senses.many({path for path, _ in rows})
        texts: dict[Key, str] = {}
        for key in (k for k in keys if k in rows):
            sense = senses.get(key[0])
            context = embedding_context(sense.text if sense else "", paths.name_of(key[0]))
            texts[key] = embedded_text(key[1], rows[key]["text"], context, sense.source if sense else "excerpt")
        return rows, senses, texts

    def _rows(self, keys: Sequence[Key]) -> dict[Key, dict]:
        """The stored rows of ``keys`` that have no vector yet."""
        wanted = set(keys)
        stored = self.store().queries.unembedded(list(dict.fromkeys(p for p, _ in keys)), [c for _, c in keys])
        return {(r["path"], r["chunk_index"]): r for r in stored if (r["path"], r["chunk_index"]) in wanted}

    def _embed(self, job: _Job, embedder: Embedder, texts: dict[Key, str]) -> None:
        """In the given order, a first call of ``FIRST_CALL`` chunks, then calls sized by the rate it showed to
        end by the deadline (at most ``BATCH`` chunks each); none starts past it, a call under way ends late."""
        keys = list(texts)
        done, per_chunk = 0, 0.0
        while done < len(keys):
            left = job.deadline - time.perf_counter()
            size = FIRST_CALL if not per_chunk else min(BATCH, int(left / per_chunk))
            if left <= 0 or size < 1 or not self._model_lock.acquire(timeout=left):
                return  # the budget is spent, or another search's late call holds the model past it
            part = keys[done : done + size]
            try:
                began = time.perf_counter()
                vectors = embedder.embed_passages([texts[key] for key in part])
            finally:
                self._model_lock.release()
            per_chunk = max(per_chunk, (time.perf_counter() - began) / len(part))
            with job.lock:
                job.found.update(zip(part, np.asarray(vectors, np.float32)))
            done += len(part)

    def _keep(
        self, embedder: Embedder, rows: dict[Key, dict], senses: dict[str, SenseRow], found: dict[Key, np.ndarray]
    ) -> tuple[int, str]:
        """Store the vectors of ``found`` under the writer lock; (how many were kept, why not when none)."""
        catalog = self.catalog()
        touched = list(dict.fromkeys(path for path, _ in found))
        try:  # the semantic phase takes them next, kept or not
            catalog.states.prioritize(*touched)
        except Exception as exc:  # a busy catalog: the order is a nicety
            log.info("could not move the searched files forward in the queue: %s", exc)
        # a sense still 'pending' is rewritten by the semantic phase, and chunk 0's text with it: such a
        # file's vectors serve this query only
        keep = [key for key in found if senses.get(key[0]) is None or senses[key[0]].source != "pending"]
        if not keep:
            return 0, "their senses are still being written"
        stored = catalog.meta("embedding_identity")
        if stored and stored != embedder.identity:
            return 0, f"the index holds {stored} vectors"
        with self._keeping:
            if self._closed:
                return 0, "the index was closed"
            try:
                holding = self.writer()
                if holding is None:
                    return 0, "this process does not write the index"
                with holding:
                    current = self._unchanged(catalog, keep, rows, senses)
                    if not current:
                        return 0, "their files changed while they were embedded"
                    self.store().writes.set_vectors(
                        [_with_vector(current[key], found[key]) for key in current],
                        embedder.identity,
                        embedder.dimension,
                    )
                    if not stored:
                        catalog.set_meta("embedding_identity", embedder.identity)
                    catalog.states.mark_embedded(self._complete(catalog, touched))
            except SenseTreeError as exc:  # WriterBusy, a read-only or full data dir: used for this query only
                return 0, str(exc).split(";")[0]
            except OSError as exc:
                return 0, exc.strerror or str(exc)
            except Exception as exc:  # a commit LanceDB refused: the vectors served, the semantic phase redoes them
                log.warning("vectors embedded for a search were not kept: %s", exc)
                return 0, "the index refused them"
        return len(current), ""

    def _unchanged(
        self, catalog: Catalog, keys: list[Key], rows: dict[Key, dict], senses: dict[str, SenseRow]
    ) -> dict[Key, dict]:
        """Of ``keys``, the rows read again now (under the writer lock) that still hold the text, content and
        sense their vectors were made from, and no vector: a file edited and indexed again since they were
        read never gets its old text back."""
        now = self._rows(keys)
        senses_now = catalog.senses.many({path for path, _ in now})
        return {
            key: row
            for key, row in now.items()
            if row["text"] == rows[key]["text"]
            and row["content_hash"] == rows[key]["content_hash"]
            and senses_now.get(key[0]) == senses.get(key[0])
        }

    def _complete(self, catalog: Catalog, touched: list[str]) -> list[str]:
        """The files whose every stored chunk now has a vector, stored whole as the catalog says (what the
        semantic phase checks before it marks a file done)."""
        left = {row["path"] for row in self.store().queries.unembedded(touched)}
        stored = self.store().queries.stored_chunks([p for p in touched if p not in left])
        done = []
        for path, (indexes, hashes) in stored.items():
            row = catalog.files.get(path)
            if (
                row is not None
                and row.status == Status.KEYWORD
                and row.chunks > 0
                and indexes == set(range(row.chunks))
                and hashes == {row.content_hash}
            ):
                done.append(path)
        return done


def _with_vector(row: dict, vector: np.ndarray) -> ChunkRow:
    """A stored chunk row (``queries.unembedded``) given its vector."""
    return ChunkRow(
        row["path"],
        row["chunk_index"],
        row["text"],
        vector,
        row["content_hash"],
        row["mtime"],
        row.get("location"),
        row.get("doc_type") or "",
        row.get("size") or 0,
        row.get("lang"),
        row.get("terms"),
    )
