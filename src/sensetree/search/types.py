"""The records that flow through the search stages."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..paths import sql_literal


@dataclass
class Candidate:
    """One chunk on its way through the pipeline, with what each stage learnt about it."""

    path: str
    chunk_index: int
    text: str
    lang: str | None = None          # the chunk's language, detected at indexing time
    content_hash: str | None = None  # of its file: identical files collapse into one result
    location: str | None = None      # JSON list of the places in the file it covers (pages, slides...)
    dense_rank: int | None = None
    cosine: float | None = None      # 1 - cosine distance, clamped to [0, 1]
    bm25_rank: int | None = None
    bm25: float | None = None
    fused: float = 0.0               # the fusion's score: RRF, or the legs' weighted mix (retrieval.fusion)
    logit: float | None = None       # cross-encoder output
    score: float = 0.0               # what the user sees, in [0, 1] (design §2.7's table)
    # where its cosine came from when the dense leg did not rank it: "stored" (it had a vector), "on demand"
    # (embedded for this query); "" when the dense leg ranked it or it has no vector yet
    meaning: str = ""
    carried_by: str = ""             # the fusion's word for the signal that placed it: meaning, keywords, both

    def signals(self) -> dict:
        """Both signals of the chunk and which one carried it (``--explain``, the API's results)."""
        return {"cosine": None if self.cosine is None else round(self.cosine, 4),
                "bm25": None if self.bm25 is None else round(self.bm25, 4),
                "meaning": "leg" if self.dense_rank else (self.meaning or "none"), "carried_by": self.carried_by}

    @property
    def key(self) -> tuple[str, int]:
        return (self.path, self.chunk_index)

    @property
    def best_rank(self) -> int:
        return min(r for r in (self.dense_rank, self.bm25_rank, 10**9) if r is not None)

    @property
    def legs(self) -> list[str]:
        return [name for name, rank in (("dense", self.dense_rank), ("bm25", self.bm25_rank)) if rank]

    def bare(self) -> Candidate:
        """The chunk alone, without what any leg found about it (built directly: ``replace`` costs
        a few ms over the 320 candidates of a search)."""
        return Candidate(self.path, self.chunk_index, self.text, self.lang, self.content_hash, self.location)

    def absorb(self, other: Candidate) -> None:
        """Take over what another leg found for the same chunk."""
        for name in ("dense_rank", "cosine", "bm25_rank", "bm25", "meaning"):
            value = getattr(other, name)
            if value is not None and value != "":
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
    fused: float          # the fusion's score; "rrf" in JSON, the seed's name for it
    rerank: float | None  # sigmoid of the cross-encoder logit, when it ran
    location: dict | None = None  # where in the file the chunk starts: {"page": 12}, {"slide": 3}...
    location_label: str = ""      # for people: "p. 12", "pp. 12–13", "slide 3", "sheet Q3"
    duplicates: list[str] = field(default_factory=list)  # other paths holding the same content
    content_hash: str | None = None
    signals: dict | None = None  # both signals and which carried it, from a fusion that judges by both

    def as_dict(self) -> dict:
        return {"path": self.path, "name": self.name, "score": round(self.score, 6), "snippet": self.snippet,
                "chunk_index": self.chunk_index, "location": self.location, "location_label": self.location_label,
                "duplicates": self.duplicates, "legs": self.legs, "dense_rank": self.dense_rank,
                "bm25_rank": self.bm25_rank, "rrf": round(self.fused, 6),
                "rerank": None if self.rerank is None else round(self.rerank, 6),
                **({"signals": self.signals} if self.signals is not None else {})}

    @classmethod
    def from_dict(cls, d: dict) -> SearchResult:
        """Back from ``as_dict`` (a served answer)."""
        return cls(d["path"], d["name"], d["score"], d["snippet"], d["chunk_index"], d["legs"], d["dense_rank"],
                   d["bm25_rank"], d["rrf"], d["rerank"], d["location"], d["location_label"], d["duplicates"],
                   signals=d.get("signals"))


@dataclass(frozen=True)
class Filters:
    """What the files must be, besides being in scope: of these types, modified in this window (epoch
    seconds, after inclusive, before exclusive). Applied inside LanceDB, before either leg ranks."""

    doc_types: tuple[str, ...] = ()
    modified_after: float | None = None
    modified_before: float | None = None

    def predicate(self) -> str | None:
        parts = []
        if self.doc_types:
            parts.append("doc_type IN (" + ", ".join(sql_literal(t) for t in self.doc_types) + ")")
        if self.modified_after is not None:
            parts.append(f"mtime >= {float(self.modified_after)!r}")
        if self.modified_before is not None:
            parts.append(f"mtime < {float(self.modified_before)!r}")
        return " AND ".join(parts) or None


@dataclass
class SearchResponse:
    query: str
    results: list[SearchResult] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # degraded legs, skipped stages: said, never hidden
    timings_ms: dict[str, float] = field(default_factory=dict)
    coverage: tuple[int, int] | None = None  # (files, of them embedded) in scope, while indexing is not done
    fusion: dict | None = None  # how the legs were fused (method, leg weights and why), when both ran
    terms: list[str] = field(default_factory=list)  # the query's words to mark where results show text
    understood: dict | None = None  # the filters read from the query's words (search/intent.py), and the rest
    spelled: dict[str, str] = field(default_factory=dict)  # query word no file has -> the word searched instead
    meaning: str = ""  # the coverage in words, while indexing: "meaning for 1,310 of 5,183 files; the rest by about 14:20"

    def as_dict(self) -> dict:
        """The one JSON shape of a search, for the CLI, the HTTP API and the MCP server."""
        coverage = None if self.coverage is None else {"files": self.coverage[0], "embedded": self.coverage[1],
                                                       "meaning": self.meaning}
        return {"query": self.query, "results": [r.as_dict() for r in self.results], "notices": self.notices,
                "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()}, "coverage": coverage,
                "fusion": self.fusion, "terms": self.terms, "understood": self.understood,
                "spelled": self.spelled}

    @classmethod
    def from_dict(cls, d: dict) -> SearchResponse:
        """Back from ``as_dict`` (a served answer)."""
        coverage = d["coverage"] and (d["coverage"]["files"], d["coverage"]["embedded"])
        return cls(d["query"], [SearchResult.from_dict(r) for r in d["results"]], d["notices"], d["timings_ms"],
                   coverage or None, d["fusion"], d.get("terms", []), d.get("understood"), d.get("spelled") or {},
                   (d["coverage"] or {}).get("meaning", ""))


@dataclass(frozen=True)
class Version:
    """A near-identical file: most of its wording is the same (``search/versions.py``)."""

    path: str
    name: str
    mtime: float | None  # when it was last modified: versions are told apart by their dates
    shared: float        # the share of wording both files have, in [0, 1]

    def as_dict(self) -> dict:
        return {"path": self.path, "name": self.name, "mtime": self.mtime, "shared": round(self.shared, 4)}


@dataclass
class SimilarResponse(SearchResponse):
    """Files like one file (``query`` is its path): the results, and apart from them its identical
    copies and its near-identical versions."""

    copies: list[str] = field(default_factory=list)
    versions: list[Version] = field(default_factory=list)  # newest first

    def as_dict(self) -> dict:
        return {**super().as_dict(), "copies": self.copies, "versions": [v.as_dict() for v in self.versions]}

    @classmethod
    def from_dict(cls, d: dict) -> SimilarResponse:
        found = SearchResponse.from_dict(d)
        return cls(found.query, found.results, found.notices, found.timings_ms, found.coverage, found.fusion,
                   found.terms, found.understood, found.spelled, found.meaning, d["copies"], [Version(v["path"], v["name"], v["mtime"], v["shared"])
                                                                for v in d["versions"]])


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

    @classmethod
    def from_dict(cls, d: dict) -> TreeNode:
        return cls(d["name"], d["path"], d["is_dir"], d["score"], [TreeNode.from_dict(c) for c in d["children"]])


@dataclass
class TreeResponse:
    """The meaning tree of a query: relevance heat over the folders (None when nothing is indexed
    there), with what degraded it said."""

    query: str
    tree: TreeNode | None = None
    notices: list[str] = field(default_factory=list)
    understood: dict | None = None  # the filters read from the query's words, as for a search

    def as_dict(self) -> dict:
        return {"query": self.query, "tree": self.tree.as_dict() if self.tree else None, "notices": self.notices,
                "understood": self.understood}

    @classmethod
    def from_dict(cls, d: dict) -> TreeResponse:
        return cls(d.get("query", ""), TreeNode.from_dict(d["tree"]) if d["tree"] else None, d["notices"],
                   d.get("understood"))
