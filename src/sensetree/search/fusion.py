"""Fusing the dense and keyword legs (design §2.4).

Four fusions, chosen by ``retrieval.fusion``:

- ``both`` (the default): every candidate either leg brought, judged by its meaning and its keywords; the
  keyword evidence counts as far as the candidate's meaning and language back it (``both_fusion``).
- ``evidence``: a convex mix of the legs' scores on files, leg weights from what the legs returned.
- ``weighted``: the same mix, leg weights from whether the dense model reads the query. Past the first
  ``HEAD_FILES`` files these two go by Reciprocal Rank Fusion on files (what a reranker reads).
- ``rrf``, the seed's: Reciprocal Rank Fusion on (path, chunk_index), every leg weighing the same.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from ..store.terms import NO_LANGUAGE, SURE_SHARE, query_languages, sure_shares, text_languages
from .types import Candidate

RRF_K = 60


@dataclass(frozen=True)
class LegWeights:
    """What each leg counts for in one query's fusion, and why (shown by ``--explain``)."""

    dense: float
    bm25: float
    reason: str = ""

    def as_dict(self) -> dict:
        return {"dense": round(self.dense, 4), "bm25": round(self.bm25, 4), "reason": self.reason}


# Where each leg's scale starts. Cosines crowd a narrow band (E5: 0.75-0.9), so the pool's lowest
# is the dense floor; BM25 starts at 0, and its pool can be two files long, the second no worse
# for being last.
FLOORS: dict[str, float | None] = {"cosine": None, "bm25": 0.0}
# The dense leg's share where both legs read the query: the share whose worst margin over the better
# leg is largest on the tuning parts (NFCorpus dev, a quarter of LegalQuAD and of XQuAD th/ru/vi by
# query id: bench/fusion_lab.py grid --part tune). 0.5 lost 0.012 to BM25 on LegalQuAD with E5.
DENSE_SHARE = 0.3
TOP_HITS = 10  # the dense hits whose languages tell whether the model could read them
# The files the convex scores order; the rest go by file-level RRF. The scores' top 10 beat RRF's on
# nDCG@10, but below it they favour BM25's tail (a file only the dense leg found scores at most the
# dense share), so Recall@100 fell under RRF's. SciFact train: R@100 0.934 -> 0.960, nDCG@10 the same.
HEAD_FILES = 10
TAIL_SHARE = 0.2  # a leg weighted less than this has no say in the tail's ranks either
EQUAL = LegWeights(DENSE_SHARE, 1.0 - DENSE_SHARE, "both legs read the query")


def dense_languages(model: str) -> frozenset[str] | None:
    """The languages a dense model reads (ISO 639-1), None for every language.

    MiniLM models are English-only unless named multilingual (paraphrase-multilingual-MiniLM is not);
    the bundled E5 and unknown endpoint models are taken as multilingual.
    """
    name = model.lower()
    return frozenset({"en"}) if "minilm" in name and "multilingual" not in name else None


def leg_weights(query: str, model: str, dense: list[Candidate], sparse: list[Candidate]) -> LegWeights:
    """How much each leg counts for this query: a dense model that reads neither the query's
    language nor most of the chunks it found gets no say."""
    readable = dense_languages(model)
    if readable is not None and dense:
        languages = query_languages(query)
        if not readable.intersection(languages):
            return LegWeights(
                0.0, 1.0, f"the dense model reads {', '.join(sorted(readable))}; the query looks {'/'.join(languages)}"
            )
        top = [c.lang for c in dense[:TOP_HITS] if c.lang]
        if top and sum(lang in readable for lang in top) < len(top) / 2:
            return LegWeights(
                0.0,
                1.0,
                f"the dense model reads {', '.join(sorted(readable))}; "
                f"its best chunks are {'/'.join(sorted(set(top)))}",
            )
    return EQUAL


