"""What the engine says about itself: status, the queue and the two progress figures, as typed
results (declared in ``answers.py``: a command a server answers reads them without loading these).
Every interface renders them (the CLI's tables, the API's and ``--json``'s one JSON shape, the web
app's status bar) and none reads the catalog or the store for them."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from .answers import Phases, Queue, QueuedFile, Status
from .config import Settings
from .ingest.pace import PACE_META, recorded_pace
from .ingest.pause import WAIT_META, recorded_wait
from .ingest.semantic import RATE_META
from .models.devices import DEVICE_META, describe_devices, recorded_placement
from .models.manager import Models
from .notices import Notices, meaning_sentence
from .store.catalog import Catalog, FileRow
from .store.chunks import ChunkStore

RATE_FRESH_SECONDS = 120.0  # an embedding rate older than this belongs to an indexer that is not running


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
    eta = round(left / rate, 1) if rate > 0 and left else None
    meaning = meaning_sentence(files, semantic, eta)
    waiting = recorded_wait(catalog.meta(WAIT_META)) if semantic < files else ""
    if waiting:  # the embedding endpoint is down: why, as the indexing process said it
        meaning = f"{meaning}; waiting for the embedding model: {waiting}"
    return Phases(files, keyword, semantic, left, round(rate, 3), eta, meaning)


def queue(catalog: Catalog, ignored: list[str], limit: int | None = None) -> Queue:
    """The queue, the first ``limit`` files of each list (every failed file)."""
    counts = catalog.files.counts()
    return Queue(
        _queued(catalog.files.failed()),
        _queued(catalog.files.pending(limit)),
        counts["pending"],
        _queued(catalog.files.keyword_ready(limit)),
        counts["keyword"],
        _queued(catalog.files.noted(limit)),
        ignored,
    )


def _queued(rows: list[FileRow]) -> list[QueuedFile]:
    return [QueuedFile(row.path, row.kind, row.status, row.attempts, row.error, row.notes) for row in rows]


def devices(catalog: Catalog, settings: Settings, models: Models) -> list[dict[str, Any]]:
    """Each model's device and why: as loaded here, else as the last indexing run (any process) found it."""
    recorded = recorded_placement(catalog.meta(DEVICE_META))
    return describe_devices(settings, [*filter(None, [recorded]), *models.placements()])


def status(
    data_dir: Path,
    roots: list[str],
    catalog: Catalog,
    store: ChunkStore,
    index_bytes: int,
    settings: Settings,
    models: Models,
    notices: Notices,
    unconfirmed_change: str | None = None,
) -> Status:
    return Status(
        data_dir=str(data_dir),
        roots=roots,
        offline_roots=catalog.roots.offline(),
        counts=catalog.files.counts(),
        phases=phases(catalog),
        chunks=store.table.count(),
        embedding_model=catalog.meta("embedding_identity") or models.expected_identity(),
        sense_model=settings["sense.model"] or "excerpt fallback (no sense endpoint configured)",
        reranker=models.reranker_status(),
        devices=devices(catalog, settings, models),
        pace=recorded_pace(catalog.meta(PACE_META), RATE_FRESH_SECONDS),
        index_bytes=index_bytes,
        notices=notices.all(),
        unconfirmed_change=unconfirmed_change,
    )
