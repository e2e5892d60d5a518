"""How the Ray pool cuts an embedding call for its workers (the cluster itself: tests/test_cluster.py)."""

from __future__ import annotations

from hypothesis import given, strategies as st

from sensetree.ingest.distributed import _runs


def test_runs_are_of_about_equal_length_not_equal_count():
    texts = ["a" * 1000, "b" * 10, "c" * 10, "d" * 990, "e" * 500, "f" * 500]
    assert [sum(map(len, run)) for run in _runs(texts, 3)] == [1010, 1000, 1000]


def test_one_run_per_text_at_most():
    assert _runs(["only"], 8) == [["only"]]


@given(st.lists(st.text(max_size=50), min_size=1, max_size=60), st.integers(min_value=1, max_value=16))
def test_runs_keep_every_text_in_order_and_none_is_empty(texts, count):
    runs = _runs(texts, count)
    assert [t for run in runs for t in run] == texts
    assert 1 <= len(runs) <= min(count, len(texts))
    assert all(runs)
