"""The two retrieval legs, both filtered by scope inside LanceDB (design §2.2-§2.3)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..store.chunks import ChunkStore
from .types import Candidate


def pool_size(limit: int) -> int:
    """Candidates per leg: clamp(6 x limit, 30, 160)."""
    return max(30, min(160, 6 * limit))


def dense_leg(store: ChunkStore, query_vector: np.ndarray, k: int, where: str | None) -> list[Candidate]:
    """Nearest chunks by cosine; score = 1 - distance, clamped to [0, 1], never remapped."""
    hits = _ranked(store.queries.dense(query_vector, k, where), lambda h: float(h["_distance"]))
    return [
        _candidate(h, dense_rank=rank, cosine=min(1.0, max(0.0, 1.0 - float(h["_distance"]))))
        for rank, h in enumerate(hits, start=1)
    ]


def sparse_leg(
    store: ChunkStore,
    query: str,
    k: int,
    where: str | None,
    build_index: Callable[[], None],
    with_vectors: bool = False,
) -> list[Candidate]:
    """BM25 over the stored text (each hit with its stored vector, for a fusion that judges it by meaning too).
    A missing or broken index is built and the query retried once (design §2.2)."""
    try:
        hits = store.queries.sparse(query, k, where, with_vectors)
    except (ValueError, RuntimeError):
        build_index()
        hits = store.queries.sparse(query, k, where, with_vectors)
    return [
        _candidate(h, bm25_rank=rank, bm25=float(h["_score"]), vector=h.get("vector"))
        for rank, h in enumerate(_ranked(hits, lambda h: -float(h["_score"])), start=1)
    ]


def _ranked(hits: list[dict], worse: Callable[[dict], float]) -> list[dict]:
    """A leg's hits best first (``worse``: lower is better), a tie broken by path and chunk: the table's own
    order of equal scores differs between an index built in steps and a clean one, and the leg's ranks
    break the fusion's ties (``fusion._order``)."""
    return sorted(hits, key=lambda h: (worse(h), h["path"], int(h["chunk_index"])))


def _candidate(hit: dict, **found: Any) -> Candidate:
    """A leg's hit as a candidate: the chunk as stored, and ``found``, what this leg says of it."""
    return Candidate(
        hit["path"],
        int(hit["chunk_index"]),
        hit["text"],
        lang=hit.get("lang"),
        content_hash=hit.get("content_hash"),
        location=hit.get("location"),
        **found,
    )
