"""A PDF page as people see it (pages.py): a cited sentence found on its page with boxes, the page rendered."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from sensetree import pages
from sensetree.errors import BadInput
from sensetree.explorer import find_quote

PAGES = [
    "The tender for the Harbour Street depot closes on 14 March. Offers arrive sealed at the front desk, "
    "with the bank guarantee and the signed schedule of rates. Late offers are returned unopened.",
    "Hollowbrook Ltd closed the third quarter with total revenue of EUR 4.82 million, an increase of "
    "12.4 percent. Growth came mainly from the industrial pumps division, whose sales rose to EUR 2.31 "
    "million, while the maintenance contracts business held steady at EUR 1.65 million.",
    "For the fourth quarter the board expects revenue between EUR 5.0 and 5.3 million. The order "
    "backlog stood at EUR 3.4 million on 30 September. The dividend policy is unchanged.",
]


@pytest.fixture(scope="module")
def pdf(tmp_path_factory) -> bytes:
    from fpdf import FPDF

    document = FPDF()
    document.set_font("helvetica", size=12)
    for text in PAGES:
        document.add_page()
        document.multi_cell(0, 8, text)
    path = Path(tmp_path_factory.mktemp("pages")) / "three.pdf"
    document.output(str(path))
    return path.read_bytes()


def test_a_sentence_is_found_on_its_page_with_one_box_per_line(pdf):
    sentence = ("Growth came mainly from the industrial pumps division, whose sales rose to EUR 2.31 million, "
                "while the maintenance contracts business held steady at EUR 1.65 million.")
    mark = pages.find_sentence(pdf, sentence, find_quote, near_page=2)
    assert mark is not None and mark.page == 2
    assert len(mark.boxes) >= 2  # it wraps onto a second line
    for left, top, right, bottom in mark.boxes:
        assert 0 <= left < right <= 1 and 0 <= top < bottom <= 1
    tops = [box[1] for box in mark.boxes]
    assert tops == sorted(tops)  # line by line, down the page
    assert mark.aspect == pytest.approx(210 / 297, rel=0.01)  # A4, fpdf's default
    assert mark.as_dict()["page"] == 2


def test_the_search_starts_at_the_chunks_page_and_goes_to_the_others(pdf):
    sentence = "The dividend policy is unchanged."
    assert pages.find_sentence(pdf, sentence, find_quote, near_page=1).page == 3
    assert pages.find_sentence(pdf, sentence, find_quote, near_page=99).page == 3  # past the end: the last page


def test_a_sentence_the_text_layer_lacks_gives_none(pdf):
    assert pages.find_sentence(pdf, "The vault code is 1234.", find_quote) is None
    assert pages.find_sentence(pdf, "   ", find_quote) is None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_run_of_words_from_a_page_is_marked_on_that_page(pdf, data):
    page = data.draw(st.integers(1, len(PAGES)))
    words = PAGES[page - 1].split()
    start = data.draw(st.integers(0, len(words) - 3))
    end = data.draw(st.integers(start + 3, min(len(words), start + 40)))
    sentence = " ".join(words[start:end])
    mark = pages.find_sentence(pdf, sentence, find_quote, near_page=page)
    assert mark is not None and mark.page == page
    assert mark.boxes and all(0 <= v <= 1 for box in mark.boxes for v in box)


def test_a_page_is_rendered_as_a_png_of_the_asked_width(pdf):
    image = Image.open(io.BytesIO(pages.render_page(pdf, 2, width=600)))
    assert image.format == "PNG" and image.width == 600
    assert image.height == pytest.approx(600 * 297 / 210, abs=2)
    with pytest.raises(BadInput, match="3 page"):
        pages.render_page(pdf, 4)
