"""What the engine says about itself: status, the queue and the two progress figures, as typed
results. Every interface renders these (the CLI's tables, the API's and ``--json``'s one JSON
shape, the web app's status bar) and none reads the catalog or the store for them."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .config import Settings
from .ingest.pace import PACE_META, recorded_pace
from .ingest.semantic import RATE_META
from .models.devices import DEVICE_META, describe_devices, recorded_placement
from .models.manager import Models
from .notices import Notices
from .store.catalog import Catalog, FileRow
from .store.chunks import ChunkStore

RATE_FRESH_SECONDS = 120.0  # an embedding rate older than this belongs to an indexer that is not running


@dataclass(frozen=True)
class Phases:
    """keyword-ready N / M and semantic N / M, with an ETA while an indexer embeds (in any process)."""

    files: int
    keyword_ready: int
    semantic: int
    chunks_left: int
    embed_rate: float            # chunks a second, while an indexer is embedding
    semantic_eta_s: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class QueuedFile:
    path: str
    kind: str
    status: str
    attempts: int
    error: str | None
    notes: str | None

    @classmethod
    def of(cls, row: FileRow) -> QueuedFile:
        return cls(row.path, row.kind, row.status, row.attempts, row.error, row.notes)


@dataclass(frozen=True)
class Queue:
    """Failed files with their errors, then what waits for each phase, then what carries a note."""

    failed: list[QueuedFile]
    pending: list[QueuedFile]
    pending_count: int
    keyword: list[QueuedFile]
    keyword_count: int
    noted: list[QueuedFile]
    ignored: list[str]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Status:
    """Roots, counts per status, the two progress figures, the models in use, the index size, notices."""

    data_dir: str
    roots: list[str]
    offline_roots: dict[str, float]  # root -> offline since (epoch s): kept, out of results until back
    counts: dict[str, int]
    phases: Phases
    chunks: int
    embedding_model: str
    sense_model: str
    reranker: str
    devices: list[dict[str, Any]]
    pace: dict[str, Any] | None      # paused or slowed on battery
    index_bytes: int
    notices: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def phases(catalog: Catalog) -> Phases:
    files, keyword, semantic = catalog.files.phase_counts()
    left = catalog.files.chunks_to_embed()
    rate = 0.0
    try:
        measured = json.loads(catalog.meta(RATE_META) or "{}")
        if time.time() - measured.get("at", 0) < RATE_FRESH_SECONDS:
            rate = float(measured.get("chunks_per_s", 0.0))
    except (ValueError, TypeError, AttributeError):
        pass
    return Phases(files, keyword, semantic, left, round(rate, 3),
                  round(left / rate, 1) if rate > 0 and left else None)


def queue(catalog: Catalog, ignored: list[str], limit: int | None = None) -> Queue:
    """The queue, the first ``limit`` files of each list (every failed file)."""
    counts = catalog.files.counts()
    return Queue(_queued(catalog.files.failed()), _queued(catalog.files.pending(limit)), counts["pending"],
                 _queued(catalog.files.keyword_ready(limit)), counts["keyword"], _queued(catalog.files.noted(limit)),
                 ignored)


def _queued(rows: list[FileRow]) -> list[QueuedFile]:
    return [QueuedFile.of(row) for row in rows]


def devices(catalog: Catalog, settings: Settings, models: Models) -> list[dict[str, Any]]:
    """Each model's device and why: as loaded here, else as the last indexing run (any process) found it."""
    recorded = recorded_placement(catalog.meta(DEVICE_META))
    return describe_devices(settings, [*filter(None, [recorded]), *models.placements()])


def status(data_dir: Path, roots: list[str], catalog: Catalog, store: ChunkStore, index_bytes: int,
           settings: Settings, models: Models, notices: Notices) -> Status:
    return Status(
        data_dir=str(data_dir), roots=roots, offline_roots=catalog.roots.offline(), counts=catalog.files.counts(),
        phases=phases(catalog), chunks=store.table.count(),
        embedding_model=catalog.meta("embedding_identity") or models.expected_identity(),
        sense_model=settings["sense.model"] or "excerpt fallback (no sense endpoint configured)",
        reranker=models.reranker_status(), devices=devices(catalog, settings, models),
        pace=recorded_pace(catalog.meta(PACE_META), RATE_FRESH_SECONDS), index_bytes=index_bytes,
        notices=notices.all())
