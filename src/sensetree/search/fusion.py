"""Fusing the dense and keyword legs (SPEC §3.5).

Two fusions, chosen by ``retrieval.fusion``:

- ``rrf``, the seed's: Reciprocal Rank Fusion on (path, chunk_index), every leg weighing the same.
- ``weighted`` (the default): RRF on files, each leg weighted by how much it can be trusted for
  this query. A file is ranked in a leg by its best chunk, so a file that one leg finds by its
  first chunk and the other by its third still gathers both. A dense model that does not read
  the query's language gets no say (an English model on a Thai query ranks noise).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..store.terms import query_languages
from .types import Candidate

RRF_K = 60
FUSIONS = ("weighted", "rrf")


@dataclass(frozen=True)
class LegWeights:
    """What each leg counts for in one query's fusion, and why (shown by ``--explain``)."""

    dense: float
    bm25: float
    reason: str = ""

    def as_dict(self) -> dict:
        return {"dense": round(self.dense, 4), "bm25": round(self.bm25, 4), "reason": self.reason}


EQUAL = LegWeights(1.0, 1.0, "equal weights")


def dense_languages(model: str) -> frozenset[str] | None:
    """The languages a dense model reads (ISO 639-1), None for every language.

    MiniLM models are English-only unless named multilingual (paraphrase-multilingual-MiniLM is not);
    the bundled E5 and unknown endpoint models are taken as multilingual.
    """
    name = model.lower()
    return frozenset({"en"}) if "minilm" in name and "multilingual" not in name else None


def leg_weights(query: str, model: str, dense: list[Candidate], sparse: list[Candidate]) -> LegWeights:
    """How much each leg counts for this query."""
    readable = dense_languages(model)
    if readable is not None and dense:
        languages = query_languages(query)
        if not readable.intersection(languages):
            return LegWeights(0.0, 1.0, f"the dense model reads {', '.join(sorted(readable))}; "
                                        f"the query looks {'/'.join(languages)}")
    return EQUAL


def fuse(dense: list[Candidate], sparse: list[Candidate], k: int = RRF_K) -> list[Candidate]:
    """Merge two ranked lists on (path, chunk_index); score = sum of 1 / (k + rank), rank from 1.

    Ties are broken by the best single-leg rank, then by path and chunk index, so the same
    inputs always give the same order.
    """
    merged = _merge(dense, sparse)
    for candidate in merged.values():
        candidate.rrf = sum(1.0 / (k + rank) for rank in (candidate.dense_rank, candidate.bm25_rank) if rank)
    return _ordered(merged.values())


def fuse_files(dense: list[Candidate], sparse: list[Candidate], weights: LegWeights, k: int = RRF_K) -> list[Candidate]:
    """Weighted RRF on files: score = w_dense / (k + file's dense rank) + w_bm25 / (k + file's BM25 rank).

    A file's rank in a leg is that of its best chunk there; the file is represented by the chunk
    that brought it the larger share (its snippet, and what a reranker reads). Candidates keep
    their chunk-level ranks for the explanation.
    """
    dense_files = _file_ranks(dense, "dense_rank")
    sparse_files = _file_ranks(sparse, "bm25_rank")
    merged = _merge(dense, sparse)
    best: dict[str, Candidate] = {}
    for path in dense_files.keys() | sparse_files.keys():
        d_rank, d_key = dense_files.get(path, (None, None))
        s_rank, s_key = sparse_files.get(path, (None, None))
        d_share = weights.dense / (k + d_rank) if d_rank else 0.0
        s_share = weights.bm25 / (k + s_rank) if s_rank else 0.0
        candidate = merged[d_key if d_share >= s_share and d_key else s_key]
        candidate.rrf = d_share + s_share
        best[path] = candidate
    return _ordered(best.values())


def _file_ranks(leg: list[Candidate], rank: str) -> dict[str, tuple[int, tuple[str, int]]]:
    """path -> (rank among files by best chunk, from 1; the key of that chunk)."""
    files: dict[str, tuple[int, tuple[str, int]]] = {}
    for candidate in sorted(leg, key=lambda c: getattr(c, rank)):
        if candidate.path not in files:
            files[candidate.path] = (len(files) + 1, candidate.key)
    return files


def _merge(dense: list[Candidate], sparse: list[Candidate]) -> dict[tuple[str, int], Candidate]:
    merged: dict[tuple[str, int], Candidate] = {}
    for leg in (dense, sparse):
        for candidate in leg:
            found = merged.get(candidate.key)
            if found is None:
                merged[candidate.key] = found = Candidate(candidate.path, candidate.chunk_index, candidate.text,
                                                          candidate.lang)
            found.absorb(candidate)
    return merged


def _ordered(candidates: Iterable[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: (-c.rrf, c.best_rank, c.path, c.chunk_index))