def fuse(dense: list[Candidate], sparse: list[Candidate], k: int = RRF_K) -> list[Candidate]:
    """Merge two ranked lists on (path, chunk_index); score = sum of 1 / (k + rank), rank from 1.

    Ties are broken by the best single-leg rank, then by path and chunk index, so the same
    inputs always give the same order.
    """
    merged = _merge(dense, sparse)
    return _ranked(
        merged,
        {key: sum(1.0 / (k + rank) for rank in (c.dense_rank, c.bm25_rank) if rank) for key, c in merged.items()},
    )


def rrf_of_scores(*scores: np.ndarray, k: int = RRF_K) -> np.ndarray:
    """The same RRF over score arrays of the same items, each ranked by its scores (a zero score does not
    count): the assistant's evidence fuses its sentences' two rankings with it."""
    fused = np.zeros(len(scores[0]))
    for leg in scores:
        ranks = np.empty(len(leg), dtype=int)
        ranks[np.argsort(-leg, kind="stable")] = np.arange(1, len(leg) + 1)
        fused += np.where(leg > 0, 1.0 / (k + ranks), 0.0)
    return fused


def fuse_files(dense: list[Candidate], sparse: list[Candidate], weights: LegWeights) -> list[Candidate]:
    """Convex fusion on files: score = w_dense * dense + w_bm25 * bm25, each leg's best-chunk score
    per file scaled to [0, 1] over that leg's pool (min-max); a file a leg did not find scores 0 there.

    Scores, not ranks: a leg that is sure of its first file (a wide gap) outweighs one whose
    pool is flat. The file is represented by its chunk with the best score by the same weights
    (its snippet, what a reranker reads and what the assistant quotes): the chunk both legs
    agree on rather than one leg's favourite. Candidates keep their chunk-level ranks for the explanation.
    Below the first ``HEAD_FILES`` files, the order is by file-level RRF over the legs weighted at least
    ``TAIL_SHARE``.
    """
    merged = _merge(dense, sparse)
    files: dict[str, float] = {}
    chunks: dict[tuple[str, int], float] = {}
    for leg, score, weight in ((dense, "cosine", weights.dense), (sparse, "bm25", weights.bm25)):
        best: dict[str, float] = {}
        for candidate, value in _scaled(leg, score, FLOORS[score]):
            chunks[candidate.key] = chunks.get(candidate.key, 0.0) + weight * value
            best[candidate.path] = max(best.get(candidate.path, value), value)
        for path, value in best.items():
            files[path] = files.get(path, 0.0) + weight * value
    chosen: dict[str, tuple[str, int]] = {}
    for key, share in chunks.items():  # in leg order: a tie goes to the dense leg's chunk
        if key[0] not in chosen or share > chunks[chosen[key[0]]]:
            chosen[key[0]] = key
    scores = {key: files[path] for path, key in chosen.items()}
    ranked = _ranked(merged, scores)
    head, tail = ranked[:HEAD_FILES], ranked[HEAD_FILES:]
    return head + _by_file_ranks(
        tail, dense if weights.dense >= TAIL_SHARE else [], sparse if weights.bm25 >= TAIL_SHARE else []
    )


def _by_file_ranks(
    tail: list[Candidate], dense: list[Candidate], sparse: list[Candidate], k: int = RRF_K
) -> list[Candidate]:
    """``tail`` reordered by RRF over the legs' file rankings (a file ranked by its best chunk), each
    given a fused score rescaled from it, to stay in order and below where the tail starts."""
    if not tail:
        return tail
    ranks: dict[str, float] = {}
    for leg in (dense, sparse):
        for rank, path in enumerate(dict.fromkeys(c.path for c in leg), start=1):
            ranks[path] = ranks.get(path, 0.0) + 1.0 / (k + rank)
    ordered = sorted(tail, key=lambda c: _order(c, ranks.get(c.path, 0.0)))
    ceiling = tail[0].fused
    best = ranks.get(ordered[0].path, 0.0) or 1.0
    return [dataclasses.replace(c, fused=ceiling * ranks.get(c.path, 0.0) / best) for c in ordered]


