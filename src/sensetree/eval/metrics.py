"""Ranking metrics computed as trec_eval does (``ndcg_cut``, ``recall``, ``recip_rank`` at a cut-off).

Gains are the graded relevance values themselves (trec_eval's linear gain), discounted by
log2(rank + 1); the ideal ranking is built from every judged relevant document in the qrels.
Documents judged 0 (or below) are not relevant.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence


def ndcg_at(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    dcg = sum(
        qrels.get(doc, 0) / math.log2(rank + 1)
        for rank, doc in enumerate(ranking[:k], start=1)
        if qrels.get(doc, 0) > 0
    )
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranking: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    relevant = {doc for doc, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def mrr_at(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    for rank, doc in enumerate(ranking[:k], start=1):
        if qrels.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default method), ``q`` in [0, 100]."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
