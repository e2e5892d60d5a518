"""``search()``: query -> legs -> fusion -> rerank -> one chunk per file -> on disk -> limit (design §2)."""

from __future__ import annotations

import logging
import os
import re
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import paths
from ..paths import sql_literal
from ..errors import ModelError
from ..store.chunks import ChunkStore
from ..store.stored_text import body
from ..store.terms import marked_terms, phrases
from .fusion import FUSIONS, JUDGES_BOTH, leg_weights
from .legs import dense_leg, pool_size, sparse_leg
from .rerank import Scorer, rerank
from .tree import build_tree, tree_limit
from .snippets import place, snippet
from .spelling import corrections, in_another_language, in_names, notice, respelled
from .types import Candidate, Filters, SearchResponse, SearchResult, SimilarResponse, TreeNode, Version
from .versions import VERSION_SHARE, shared, shingles

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000
# ``similar``: the nearest files whose wording is compared with the file's for versions (search/versions.py),
# those at least this near by meaning (an edited copy is nearer than any other file on its topic)
VERSIONS_CHECKED = 20
VERSION_CHUNKS = 400  # chunks read of each file compared for versions (about 60,000 words: past MAX_WORDS)
VERSION_MIN_COSINE = 0.8
# Control characters (NUL, escapes) and lone surrogates (undecodable bytes of a command line)
# carry no meaning, and no tokenizer takes the latter: they become spaces.
_NOT_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_LEGS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="search-leg")
# The keyword leg's first chunks without a vector that a search embeds on demand (best rank first), within
# the time budget of ``retrieval.on_demand_seconds``.
ON_DEMAND_CHUNKS = 30


class QueryEmbeddingFailed(ModelError):
    """The query could not be embedded (endpoint down, model missing): the dense leg is skipped."""