def _scaled(leg: list[Candidate], score: str, floor: float | None) -> list[tuple[Candidate, float]]:
    """Each candidate with its score scaled to [0, 1] over the leg: from ``floor`` (or the pool's
    lowest score when None) to the pool's highest."""
    values = [getattr(candidate, score) or 0.0 for candidate in leg]
    if not values:
        return []
    high = max(values)
    low = min(values) if floor is None else floor
    span = high - low
    return [(c, (v - low) / span if span > 0 else 1.0) for c, v in zip(leg, values)]


def _merge(dense: list[Candidate], sparse: list[Candidate]) -> dict[tuple[str, int], Candidate]:
    merged: dict[tuple[str, int], Candidate] = {}
    for leg in (dense, sparse):
        for candidate in leg:
            found = merged.get(candidate.key)
            if found is None:
                merged[candidate.key] = found = candidate.bare()
            found.absorb(candidate)
    return merged


def _order(candidate: Candidate, score: float) -> tuple:
    return (-score, candidate.best_rank, candidate.path, candidate.chunk_index)


def _ranked(merged: dict[tuple[str, int], Candidate], scores: dict[tuple[str, int], float]) -> list[Candidate]:
    """The scored candidates, each a copy carrying its fused score (the legs' lists stay as they were),
    best first."""
    return sorted(
        (dataclasses.replace(merged[key], fused=score) for key, score in scores.items()),
        key=lambda c: _order(c, c.fused),
    )


# --- the evidence fusion: leg weights from what the legs returned for this query ---------------------

EVIDENCE_FILES = 10  # each leg's first files, which the evidence is read from
# A query is taken as foreign to the files when the language identifier is sure of its language (SURE_SHARE,
# store/terms.py) and gives the files' language less than FOREIGN_SHARE: full questions in another language
# score 1e-6 to 2e-4, and the shortest English queries of the dev sets at least 0.014. Queries shorter
# than SURE_CHARS are names or terms whose language is a guess, never foreign.
FOREIGN_SHARE = 0.001
# BM25's share when it ranks first files in a language the query is not in, while the dense model reads
# the query: the keyword leg can then match only names and numbers, and its scores look no less sure.
CROSS_BM25_SHARE = 0.1


@dataclass(frozen=True)
class Evidence:
    """What one query's legs returned, as the evidence fusion reads it (shown by ``--explain``)."""

    query_language: str | None  # the identifier's first guess, None when unsure or the query is short
    dense_languages: tuple[str, ...]  # the languages of the dense leg's first files, most frequent first
    bm25_languages: tuple[str, ...]
    query_in_bm25_language: float  # how likely the query is in the language of most of BM25's first files
    agreement: float  # the share of the first files both legs rank there
    dense_margin: float  # how far a leg's first file stands above its 10th, over the leg's span, in [0, 1]
    bm25_margin: float

    @property
    def keywords_cross_languages(self) -> bool:
        """The query is surely in one language and BM25's first files surely in another."""
        return self.query_language is not None and self.query_in_bm25_language < FOREIGN_SHARE

    def as_dict(self) -> dict:
        return {
            "query_language": self.query_language,
            "dense_languages": "/".join(self.dense_languages),
            "bm25_languages": "/".join(self.bm25_languages),
            "agreement": round(self.agreement, 2),
            "dense_margin": round(self.dense_margin, 2),
            "bm25_margin": round(self.bm25_margin, 2),
        }


def evidence_of(query: str, dense: list[Candidate], sparse: list[Candidate]) -> Evidence:
    """The evidence of both legs' lists: each file by its best chunk, the first ``EVIDENCE_FILES`` of each leg."""
    dense_files, sparse_files = _best_chunks(dense, "cosine"), _best_chunks(sparse, "bm25")
    shares = sure_shares(query)
    guess = max(shares, key=shares.__getitem__, default=None)
    bm25_languages = _by_frequency(c.lang for c in sparse_files[:EVIDENCE_FILES])
    dense_top = {c.path for c in dense_files[:EVIDENCE_FILES]}
    sparse_top = {c.path for c in sparse_files[:EVIDENCE_FILES]}
    shorter = min(len(dense_top), len(sparse_top))
    return Evidence(
        query_language=guess if guess and shares[guess] >= SURE_SHARE else None,
        dense_languages=_by_frequency(c.lang for c in dense_files[:EVIDENCE_FILES]),
        bm25_languages=bm25_languages,
        query_in_bm25_language=shares.get(bm25_languages[0], 0.0) if shares and bm25_languages else 1.0,
        agreement=len(dense_top & sparse_top) / shorter if shorter else 0.0,
        dense_margin=_margin([c.cosine or 0.0 for c in dense_files], FLOORS["cosine"]),
        bm25_margin=_margin([c.bm25 or 0.0 for c in sparse_files], FLOORS["bm25"]),
    )


