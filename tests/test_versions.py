"""Near-identical versions (search/versions.py): the share of wording two texts have."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sensetree.search.versions import VERSION_SHARE, shared, shingles

REPORT = ("The quarterly report shows revenue of 4.2 million, up eight percent on the year. Costs rose with the new "
          "warehouse in Ghent. The board approved the budget for the second half and asked for a hiring plan. ")


@given(st.text(max_size=400), st.text(max_size=400))
def test_the_share_is_symmetric_and_bounded(one, other):
    a, b = shingles(one), shingles(other)
    assert shared(a, b) == shared(b, a)
    assert 0.0 <= shared(a, b) <= 1.0
    assert shared(a, a) == (1.0 if a else 0.0)


def test_an_edited_copy_is_a_version_and_another_text_on_the_topic_is_not():
    edited = REPORT.replace("up eight percent", "up nine percent") + "A correction was issued in May."
    other = ("Revenue for the quarter reached 4.2 million. The new warehouse in Ghent raised costs, and the board "
             "wants a hiring plan before it approves the budget for the second half.")
    assert shared(shingles(REPORT), shingles(edited)) >= VERSION_SHARE
    assert shared(shingles(REPORT), shingles(other)) < 0.1  # the same facts, other words
    assert shingles("Quarterly REPORT, shows") == shingles("quarterly report shows")  # case and punctuation aside
