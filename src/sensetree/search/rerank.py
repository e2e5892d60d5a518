"""The cross-encoder stage (design §2.5): best-effort, never fatal."""

from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

from .types import Candidate, sigmoid

PASSAGE_CHARS = 800


class Scorer(Protocol):
    def logits(self, query: str, passages: Sequence[str]) -> np.ndarray: ...


def rerank_window(limit: int) -> int:
    """How many fused candidates the cross-encoder sees: clamp(3 x limit, 20, 100)."""
    return max(20, min(100, 3 * limit))


def rerank(query: str, candidates: list[Candidate], scorer: Scorer, limit: int) -> list[Candidate]:
    """Order the top of the fused list by logit; display sigmoid(logit).

    Candidates below the window are dropped, as in the reference product: their fused
    rank put them out of reach of the limit anyway.
    """
    window = candidates[: rerank_window(limit)]
    if not window:
        return []
    logits = scorer.logits(query, [c.text[:PASSAGE_CHARS] for c in window])
    for candidate, logit in zip(window, logits):
        candidate.logit = float(logit)
        candidate.score = sigmoid(candidate.logit)
    return sorted(window, key=lambda c: (-c.logit, -c.fused, c.path, c.chunk_index))