def evidence_weights(
    query: str, model: str, dense: list[Candidate], sparse: list[Candidate], evidence: Evidence | None = None
) -> LegWeights:
    """Each leg's share for this query, from what it returned: the language gate of ``leg_weights``
    first (a dense model that cannot read the query gets no say), then a keyword leg that ranks files
    in another language than the query's gets ``CROSS_BM25_SHARE``."""
    gated = leg_weights(query, model, dense, sparse)
    if gated.dense == 0.0 or not dense or not sparse:
        return gated
    evidence = evidence or evidence_of(query, dense, sparse)
    if evidence.keywords_cross_languages:
        return LegWeights(
            1.0 - CROSS_BM25_SHARE,
            CROSS_BM25_SHARE,
            f"BM25's first files are {'/'.join(evidence.bm25_languages)}, the query is "
            f"{evidence.query_language}: keywords can match only names and numbers",
        )
    return gated


@dataclass(frozen=True)
class Fused:
    """A fusion's ranked candidates, and how it fused them (``SearchResponse.fusion``, ``--explain``)."""

    candidates: list[Candidate]
    explanation: dict = field(default_factory=dict)


def rrf_fusion(query: str, model: str, dense: list[Candidate], sparse: list[Candidate]) -> Fused:
    """The seed's RRF on chunks; neither the query nor the model counts."""
    return Fused(fuse(dense, sparse), {"method": "rrf", "k": RRF_K})


def weighted_fusion(query: str, model: str, dense: list[Candidate], sparse: list[Candidate]) -> Fused:
    """Convex fusion on files, leg weights from whether the dense model reads the query."""
    weights = leg_weights(query, model, dense, sparse)
    return Fused(
        fuse_files(dense, sparse, weights), {"method": "weighted", **weights.as_dict(), "rrf_after": HEAD_FILES}
    )


def evidence_fusion(query: str, model: str, dense: list[Candidate], sparse: list[Candidate]) -> Fused:
    """Convex fusion on files, leg weights from the evidence the legs returned (``evidence_weights``)."""
    evidence = evidence_of(query, dense, sparse)
    weights = evidence_weights(query, model, dense, sparse, evidence)
    return Fused(
        fuse_files(dense, sparse, weights),
        {"method": "evidence", **weights.as_dict(), "rrf_after": HEAD_FILES, **evidence.as_dict()},
    )


# --- the both-signals fusion: every candidate judged by its meaning and its keywords ------------------------

BOTH_DENSE_SHARE = 0.3  # meaning's share of a candidate's score, where the dense model reads the query
# A candidate's keyword evidence is its BM25 score times its meaning and times its language fit (how far the
# chunk and the query can be in one language: ``_language_fit``); not below this floor, the identifier errs. Chosen on a
# quarter of the queries of SciFact, NFCorpus and the 49 XQuAD sets (bench/signals_lab.py, --part tune), among
# floors 0.05-0.2, meaning's power 0-1 and a dense share that grew as the keyword leg's first hits lost on meaning.
LANGUAGE_FLOOR = 0.05
# Keyword evidence that stands out is not discounted by meaning: the files whose best BM25 stands at least
# DECISIVE times above the next file's, at the widest such gap among the first DECISIVE_FILES (or alone in
# holding a query word), hold what the query typed (an identifier, a number, a name, a word as written, a
# corrected typo) where the others hold at most its parts. E5's cosines crowd near 0.8, so a meaning scaled
# over the pool can sink such a file under neighbours that hold none of the query's words (design §2.4).
DECISIVE = 2.0
DECISIVE_FILES = 3


