"""Ranking metrics (trec_eval conventions): nDCG@k with graded gains, recall@k, MRR@k, percentile."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sensetree.eval.metrics import mrr_at, ndcg_at, percentile, recall_at


def test_ndcg_graded_hand_computed():
    ranking = ["d3", "d1", "d9", "d2"]
    qrels = {"d1": 2, "d2": 1, "d3": 1}
    # DCG  = gain/log2(rank+1) summed over the ranking:
    #        d3 (1) at rank 1: 1/log2(2) = 1
    #        d1 (2) at rank 2: 2/log2(3) = 1.2618595
    #        d9 (0) at rank 3: 0
    #        d2 (1) at rank 4: 1/log2(5) = 0.4306766
    #      = 2.6925361
    # IDCG = the ideal order 2, 1, 1: 2/log2(2) + 1/log2(3) + 1/log2(4) = 2 + 0.6309298 + 0.5 = 3.1309298
    # nDCG = 2.6925361 / 3.1309298 = 0.8599797
    dcg = 1 / math.log2(2) + 2 / math.log2(3) + 0 + 1 / math.log2(5)
    idcg = 2 / 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at(ranking, qrels, 10) == pytest.approx(dcg / idcg, rel=1e-12)
    assert ndcg_at(ranking, qrels, 10) == pytest.approx(0.8599797, abs=1e-7)


def test_ndcg_perfect_and_reversed():
    qrels = {"a": 3, "b": 2, "c": 1}
    assert ndcg_at(["a", "b", "c"], qrels) == 1.0
    # reversed: 1/1 + 2/log2(3) + 3/2 over 3/1 + 2/log2(3) + 1/2
    expected = (1 + 2 / math.log2(3) + 3 / 2) / (3 + 2 / math.log2(3) + 1 / 2)
    assert ndcg_at(["c", "b", "a"], qrels) == pytest.approx(expected, rel=1e-12)


def test_ndcg_cut_at_k_and_ideal_from_all_qrels():
    ranking = [f"n{i}" for i in range(10)] + ["rel"]
    assert ndcg_at(ranking, {"rel": 1}, 10) == 0.0       # rank 11 is past the cut
    assert ndcg_at(ranking, {"rel": 1}, 11) == pytest.approx(1 / math.log2(12))
    # an unretrieved relevant document still counts in the ideal
    assert ndcg_at(["a"], {"a": 1, "zz": 1}, 10) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    # the ideal is cut at k too: 12 relevant documents, top-10 all relevant -> 1.0
    qrels = {f"r{i}": 1 for i in range(12)}
    assert ndcg_at([f"r{i}" for i in range(10)], qrels, 10) == pytest.approx(1.0)


def test_ndcg_ignores_zero_and_negative_grades():
    assert ndcg_at(["a", "b"], {"a": 0, "b": -1}) == 0.0
    assert ndcg_at(["a", "b"], {"a": 0, "b": 1}) == pytest.approx(1 / math.log2(3))


def test_recall_at_k():
    ranking = ["a", "x", "c", "y", "e"]
    qrels = {"a": 1, "c": 2, "e": 1, "f": 1, "z": 0}
    assert recall_at(ranking, qrels, 1) == 1 / 4
    assert recall_at(ranking, qrels, 2) == 1 / 4
    assert recall_at(ranking, qrels, 3) == 2 / 4
    assert recall_at(ranking, qrels, 5) == 3 / 4
    assert recall_at(ranking, qrels, 100) == 3 / 4


def test_mrr_at_10():
    assert mrr_at(["x", "y", "a"], {"a": 1}) == pytest.approx(1 / 3)
    assert mrr_at(["a", "b"], {"a": 1, "b": 2}) == 1.0
    assert mrr_at(["x"] * 10 + ["a"], {"a": 1}) == 0.0     # rank 11 is past the cut
    assert mrr_at(["x"] * 10 + ["a"], {"a": 1}, 11) == pytest.approx(1 / 11)
    assert mrr_at(["x", "a"], {"x": 0, "a": 1}) == 0.5     # judged 0 is not relevant


@pytest.mark.parametrize("metric", [lambda r, q: ndcg_at(r, q, 10), lambda r, q: recall_at(r, q, 10),
                                    lambda r, q: mrr_at(r, q, 10)])
def test_no_relevant_documents_gives_zero(metric):
    assert metric(["a", "b"], {}) == 0.0
    assert metric(["a", "b"], {"a": 0}) == 0.0
    assert metric([], {"a": 1}) == 0.0


def test_percentile_examples():
    assert percentile([], 50) == 0.0
    assert percentile([5.0], 99) == 5.0
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10, 1, 7], 0) == 1
    assert percentile([10, 1, 7], 100) == 10
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95) == pytest.approx(9.55)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=60),
       q=st.floats(min_value=0, max_value=100))
def test_percentile_matches_numpy(values, q):
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-9, abs=1e-6)
