"""What the interfaces show about an engine, shaped once for the CLI, the HTTP API and the web app:
status, the queue, the settings with their help, the models per role, an endpoint probe."""

from __future__ import annotations

import json
import time
from typing import Any

from ..config import DEFAULTS
from ..engine import Engine
from ..errors import SenseTreeError
from ..ingest.pace import PACE_META, recorded_pace
from ..ingest.semantic import RATE_META
from ..models.devices import DEVICE_META, describe_devices, recorded_placement
from ..models.embeddings import BUNDLED, canonical_model
from ..models.probe import ProbeReport, probe_endpoint
from ..models.registry import list_rerankers
from ..store.catalog import FileRow

RATE_FRESH_SECONDS = 120.0  # an embedding rate older than this belongs to an indexer that is not running


def status_view(engine: Engine) -> dict[str, Any]:
    """Roots, counts per status, the two progress figures, models in use, index size, notices."""
    def read() -> dict[str, Any]:
        catalog = engine.catalog
        return {
            "data_dir": str(engine.data_dir),
            "roots": engine.roots(),
            "offline_roots": catalog.offline_roots(),  # root -> since (epoch s): kept, out of results until back
            "counts": catalog.counts(),
            "phases": phases_view(engine),
            "chunks": engine.store.count(),
            "embedding_model": catalog.meta("embedding_identity") or engine.models.expected_identity(),
            "sense_model": engine.settings["sense.model"] or "excerpt fallback (no sense endpoint configured)",
            "reranker": engine.models.reranker_status(),
            "devices": devices_view(engine),
            "pace": recorded_pace(catalog.meta(PACE_META), RATE_FRESH_SECONDS),  # paused or slowed on battery
            "index_bytes": engine.storage.size_bytes(),
            "notices": engine.notices.all(),
        }
    return engine.storage.recovering(read)


def devices_view(engine: Engine) -> list[dict[str, Any]]:
    """Each model's device and why: as loaded here, else as the last indexing run (any process) found it."""
    recorded = recorded_placement(engine.catalog.meta(DEVICE_META))
    return describe_devices(engine.settings, [*filter(None, [recorded]), *engine.models.placements()])


def phases_view(engine: Engine) -> dict[str, Any]:
    """keyword-ready N / M and semantic N / M, with an ETA while an indexer is embedding (in any process)."""
    catalog = engine.catalog
    files, keyword, semantic = catalog.phase_counts()
    left = catalog.chunks_to_embed()
    rate = 0.0
    try:
        measured = json.loads(catalog.meta(RATE_META) or "{}")
        if time.time() - measured.get("at", 0) < RATE_FRESH_SECONDS:
            rate = float(measured.get("chunks_per_s", 0.0))
    except (ValueError, TypeError):
        pass
    return {"files": files, "keyword_ready": keyword, "semantic": semantic, "chunks_left": left,
            "embed_rate": round(rate, 3), "semantic_eta_s": round(left / rate, 1) if rate > 0 and left else None}


def queue_view(engine: Engine, limit: int | None = None) -> dict[str, Any]:
    """Failed files with their errors, then what waits for each phase (first ``limit`` of each)."""
    def row(r: FileRow) -> dict[str, Any]:
        return {"path": r.path, "kind": r.kind, "status": r.status, "attempts": r.attempts, "error": r.error,
                "notes": r.notes}

    catalog = engine.catalog
    counts = catalog.counts()
    return {"failed": [row(r) for r in catalog.failed()],
            "pending": [row(r) for r in catalog.pending(limit)], "pending_count": counts["pending"],
            "keyword": [row(r) for r in catalog.keyword_ready(limit)], "keyword_count": counts["keyword"],
            "noted": [row(r) for r in catalog.noted(limit)], "ignored": engine.ignored()}


def settings_view(engine: Engine) -> list[dict[str, Any]]:
    """Every setting with its value, default, help and type, and whether changing it re-indexes everything."""
    return [{"key": key, "value": engine.settings[key], "default": default, "help": about,
             "type": type(default).__name__, "secret": key.endswith("api_key"),
             "reindex": key in ("embedding.model", "embedding.base_url")}
            for key, (default, about) in DEFAULTS.items()]


def models_view(engine: Engine) -> dict[str, list[dict[str, Any]]]:
    """Per role: the models that are installed or can be pulled, and which one is in use."""
    from ..models.local_llm import DEFAULT_MODEL, EMBEDDED, model_file, pick_runtime

    s = engine.settings
    models_dir = engine.models.models_dir
    embedding = [{"name": name, "installed": True, "active": not s["embedding.base_url"] and
                  canonical_model(s["embedding.model"]) == name, "note": about} for name, about in BUNDLED.items()]
    if s["embedding.base_url"]:
        embedding.append({"name": s["embedding.model"], "installed": True, "active": True,
                          "note": f"endpoint {s['embedding.base_url']}"})
    rerankers = [{"name": r["name"], "installed": r["installed"], "active": r["name"] == s["retrieval.reranker_model"],
                  "note": r["where"] or f"{r['size']}, {r['licence']}; sensetree models pull {r['name']}"}
                 for r in list_rerankers(models_dir)]
    chat_name = s["chat.model"] or DEFAULT_MODEL
    runtime = pick_runtime(s["chat.runtime"])
    chat = [{"name": name, "installed": runtime is not None and model_file(name, models_dir) is not None,
             "active": not s["chat.base_url"] and chat_name == name,
             "note": f"embedded ({runtime.name})" if runtime else "needs xllamacpp (make install)"}
            for name in EMBEDDED]
    if s["chat.base_url"]:
        chat.append({"name": s["chat.model"] or "default", "installed": True, "active": True,
                     "note": f"endpoint {s['chat.base_url']}"})
    return {"embedding": embedding, "reranker": rerankers, "chat": chat}


def endpoint_probe(engine: Engine, role: str, base_url: str | None = None, model: str | None = None,
                  api_key: str | None = None) -> ProbeReport:
    """Reachable, model present, dimension: for the settings' values or the ones about to be saved."""
    if role not in ("embedding", "sense", "chat"):
        raise SenseTreeError(f"unknown role {role!r}; use embedding, sense or chat")
    s = engine.settings
    return probe_endpoint(role, s[f"{role}.base_url"] if base_url is None else base_url,
                          s[f"{role}.model"] if model is None else model,
                          s[f"{role}.api_key"] if api_key is None else api_key)