def both_fusion(query: str, model: str, dense: list[Candidate], sparse: list[Candidate]) -> Fused:
    """Every candidate either leg brought, judged by both signals (the pipeline gives each its cosine, from
    its stored vector or embedded on demand, and its BM25 score; ``Retriever._complete``).

    score = w * meaning + (1 - w) * keywords * meaning * language fit, per chunk, a file by its best chunk.
    Meaning is the cosine scaled over the pool (its lowest to its highest), keywords the BM25 score over the
    pool's highest. Keywords count as far as the candidate's meaning backs them: a chunk that matches the
    query's words but not what it asks (a name, a number) keeps little of its keyword standing. And as far
    as its language does (``_language_fit``): words two languages share match across them without meaning
    the same. A candidate without a vector yet stands on meaning where it stands on keywords (its keyword
    percentile mapped onto the known meanings: no evidence either way), so at no coverage the order is
    BM25's, and a file waiting for the semantic phase is not pushed down by the files that have their
    vectors. A dense model that cannot read the query gets no say (``leg_weights``), and keywords count whole.
    """
    merged = list(_merge(dense, sparse).values())
    if not merged:
        return Fused([], {"method": "both"})
    cosines = np.array([np.nan if c.cosine is None else c.cosine for c in merged])
    bm25 = np.array([c.bm25 or 0.0 for c in merged])
    known = ~np.isnan(cosines)
    keywords = bm25 / bm25.max() if bm25.max() > 0 else bm25
    meaning = keywords.copy()
    if known.any():
        low, high = cosines[known].min(), cosines[known].max()
        meaning[known] = (cosines[known] - low) / (high - low) if high > low else 1.0
        if not known.all():  # no vector yet: the same standing on meaning as it has on keywords
            standing = np.searchsorted(np.sort(keywords), keywords[~known], side="left") / len(keywords)
            meaning[~known] = np.quantile(meaning[known], standing)
    gated = leg_weights(query, model, dense, sparse)
    if gated.dense == 0.0:
        weights, fit, evidence = gated, np.ones(len(merged)), keywords
    else:
        weights = LegWeights(
            BOTH_DENSE_SHARE,
            1 - BOTH_DENSE_SHARE,
            "both legs read the query: keywords count as far as each candidate's meaning backs them",
        )
        fit = _language_fit(query, merged, known)
        backing = np.where(_decisive(merged), 1.0, meaning)
        evidence = keywords * backing * fit
    dense_part, keyword_part = weights.dense * meaning, weights.bm25 * evidence
    for candidate, by_meaning, by_keywords, has_vector in zip(merged, dense_part, keyword_part, known):
        candidate.fused = float(by_meaning + by_keywords)
        candidate.carried_by = (
            "keywords (no vector yet)"
            if not has_vector
            else "neither"
            if by_meaning + by_keywords <= 0
            else "meaning"
            if by_meaning >= 2 * by_keywords
            else "keywords"
            if by_keywords >= 2 * by_meaning
            else "both"
        )
    best: dict[str, Candidate] = {}
    for candidate in merged:  # a file by its best chunk; a tie to the one either leg ranked first
        found = best.get(candidate.path)
        if found is None or _order(candidate, candidate.fused) < _order(found, found.fused):
            best[candidate.path] = candidate
    ranked = sorted(best.values(), key=lambda c: _order(c, c.fused))
    embedded_now = sum(c.meaning == "on demand" for c in merged)
    return Fused(
        ranked,
        {
            "method": "both",
            **weights.as_dict(),
            "without_vector": int((~known).sum()),
            "embedded_now": embedded_now,
            "keywords_in_other_languages": int((fit < 1).sum()),
        },
    )


