"""The evidence fusion (``retrieval.fusion = "evidence"``): leg weights from what each leg returned
for the query, on constructed leg lists (pure functions, no index)."""

from __future__ import annotations

import pytest

from sensetree.config import CHOICES, DEFAULTS
from sensetree.search import fusion
from sensetree.search.fusion import (CROSS_BM25_SHARE, EQUAL, FUSIONS, Evidence, evidence_fusion, evidence_of,
                                     evidence_weights, weighted_fusion)
from sensetree.search.types import Candidate

E5 = "intfloat/multilingual-e5-small@onnx-int8"
MINILM = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8"
ENGLISH_QUESTION = "How many points did the defence of the Panthers give up during the season?"


def dense_hits(files: list[tuple[str, float]], lang: str = "en", chunks: int = 1) -> list[Candidate]:
    """A dense leg: each file's chunks at its cosine (the later chunks a little lower), best first."""
    hits = [Candidate(path, chunk, f"{path}#{chunk}", lang, cosine=cosine - 0.001 * chunk)
            for path, cosine in files for chunk in range(chunks)]
    hits.sort(key=lambda c: -c.cosine)
    for rank, hit in enumerate(hits, start=1):
        hit.dense_rank = rank
    return hits


def bm25_hits(files: list[tuple[str, float]], lang: str = "en") -> list[Candidate]:
    return [Candidate(path, 0, f"{path}#0", lang, bm25_rank=rank, bm25=score)
            for rank, (path, score) in enumerate(files, start=1)]


def ranking(fused) -> list[str]:
    return list(dict.fromkeys(c.path for c in fused.candidates))


def test_every_fusion_is_a_setting_and_the_seeds_rrf_stays():
    assert set(FUSIONS) == set(CHOICES["retrieval.fusion"])
    assert {"rrf", "weighted", "evidence"} <= set(FUSIONS)
    assert DEFAULTS["retrieval.fusion"][0] in FUSIONS


def test_cross_lingual_keywords_that_match_only_names_lose_their_share():
    # An English question over German paragraphs: the multilingual dense leg finds the paragraph (g1),
    # BM25 matches a name and a number in other paragraphs and looks sure of them.
    dense = dense_hits([("g1", 0.89), ("g2", 0.84), ("g3", 0.83), ("g4", 0.82), ("g5", 0.80)], lang="de")
    sparse = bm25_hits([("g7", 14.0), ("g8", 9.0), ("g2", 4.0), ("g1", 1.0)], lang="de")
    evidence = evidence_of(ENGLISH_QUESTION, dense, sparse)
    assert evidence.query_language == "en" and evidence.bm25_languages == ("de",)
    assert evidence.query_in_bm25_language < 0.001 and evidence.keywords_cross_languages
    weights = evidence_weights(ENGLISH_QUESTION, E5, dense, sparse)
    assert (weights.dense, weights.bm25) == pytest.approx((1 - CROSS_BM25_SHARE, CROSS_BM25_SHARE))
    assert "de" in weights.reason and "en" in weights.reason
    assert ranking(evidence_fusion(ENGLISH_QUESTION, E5, dense, sparse))[0] == "g1"
    assert ranking(weighted_fusion(ENGLISH_QUESTION, E5, dense, sparse))[0] == "g7"  # the fault it mends
    explained = evidence_fusion(ENGLISH_QUESTION, E5, dense, sparse).explanation
    assert explained["method"] == "evidence" and explained["bm25"] == pytest.approx(CROSS_BM25_SHARE)
    assert explained["query_language"] == "en" and explained["bm25_languages"] == "de" and explained["reason"]


def test_the_same_lists_in_the_querys_own_language_keep_the_usual_shares():
    dense = dense_hits([("e1", 0.89), ("e2", 0.84), ("e3", 0.83)])
    sparse = bm25_hits([("e7", 14.0), ("e8", 9.0), ("e2", 4.0)])
    assert evidence_weights(ENGLISH_QUESTION, E5, dense, sparse) == EQUAL


def test_a_query_too_short_to_tell_its_language_is_not_taken_as_foreign():
    # "COVID-19 vaccine" reads as Italian at 0.07, "Uganda" as Ganda at 0.78: no cross-lingual cut
    dense = dense_hits([("e1", 0.89), ("e2", 0.84)])
    sparse = bm25_hits([("e2", 12.0), ("e1", 8.0)])
    for query in ("COVID-19 vaccine", "Uganda"):
        evidence = evidence_of(query, dense, sparse)
        assert evidence.query_language is None and not evidence.keywords_cross_languages
        assert evidence_weights(query, E5, dense, sparse) == EQUAL
    # a whole question is judged: English, and surely not German
    assert evidence_of(ENGLISH_QUESTION, dense, bm25_hits([("g1", 3.0)], lang="de")).keywords_cross_languages


def test_an_english_only_dense_model_still_gets_no_say_on_a_foreign_query():
    # MiniLM cannot read German: BM25 carries the query even though its files are German too
    german_question = "Wie viele Punkte hat die Verteidigung der Panthers in der Saison zugelassen?"
    dense = dense_hits([("g1", 0.5), ("g2", 0.49)], lang="de")
    sparse = bm25_hits([("g2", 11.0), ("g1", 3.0)], lang="de")
    weights = evidence_weights(german_question, MINILM, dense, sparse)
    assert (weights.dense, weights.bm25) == (0.0, 1.0)
    assert ranking(evidence_fusion(german_question, MINILM, dense, sparse))[0] == "g2"


def test_agreement_counts_the_first_files_both_legs_hold():
    dense = dense_hits([(f"f{i}", 0.9 - 0.01 * i) for i in range(12)], chunks=2)
    sparse = bm25_hits([(f"f{i}", 20.0 - i) for i in (0, 1, 2, 3, 4, 20, 21, 22, 23, 24, 25)])
    evidence = evidence_of(ENGLISH_QUESTION, dense, sparse)
    assert evidence.agreement == pytest.approx(0.5)  # 5 of each leg's first 10 files are in both
    assert evidence_of(ENGLISH_QUESTION, dense, []).agreement == 0.0


def test_margins_read_the_shape_of_each_legs_list():
    flat = dense_hits([(f"f{i}", 0.80 - 0.001 * i) for i in range(40)])
    steep = bm25_hits([("top", 30.0)] + [(f"f{i}", 3.0 - 0.01 * i) for i in range(40)])
    evidence = evidence_of(ENGLISH_QUESTION, flat, steep)
    assert evidence.dense_margin == pytest.approx(9 / 39)  # 10th file 9 steps down a span of 39
    assert evidence.bm25_margin == pytest.approx(1 - 2.92 / 30)
    assert evidence_of(ENGLISH_QUESTION, flat[:1], steep[:1]).dense_margin == 1.0  # a lone file


def test_the_evidence_is_explained_in_plain_values():
    evidence = Evidence("en", ("de",), ("de", "en"), 0.0001, 0.3, 0.25, 0.9)
    assert evidence.as_dict() == {"query_language": "en", "dense_languages": "de", "bm25_languages": "de/en",
                                  "agreement": 0.3, "dense_margin": 0.25, "bm25_margin": 0.9}


def test_each_fusion_handles_empty_legs():
    for method in FUSIONS.values():
        assert method(ENGLISH_QUESTION, E5, [], []).candidates == []
        only = method(ENGLISH_QUESTION, E5, [], bm25_hits([("a", 2.0), ("b", 1.0)]))
        assert ranking(only) == ["a", "b"]


def test_the_parameters_are_module_constants_the_lab_can_grid():
    assert 0.0 <= fusion.CROSS_BM25_SHARE < EQUAL.bm25