@dataclass
class Retriever:
    """The search stages wired to a store and models; the engine builds one and every interface calls it."""

    store: ChunkStore
    embed_query: Callable[[str], np.ndarray]  # raises QueryEmbeddingFailed
    reranker: Callable[[], Scorer | None]  # None when unavailable (the engine says why)
    build_fts_index: Callable[[], None]
    exists: Callable[[str], bool] = os.path.exists
    fusion: str = "evidence"  # retrieval.fusion
    dense_model: str = ""  # the embedding model's identity: which languages it reads
    # Query words no file has, corrected (search/spelling.py) for: "off", "bm25", "both" legs. Both: NFCorpus
    # with one typo a query, MiniLM hybrid nDCG@10 0.193 uncorrected, 0.315 BM25 only, 0.330 both (clean 0.354).
    spelling: str = "both"
    # Meaning on demand (ingest/on_demand.py through the engine): (chunk keys) -> (their vectors, a report
    # with ``as_dict``); None embeds nothing for a search.
    on_demand: Callable[[list[tuple[str, int]]], tuple[dict, Any]] | None = None
    # The names of files and folders (paths below their roots) that may hold one of some words (the catalog's
    # ``names_like``): a word a name holds is never respelled, whatever the keyword index holds of names.
    names: Callable[[list[str]], list[str]] | None = None

    def search(
        self,
        query: str,
        scope: str | list[str] | None = None,
        limit: int = 20,
        *,
        hybrid: bool = True,
        rerank_on: bool = True,
        dense: bool = True,
        fusion: str | None = None,
        filters: Filters | None = None,
        collapse: bool = True,
    ) -> SearchResponse:
        timings: dict[str, float] = {}
        query, response = self._prepare(query)
        if not query:
            return response
        limit = max(1, min(100, int(limit)))
        where = _where(scope, filters)
        pool = pool_size(limit)
        keywords = dense_query = query
        if self.spelling != "off" and (hybrid or not dense):
            started = time.perf_counter()
            keywords = self._respell(query, response)
            if self.spelling == "both":
                dense_query = keywords
            timings["spelling_ms"] = (time.perf_counter() - started) * 1000

        fusion = fusion or self.fusion
        judged_by_both = hybrid and dense and fusion in JUDGES_BOTH  # keyword hits bring their vectors
        embedding_failed = False
        query_vector: np.ndarray | None = None

        def run_dense() -> list[Candidate]:
            nonlocal embedding_failed, query_vector
            started = time.perf_counter()
            try:
                query_vector = self.embed_query(dense_query)
                return dense_leg(self.store, query_vector, pool, where)
            except QueryEmbeddingFailed as exc:
                embedding_failed = True
                response.notices.append(f"{exc}; showing keyword (BM25) results only")
                return []
            finally:
                timings["dense_ms"] = (time.perf_counter() - started) * 1000

        def run_sparse() -> list[Candidate]:
            started = time.perf_counter()
            try:
                return sparse_leg(self.store, keywords, pool, where, self.build_fts_index, judged_by_both)
            except Exception as exc:  # design §2.2: a failing BM25 leg degrades to dense-only, never errors
                log.warning("BM25 leg failed: %s", exc)
                response.notices.append(f"keyword (BM25) search failed ({exc}); showing meaning (dense) results only")
                return []
            finally:
                timings["bm25_ms"] = (time.perf_counter() - started) * 1000

        # The legs run side by side: LanceDB and the models release the GIL while they work.
        sparse_future = _LEGS.submit(run_sparse) if hybrid or not dense else None
        dense_hits = run_dense() if dense else []
        if embedding_failed and sparse_future is None:
            sparse_future = _LEGS.submit(run_sparse)  # the query could not be embedded: BM25 carries the search
        sparse_hits = sparse_future.result() if sparse_future else []
        hybrid = hybrid or not dense or embedding_failed

        if hybrid:
            on_demand = None
            quoted = bool(phrases(keywords))
            if fusion in JUDGES_BOTH or quoted:
                started = time.perf_counter()
                readable = (
                    fusion in JUDGES_BOTH and leg_weights(query, self.dense_model, dense_hits, sparse_hits).dense > 0
                )
                on_demand = self._complete(
                    query_vector if readable else None, keywords, dense_hits, sparse_hits, where, pool
                )
                timings["complete_ms"] = (time.perf_counter() - started) * 1000
            if quoted:  # words in double quotes match in that order only: a chunk without them is no result
                holding = {c.key for c in sparse_hits}
                dense_hits = [c for c in dense_hits if c.bm25 or c.key in holding]
                if not holding and not dense_hits:
                    said = ", ".join(f'"{phrase}"' for phrase in phrases(keywords))
                    response.notices.append(f"no file holds {said} as written, in that order")
            candidates = self._fuse(query, dense_hits, sparse_hits, fusion, response)
            if on_demand is not None and response.fusion is not None:
                response.fusion["on_demand"] = on_demand
            best = candidates[0].fused if candidates else 1.0
            for c in candidates:
                c.score = c.cosine if c.cosine is not None else c.fused / best
        else:
            candidates = dense_hits
            for c in candidates:
                c.score = c.cosine or 0.0

        if rerank_on and candidates:
            scorer = self.reranker()
            if scorer is not None:
                started = time.perf_counter()
                try:
                    candidates = rerank(query, candidates, scorer, limit)
                except Exception as exc:  # best-effort: keep the fused order
                    log.warning("rerank failed: %s", exc)
                    response.notices.append(f"reranker failed ({exc}); results are in fused order")
                timings["rerank_ms"] = (time.perf_counter() - started) * 1000

        response.results = self._finish(candidates, limit, keywords, collapse)
        response.timings_ms = timings
        response.terms = marked_terms(keywords)
        return response

    def _respell(self, query: str, response: SearchResponse) -> str:
        """The query the BM25 leg searches: each word no file has replaced by the nearest indexed word
        (search/spelling.py), said in ``response`` (``spelled`` and a notice). The query's language is
        read only when a word would be corrected: most queries need no correction, and the first reading of
        a process loads the language identifier (a second or more), which the BM25 leg then loads beside
        the dense leg's model rather than before both."""
        queries, names = self.store.queries, self.names

        def named(forms: list[str]) -> bool:
            return names is not None and in_names(forms, names)

        try:
            found = corrections(query, queries.term_forms, queries.known, queries.near, queries.holding, named=named)
            if not found or in_another_language(query, queries.main_languages()):
                return query
            response.spelled = {word: queries.written(term) for word, term in found.items()}
        except Exception as exc:  # best-effort: the query as typed
            log.warning("spelling failed: %s", exc)
            return query
        response.notices.append(notice(query, response.spelled))
        return respelled(query, response.spelled)

    def _complete(
        self,
        query_vector: np.ndarray | None,
        keywords: str,
        dense: list[Candidate],
        sparse: list[Candidate],
        where: str | None,
        pool: int,
    ) -> dict | None:
        """Give every candidate both signals: a keyword hit its cosine (its stored vector, or embedded now by
        ``on_demand`` when it has none yet, best keyword rank first), a dense hit its BM25 score (0 when it
        holds no query term). A candidate left without a vector (over the time budget, no model) keeps
        ``cosine`` None, and the fusion takes it at its keyword standing. Returns what meaning on demand did.

        A keyword leg that returned fewer than ``pool`` hits returned every chunk holding a query term: the
        dense hits it lacks score 0, and the second keyword query is not made (a small folder, rare words)."""
        scored = {c.key for c in sparse}
        if dense:
            exhausted = len(sparse) < pool
            among = {} if exhausted else self._bm25_among(keywords, [c for c in dense if c.key not in scored], where)
            for c in dense:
                if c.key not in scored:
                    c.bm25 = among.get(c.key, 0.0)
        if query_vector is None:
            return None
        lacking = [c for c in sparse if c.cosine is None]
        if not lacking:
            return None
        norm = float(np.linalg.norm(query_vector)) or 1.0

        def cosine(vector: np.ndarray) -> float:
            return min(1.0, max(0.0, float(vector @ query_vector) / ((float(np.linalg.norm(vector)) or 1.0) * norm)))

        for c in lacking:
            if c.vector is not None:
                c.cosine, c.meaning = cosine(c.vector), "stored"
        waiting = [c for c in lacking if c.cosine is None][:ON_DEMAND_CHUNKS]
        if not waiting or self.on_demand is None:
            return None
        found, report = self.on_demand([c.key for c in waiting])
        for c in waiting:
            if c.key in found:
                c.cosine, c.meaning = cosine(found[c.key]), "on demand"
        return report.as_dict()

    def _bm25_among(self, keywords: str, hits: list[Candidate], where: str | None) -> dict[tuple[str, int], float]:
        """BM25 of ``hits`` (dense hits the keyword leg did not rank), as the keyword leg scores them."""
        if not hits:
            return {}
        try:
            rows = self.store.queries.sparse_among(keywords, list(dict.fromkeys(c.path for c in hits)), where)
        except (ValueError, RuntimeError) as exc:  # no keyword index: the dense hits keep no keyword score
            log.info("BM25 of the dense hits skipped: %s", exc)
            return {}
        return {(row["path"], int(row["chunk_index"])): float(row["_score"]) for row in rows}

    def _fuse(
        self,
        query: str,
        dense_hits: list[Candidate],
        sparse_hits: list[Candidate],
        fusion: str,
        response: SearchResponse,
    ) -> list[Candidate]:
        """The fused list, and in ``response`` the fusion used and its leg weights (for --explain)."""
        fused = FUSIONS[fusion](query, self.dense_model, dense_hits, sparse_hits)
        response.fusion = fused.explanation
        return fused.candidates

    def tree(
        self,
        query: str,
        scope: str | list[str] | None,
        roots: list[str],
        limit: int = 400,
        filters: Filters | None = None,
    ) -> tuple[TreeNode | None, list[str]]:
        """Dense leg only, best score per existing file, max propagated up to the scope (each of several:
        every folder of a name said) or every root."""
        query, response = self._prepare(query)
        tops = [paths.normalize(s) for s in ([scope] if isinstance(scope, str) else scope)] if scope else roots
        if not query or not tops:
            return None, response.notices
        try:
            hits = dense_leg(self.store, self.embed_query(query), tree_limit(limit), _where(scope, filters))
        except QueryEmbeddingFailed as exc:
            return None, [*response.notices, f"{exc}; the meaning tree needs the embedding model"]
        best: dict[str, float] = {}
        for hit in hits:
            if hit.cosine is not None and hit.cosine > best.get(hit.path, -1.0):
                best[hit.path] = hit.cosine
        best = {p: s for p, s in best.items() if self.exists(p)}
        return build_tree(best, tops), response.notices

    def similar(
        self,
        path: str,
        vectors: np.ndarray,
        scope: str | None = None,
        limit: int = 10,
        collapse: bool = True,
        copies: frozenset[str] = frozenset(),
    ) -> SimilarResponse:
        """Files nearest to ``path`` by meaning: the mean of its chunk vectors as the query of the dense
        leg, one result per file. ``path`` itself (and its archive members) and its identical
        ``copies`` are left out; files that share most of its wording are its versions, listed apart."""
        response = SimilarResponse(query=path, copies=sorted(copies))
        limit = max(1, min(100, int(limit)))
        centroid = vectors.mean(axis=0)
        centroid /= np.linalg.norm(centroid) or 1.0
        started = time.perf_counter()
        # the file's own chunks (and its members) are left out by the filter, so the pool does not grow with it
        elsewhere = f"path != {sql_literal(path)} AND NOT ({paths.scope_predicate(path)})"
        hits = dense_leg(
            self.store,
            centroid,
            pool_size(limit + VERSIONS_CHECKED),
            " AND ".join(filter(None, [_where(scope), elsewhere])),
        )
        candidates = [h for h in hits if not paths.is_under(h.path, path) and h.path not in copies]
        for c in candidates:
            c.score = c.cosine or 0.0
        ranked = self._finish(candidates, limit + VERSIONS_CHECKED, "", collapse)
        response.timings_ms = {"dense_ms": (time.perf_counter() - started) * 1000}
        started = time.perf_counter()
        own = shingles(self._text_of(path))
        for result in ranked[:VERSIONS_CHECKED]:
            share = shared(own, shingles(self._text_of(result.path))) if result.score >= VERSION_MIN_COSINE else 0.0
            if share >= VERSION_SHARE:
                response.versions.append(Version(result.path, result.name, None, share))
        versions = {v.path for v in response.versions}
        response.results = [r for r in ranked if r.path not in versions][:limit]
        response.timings_ms["versions_ms"] = (time.perf_counter() - started) * 1000
        return response

    def _text_of(self, path: str) -> str:
        """A file's stored text, its chunks joined (without chunk 0's sense line); its first
        ``VERSION_CHUNKS`` chunks, more than the words a version is compared by."""
        return "\n".join(
            body(c["text"], c["chunk_index"]) for c in self.store.queries.chunks_of(path, first=VERSION_CHUNKS)
        )

    @staticmethod
    def _prepare(query: str) -> tuple[str, SearchResponse]:
        query = unicodedata.normalize("NFC", _NOT_TEXT.sub(" ", query or "")).strip()
        response = SearchResponse(query=query)
        if len(query) > MAX_QUERY_CHARS:
            query = query[:MAX_QUERY_CHARS]
            response.notices.append(f"the query was cut to its first {MAX_QUERY_CHARS} characters")
        return query, response

    def _finish(self, candidates: list[Candidate], limit: int, query: str, collapse: bool) -> list[SearchResult]:
        """One result per file (its best chunk), one per content when ``collapse`` (the copies listed with
        the best-ranked one), only files still on disk, cut at the limit."""
        results: list[SearchResult] = []
        seen: set[str] = set()
        by_content: dict[str, SearchResult] = {}
        for c in candidates:
            if c.path in seen:
                continue
            seen.add(c.path)
            if not self.exists(c.path):
                continue
            copy_of = by_content.get(c.content_hash) if collapse and c.content_hash else None
            if copy_of is not None:
                copy_of.duplicates.append(c.path)
                continue
            if len(results) >= limit:
                continue  # full, but later candidates may still be copies of a result
            location, label = place(c.location)
            result = SearchResult(
                path=c.path,
                name=paths.name_of(c.path),
                score=float(min(1.0, max(0.0, c.score))),
                snippet=snippet(c.text, c.chunk_index, query),
                chunk_index=c.chunk_index,
                legs=c.legs,
                dense_rank=c.dense_rank,
                bm25_rank=c.bm25_rank,
                fused=c.fused,
                rerank=c.score if c.logit is not None else None,
                location=location,
                location_label=label,
                content_hash=c.content_hash,
                signals=c.signals() if c.carried_by else None,
            )
            results.append(result)
            if c.content_hash:
                by_content[c.content_hash] = result
        return results


def _where(scope: str | list[str] | None, filters: Filters | None = None) -> str | None:
    """The prefilter both legs run under: the scope, and the filters on type and dates."""
    parts = []
    if scope:
        parts.append(
            paths.scope_predicate(scope) if isinstance(scope, str) else f"({paths.any_scope_predicate(scope)})"
        )
    predicate = filters.predicate() if filters is not None else None
    if predicate:
        parts.append(predicate)
    return " AND ".join(parts) or None
