"""Reciprocal Rank Fusion (SPEC §3.5): a chunk found by both legs rises above one found by one."""

from __future__ import annotations

from .types import Candidate

RRF_K = 60


def fuse(dense: list[Candidate], sparse: list[Candidate], k: int = RRF_K) -> list[Candidate]:
    """Merge two ranked lists on (path, chunk_index); score = sum of 1 / (k + rank), rank from 1.

    Ties are broken by the best single-leg rank, then by path and chunk index, so the same
    inputs always give the same order.
    """
    merged: dict[tuple[str, int], Candidate] = {}
    for leg in (dense, sparse):
        for candidate in leg:
            key = candidate.key
            found = merged.get(key)
            if found is None:
                merged[key] = found = Candidate(candidate.path, candidate.chunk_index, candidate.text, candidate.lang)
            found.absorb(candidate)
    for candidate in merged.values():
        candidate.rrf = sum(1.0 / (k + rank) for rank in (candidate.dense_rank, candidate.bm25_rank) if rank)
    return sorted(merged.values(), key=lambda c: (-c.rrf, c.best_rank, c.path, c.chunk_index))