def _decisive(candidates: list[Candidate]) -> np.ndarray:
    """Which candidates belong to files whose keyword evidence stands out (``DECISIVE``): the files above the
    widest gap, at least DECISIVE wide, in the BM25 of the first DECISIVE_FILES + 1 files."""
    best: dict[str, float] = {}
    for c in candidates:
        best[c.path] = max(best.get(c.path, 0.0), c.bm25 or 0.0)
    ranked = sorted(best.values(), reverse=True)[: DECISIVE_FILES + 1] + [0.0]
    gaps = [(ranked[i] / ranked[i + 1] if ranked[i + 1] > 0 else np.inf, i) for i in range(len(ranked) - 1)]
    gaps = [(gap, i) for gap, i in gaps if ranked[i] > 0 and i < DECISIVE_FILES]
    widest, at = max(gaps, default=(0.0, -1))
    if widest < DECISIVE:
        return np.zeros(len(candidates), dtype=bool)
    return np.array([(c.bm25 or 0.0) > 0 and best[c.path] >= ranked[at] for c in candidates])


def _language_fit(query: str, candidates: list[Candidate], known: np.ndarray) -> np.ndarray:
    """How far each candidate's keyword match can count as one in the query's language, in [LANGUAGE_FLOOR, 1]:
    for a query of SURE_CHARS or more and a chunk with a vector, the larger of how likely the chunk is in the
    query's likeliest language (over its own likeliest) and how likely the query is in the chunk's likeliest
    (over its own); 1 when the chunk is in the query's language or has none. Both sides are read, so English
    code that the identifier takes for Bikol at 0.10 (English not far behind) keeps its keywords for an
    English question, and a Turkish list of names keeps none for a Vietnamese one. A chunk without a vector
    keeps its keyword standing whole: nothing yet says what it means."""
    fit = np.ones(len(candidates))
    shares = sure_shares(query)
    if not shares:
        return fit
    likeliest = max(shares, key=shares.__getitem__)
    for i, candidate in enumerate(candidates):
        if not (known[i] and candidate.bm25 and candidate.lang and candidate.lang != likeliest):
            continue
        languages = text_languages(candidate.text) if candidate.text else {candidate.lang: 1.0}
        its = max(languages, key=languages.__getitem__, default=NO_LANGUAGE)
        if its == NO_LANGUAGE:
            continue
        chunk_as_query = languages.get(likeliest, 0.0) / languages[its]
        query_as_chunk = shares.get(its, 0.0) / shares[likeliest]
        fit[i] = max(LANGUAGE_FLOOR, min(1.0, max(chunk_as_query, query_as_chunk)))
    return fit


Fusion = Callable[[str, str, list[Candidate], list[Candidate]], Fused]
# retrieval.fusion -> the function: (query, dense model identity, dense hits, BM25 hits) -> fused list
FUSIONS: dict[str, Fusion] = {
    "both": both_fusion,
    "evidence": evidence_fusion,
    "weighted": weighted_fusion,
    "rrf": rrf_fusion,
}
# the fusions that read both signals of every candidate: the pipeline completes them first (``Retriever._complete``)
JUDGES_BOTH = frozenset({"both"})


def _best_chunks(leg: list[Candidate], score: str) -> list[Candidate]:
    """Each file's best chunk in the leg, best first."""
    best: dict[str, Candidate] = {}
    for candidate in leg:
        found = best.get(candidate.path)
        if found is None or (getattr(candidate, score) or 0.0) > (getattr(found, score) or 0.0):
            best[candidate.path] = candidate
    return sorted(best.values(), key=lambda c: -(getattr(c, score) or 0.0))


def _margin(scores: list[float], floor: float | None) -> float:
    """How far the first file stands above the ``EVIDENCE_FILES``-th, over the span from ``floor``
    (the pool's lowest when None): 1 for a lone file, near 0 for a flat list."""
    if len(scores) < 2:
        return 1.0
    low = min(scores) if floor is None else floor
    span = scores[0] - low
    return (scores[0] - scores[min(EVIDENCE_FILES, len(scores)) - 1]) / span if span > 0 else 0.0


def _by_frequency(languages: Iterable[str | None]) -> tuple[str, ...]:
    counts: dict[str, int] = {}
    for language in languages:
        if language:
            counts[language] = counts.get(language, 0) + 1
    return tuple(sorted(counts, key=lambda lang: -counts[lang]))
