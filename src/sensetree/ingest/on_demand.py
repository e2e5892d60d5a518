"""Meaning on demand: a query's keyword candidates that wait for the semantic phase get their vectors now.

While the semantic phase fills in (hours on a laptop), the files a query is about may have no vector yet,
and the dense signal cannot judge them. Their chunks are embedded here, best keyword rank first, inside a
time budget (``retrieval.on_demand_seconds``), exactly as the semantic phase would embed them: the same
model, the same text (``sense.embedded_text``, the file's context before later chunks). So the vectors can
be kept: they go in through the writer lock when this process can take it (the semantic phase then finds
those chunks done), and are used for this query alone when it cannot (another process indexes, a search
node, a read-only data dir). Kept or not, the files move to the front of the semantic queue.
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
from ..store.catalog import Catalog
from ..store.catalog_rows import Status
from ..store.chunks import ChunkStore
from ..store.table import ChunkRow
from .sense import embedded_text, embedding_context

log = logging.getLogger(__name__)

FIRST_CALL = 4  # chunks in the first model call, which measures the rate the others are sized by
BATCH = 16  # chunks per model call at most: the budget is checked between calls
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
class MeaningOnDemand:
    """Embeds the chunks a search asks for, within ``seconds``, and keeps the vectors through ``writer``."""

    catalog: Callable[[], Catalog]
    store: ChunkStore
    embedder: Callable[[], Embedder]
    seconds: float
    # the writer lock for this call, or None when this process may not write (a search node, read-only)
    writer: Callable[[], AbstractContextManager[None] | None]
    _model_lock: threading.Lock = field(default_factory=threading.Lock)

    def vectors(self, keys: Sequence[Key]) -> tuple[dict[Key, np.ndarray], OnDemandReport]:
        """Vectors for ``keys`` (chunks without one, most wanted first), as many as the budget allows."""
        report = OnDemandReport(wanted=len(keys))
        if not keys or self.seconds <= 0:
            return {}, report
        started = time.perf_counter()
        wanted = dict.fromkeys(keys)
        stored = self.store.queries.unembedded(list(dict.fromkeys(p for p, _ in keys)), [c for _, c in keys])
        rows = {(r["path"], r["chunk_index"]): r for r in stored if (r["path"], r["chunk_index"]) in wanted}
        if not rows:
            return {}, report
        catalog = self.catalog()
        senses = catalog.senses.many({path for path, _ in rows})
        texts: dict[Key, str] = {}
        for key in (k for k in keys if k in rows):
            sense = senses.get(key[0])
            context = embedding_context(sense.text if sense else "", paths.name_of(key[0]))
            texts[key] = embedded_text(key[1], rows[key]["text"], context, sense.source if sense else "excerpt")
        try:
            embedder = self.embedder()
            found = self._embed_within_budget(embedder, texts, started)
        except Exception as exc:  # the model's trouble is the semantic phase's to report: the search goes on
            log.info("meaning on demand skipped: %s", exc)
            report.ms = (time.perf_counter() - started) * 1000
            return {}, report
        report.embedded = len(found)
        # a sense still 'pending' is rewritten by the semantic phase, and chunk 0's text with it: such a
        # file's vectors serve this query only
        keep = [key for key in found if senses.get(key[0]) is None or senses[key[0]].source != "pending"]
        report.kept, report.why_not_kept = self._keep(catalog, embedder, rows, found, keep)
        report.ms = (time.perf_counter() - started) * 1000
        return found, report

    def _embed_within_budget(self, embedder: Embedder, texts: dict[Key, str], started: float) -> dict[Key, np.ndarray]:
        """In the given order, a first call of ``FIRST_CALL`` chunks, then calls sized by the rate it showed
        to end within the budget (at most ``BATCH`` chunks each)."""
        found: dict[Key, np.ndarray] = {}
        keys = list(texts)
        per_chunk = 0.0
        while len(found) < len(keys):
            left = self.seconds - (time.perf_counter() - started)
            size = FIRST_CALL if not per_chunk else min(BATCH, int(left / per_chunk))
            if left <= 0 or size < 1:
                break
            part = keys[len(found) : len(found) + size]
            began = time.perf_counter()
            with self._model_lock:
                vectors = embedder.embed_passages([texts[key] for key in part])
            per_chunk = max(per_chunk, (time.perf_counter() - began) / len(part))
            found.update(zip(part, np.asarray(vectors, np.float32)))
        return found

    def _keep(
        self, catalog: Catalog, embedder: Embedder, rows: dict[Key, dict], found: dict[Key, np.ndarray], keep: list[Key]
    ) -> tuple[int, str]:
        """Store the vectors in ``keep`` under the writer lock; (how many were kept, why not when none)."""
        touched = list(dict.fromkeys(path for path, _ in found))
        try:  # the semantic phase takes them next, kept or not
            catalog.states.prioritize(*touched)
        except Exception as exc:  # a busy catalog: the order is a nicety
            log.info("could not move the searched files forward in the queue: %s", exc)
        if not keep:
            return 0, "their senses are still being written"
        stored = catalog.meta("embedding_identity")
        if stored and stored != embedder.identity:
            return 0, f"the index holds {stored} vectors"
        try:
            holding = self.writer()
            if holding is None:
                return 0, "this process does not write the index"
            with holding:
                self.store.writes.set_vectors(
                    [
                        ChunkRow(
                            path,
                            chunk,
                            r["text"],
                            found[(path, chunk)],
                            r["content_hash"],
                            r["mtime"],
                            r.get("location"),
                            r.get("doc_type") or "",
                            r.get("size") or 0,
                            r.get("lang"),
                            r.get("terms"),
                        )
                        for (path, chunk) in keep
                        for r in (rows[(path, chunk)],)
                    ],
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
        except (
            Exception
        ) as exc:  # a commit LanceDB refused: the vectors served the query, the semantic phase redoes them
            log.warning("vectors embedded for a search were not kept: %s", exc)
            return 0, "the index refused them"
        return len(keep), ""

    def _complete(self, catalog: Catalog, touched: list[str]) -> list[str]:
        """The files whose every stored chunk now has a vector, stored whole as the catalog says (what the
        semantic phase checks before it marks a file done)."""
        left = {row["path"] for row in self.store.queries.unembedded(touched)}
        stored = self.store.queries.stored_chunks([p for p in touched if p not in left])
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
