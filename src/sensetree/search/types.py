"""The records that flow through the search stages."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated

import numpy as np

from ..answers import Fields, Rounded
from ..paths import sql_literal


@dataclass
class Candidate:
    """One chunk on its way through the pipeline, with what each stage learnt about it."""

    path: str
    chunk_index: int
    text: str
    lang: str | None = None  # the chunk's language, detected at indexing time
    content_hash: str | None = None  # of its file: identical files collapse into one result
    location: str | None = None  # JSON list of the places in the file it covers (pages, slides...)
    dense_rank: int | None = None
    cosine: float | None = None  # 1 - cosine distance, clamped to [0, 1]
    bm25_rank: int | None = None
    bm25: float | None = None
    fused: float = 0.0  # the fusion's score: RRF, or the legs' weighted mix (retrieval.fusion)
    logit: float | None = None  # cross-encoder output
    score: float = 0.0  # what the user sees, in [0, 1] (design §2.7's table)
    # where its cosine came from when the dense leg did not rank it: "stored" (it had a vector), "on demand"
    # (embedded for this query); "" when the dense leg ranked it or it has no vector yet
    meaning: str = ""
    carried_by: str = ""  # the fusion's word for the signal that placed it: meaning, keywords, both
    vector: np.ndarray | None = field(default=None, repr=False)  # a keyword hit's stored vector, read with it

    def signals(self) -> dict:
        """Both signals of the chunk and which one carried it (``--explain``, the API's results)."""
        return {
            "cosine": None if self.cosine is None else round(self.cosine, 4),
            "bm25": None if self.bm25 is None else round(self.bm25, 4),
            "meaning": "leg" if self.dense_rank else (self.meaning or "none"),
            "carried_by": self.carried_by,
        }

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


# The results below are the JSON of search, similar and tree, and their schema (``answers.Fields``):
# a field is written under its name (or its ``alias``), ``Rounded`` floats rounded, ``exclude``d fields left out.
_NOT_IF_NONE = {"exclude_if": lambda value: value is None}


@dataclass
class SearchResult(Fields):
    path: str
    name: str
    score: Annotated[float, Rounded(6)]
    snippet: str
    chunk_index: int
    legs: list[str]
    dense_rank: int | None
    bm25_rank: int | None
    fused: Annotated[float, Rounded(6)] = field(metadata={"alias": "rrf"})  # the fusion's score; "rrf", the seed's name
    rerank: Annotated[float, Rounded(6)] | None  # sigmoid of the cross-encoder logit, when it ran
    location: dict | None = None  # where in the file the chunk starts: {"page": 12}, {"slide": 3}...
    location_label: str = ""  # for people: "p. 12", "pp. 12–13", "slide 3", "sheet Q3"
    duplicates: list[str] = field(default_factory=list)  # other paths holding the same content
    content_hash: str | None = field(default=None, metadata={"exclude": True})  # not in JSON
    # both signals and which carried it, from a fusion that judges by both (not in JSON without one)
    signals: dict | None = field(default=None, metadata=_NOT_IF_NONE)


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
class Coverage(Fields):
    """While indexing is not done: the files in scope, how many of them have vectors, and that in words."""

    files: int
    embedded: int
    meaning: str = ""  # "meaning for 1,310 of 5,183 files; the rest by about 14:20"


@dataclass
class SearchResponse(Fields):
    """The one JSON shape of a search, for the CLI, the HTTP API and the MCP server."""

    query: str
    results: list[SearchResult] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # degraded legs, skipped stages: said, never hidden
    timings_ms: dict[str, Annotated[float, Rounded(3)]] = field(default_factory=dict)
    coverage: Coverage | None = None  # while indexing is not done
    fusion: dict | None = None  # how the legs were fused (method, leg weights and why), when both ran
    terms: list[str] = field(default_factory=list)  # the query's words to mark where results show text
    understood: dict | None = None  # the filters read from the query's words (search/intent.py), and the rest
    spelled: dict[str, str] = field(default_factory=dict)  # query word no file has -> the word searched instead


@dataclass(frozen=True)
class Version(Fields):
    """A near-identical file: most of its wording is the same (``search/versions.py``)."""

    path: str
    name: str
    mtime: float | None  # when it was last modified: versions are told apart by their dates
    shared: Annotated[float, Rounded(4)]  # the share of wording both files have, in [0, 1]


@dataclass
class SimilarResponse(SearchResponse):
    """Files like one file (``query`` is its path): the results, and apart from them its identical
    copies and its near-identical versions."""

    copies: list[str] = field(default_factory=list)
    versions: list[Version] = field(default_factory=list)  # newest first


@dataclass
class TreeNode(Fields):
    name: str
    path: str
    is_dir: bool
    score: Annotated[float, Rounded(6)] = 0.0
    children: list[TreeNode] = field(default_factory=list)


@dataclass
class TreeResponse(Fields):
    """The meaning tree of a query: relevance heat over the folders (None when nothing is indexed
    there), with what degraded it said."""

    query: str
    tree: TreeNode | None = None
    notices: list[str] = field(default_factory=list)
    understood: dict | None = None  # the filters read from the query's words, as for a search
