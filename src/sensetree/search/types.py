"""The records that flow through the search stages."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Candidate:
    """One chunk on its way through the pipeline, with what each stage learnt about it."""

    path: str
    chunk_index: int
    text: str
    lang: str | None = None          # the chunk's language, detected at indexing time
    dense_rank: int | None = None
    cosine: float | None = None      # 1 - cosine distance, clamped to [0, 1]
    bm25_rank: int | None = None
    bm25: float | None = None
    rrf: float = 0.0                 # the fused score: RRF, or the weighted mix (retrieval.fusion)
    logit: float | None = None       # cross-encoder output
    score: float = 0.0               # what the user sees, in [0, 1] (SPEC §3 table)

    @property
    def key(self) -> tuple[str, int]:
        return (self.path, self.chunk_index)

    @property
    def best_rank(self) -> int:
        return min(r for r in (self.dense_rank, self.bm25_rank, 10**9) if r is not None)

    @property
    def legs(self) -> list[str]:
        return [name for name, rank in (("dense", self.dense_rank), ("bm25", self.bm25_rank)) if rank]

    def absorb(self, other: Candidate) -> None:
        """Take over what another leg found for the same chunk."""
        for name in ("dense_rank", "cosine", "bm25_rank", "bm25"):
            value = getattr(other, name)
            if value is not None:
                setattr(self, name, value)


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


@dataclass
class SearchResult:
    path: str
    name: str
    score: float
    snippet: str
    chunk_index: int
    legs: list[str]
    dense_rank: int | None
    bm25_rank: int | None
    rrf: float
    rerank: float | None  # sigmoid of the cross-encoder logit, when it ran

    def as_dict(self) -> dict:
        return {"path": self.path, "name": self.name, "score": round(self.score, 6), "snippet": self.snippet,
                "chunk_index": self.chunk_index, "legs": self.legs, "dense_rank": self.dense_rank,
                "bm25_rank": self.bm25_rank, "rrf": round(self.rrf, 6),
                "rerank": None if self.rerank is None else round(self.rerank, 6)}


@dataclass
class SearchResponse:
    query: str
    results: list[SearchResult] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # degraded legs, skipped stages: said, never hidden
    timings_ms: dict[str, float] = field(default_factory=dict)
    coverage: tuple[int, int] | None = None  # (files, of them embedded) in scope, while indexing is not done
    fusion: dict | None = None  # how the legs were fused (method, leg weights and why), when both ran

    def as_dict(self) -> dict:
        """The one JSON shape of a search, for the CLI, the HTTP API and the MCP server."""
        coverage = None if self.coverage is None else {"files": self.coverage[0], "embedded": self.coverage[1]}
        return {"query": self.query, "results": [r.as_dict() for r in self.results], "notices": self.notices,
                "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()}, "coverage": coverage,
                "fusion": self.fusion}


@dataclass
class TreeNode:
    name: str
    path: str
    is_dir: bool
    score: float = 0.0
    children: list[TreeNode] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"name": self.name, "path": self.path, "is_dir": self.is_dir, "score": round(self.score, 6),
                "children": [c.as_dict() for c in self.children]}
