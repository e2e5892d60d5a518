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
    scored: list[tuple[float, Candidate]] = []
    for candidate, logit in zip(window, logits, strict=True):  # one each: a scorer that gives fewer fails here
        candidate.logit = float(logit)
        candidate.score = sigmoid(candidate.logit)
        scored.append((candidate.logit, candidate))
    scored.sort(key=lambda s: (-s[0], -s[1].fused, s[1].path, s[1].chunk_index))
    return [candidate for _, candidate in scored]
