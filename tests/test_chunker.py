"""Chunking (design §1.3): paragraphs, then sentences, then hard windows; greedy packing; word-aligned overlap."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sensetree.ingest.chunker import _overlap_tail, chunk_text
from sensetree.ingest.extract import normalise


def words(n: int, start: int = 0, stem: str = "w") -> list[str]:
    return [f"{stem}{i:03d}" for i in range(start, start + n)]


# --- empty input -----------------------------------------------------------------


@pytest.mark.parametrize("text", ["", " ", "\n", "\n\n\n", " \t \n \n\t ", "\r\n\r\n"])
def test_empty_or_blank_gives_no_chunks(text):
    assert chunk_text(text) == []
    assert chunk_text(normalise(text)) == []


def test_short_text_is_one_stripped_chunk():
    assert chunk_text("  Hello world.  \n") == ["Hello world."]


# --- paragraphs --------------------------------------------------------------------


def test_paragraphs_packed_greedily_and_kept_whole_without_overlap():
    p1, p2, p3 = "a" * 40, "b" * 40, "c" * 40
    text = f"{p1}\n\n{p2}\n  \n\n{p3}"
    # 40 + 2 + 40 = 82 fits in 100; adding "\n\n" + 40 would make 124.
    assert chunk_text(text, size=100, overlap=0) == [f"{p1}\n\n{p2}", p3]


def test_paragraph_that_fits_is_never_split():
    intro = "An introduction of some length, fifty chars long!!"
    para = "This paragraph has sentences. It fits in one chunk.\nSo it must stay whole, newline and all."
    closing = "The closing paragraph."
    assert len(intro) == 50 and len(para) == 91
    # Greedy packing by sentences would put "This paragraph has sentences." (29) after the intro
    # (50 + 2 + 29 <= 100); a paragraph that fits is one unit, so it moves whole to the next chunk.
    chunks = chunk_text(f"{intro}\n\n{para}\n\n{closing}", size=100, overlap=0)
    assert chunks == [intro, para, closing]


def test_overlap_is_the_word_aligned_tail_of_the_previous_chunk():
    p1 = " ".join(words(12))          # 12 * 5 - 1 = 59 chars
    p2 = " ".join(words(12, 12))      # 59 chars; 59 + 2 + 59 > 100
    # overlap 22: the last 22 characters "07 w008 w009 w010 w011" start mid-word ("w007"),
    # so the partial word and its space are dropped.
    assert p1[-22:] == "07 w008 w009 w010 w011"
    assert chunk_text(f"{p1}\n\n{p2}", size=100, overlap=22) == [p1, f"w008 w009 w010 w011 {p2}"]
    # overlap 20: the last 20 characters " w008 w009 w010 w011" start on the space: same words.
    assert p1[-20:] == " w008 w009 w010 w011"
    assert chunk_text(f"{p1}\n\n{p2}", size=100, overlap=20) == [p1, f"w008 w009 w010 w011 {p2}"]
    # overlap 19: "w008 w009 w010 w011" starts exactly on a word, but the rule drops up to the
    # first space, so only three words carry over (conservative, never a cut word).
    assert chunk_text(f"{p1}\n\n{p2}", size=100, overlap=19) == [p1, f"w009 w010 w011 {p2}"]


def test_overlap_never_starts_mid_word():
    p1 = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda"
    p2 = "x" * 60
    for overlap in range(0, 51):
        chunks = chunk_text(f"{p1}\n\n{p2}", size=100, overlap=overlap)
        assert chunks[0] == p1
        assert chunks[1].endswith(p2)
        tail = chunks[1][: -len(p2)].rstrip()
        if tail:
            assert p1.endswith(tail)
            start = len(p1) - len(tail)
            assert p1[start - 1] == " ", (overlap, tail)
            assert len(tail) < overlap


def test_overlap_capped_at_half_the_size():
    p1 = " ".join(words(19))  # 94 chars
    p2 = " ".join(words(19, 19))
    capped = chunk_text(f"{p1}\n\n{p2}", size=100, overlap=500)
    assert capped == chunk_text(f"{p1}\n\n{p2}", size=100, overlap=50)
    tail = capped[1][: -len(p2)].rstrip()
    assert 0 < len(tail) < 50


def test_tail_without_a_space_gives_no_overlap():
    p1, p2 = "a" * 90, "b" * 90
    assert chunk_text(f"{p1}\n\n{p2}", size=100, overlap=50) == [p1, p2]


def test_short_previous_chunk_keeps_bound_size_plus_overlap():
    # The previous chunk is exactly `overlap` long and the next unit exactly `size`:
    # reusing the whole previous chunk plus a joining space would exceed size + overlap.
    prev = "x" * 20 + " " + "y" * 29       # 50 chars == overlap
    unit = ("word " * 20).strip()[:99] + "."  # 100 chars == size
    assert len(prev) == 50 and len(unit) == 100
    chunks = chunk_text(f"{prev}\n\n{unit}", size=100, overlap=50)
    assert all(len(c) <= 150 for c in chunks), [len(c) for c in chunks]
    assert chunks[0] == prev
    assert chunks[1] == "y" * 29 + " " + unit


def test_overlap_tail_helper():
    assert _overlap_tail("anything", 0) == ""
    assert _overlap_tail("short one", 20) == "short one"
    assert _overlap_tail("one two three four", 9) == "four"  # "hree four" -> after the space
    assert _overlap_tail("abcdefghij", 5) == ""


def test_minimum_size_is_fifty():
    text = " ".join(words(40))
    assert chunk_text(text, size=10, overlap=0) == chunk_text(text, size=50, overlap=0)
    assert all(len(c) <= 50 for c in chunk_text(text, size=10, overlap=0))


# --- sentences and hard windows ------------------------------------------------------


def test_long_paragraph_splits_on_sentences():
    s1 = "The first sentence talks about apples here."     # 43
    s2 = "The second one is all about bananas instead!"     # 44
    s3 = "Does the third mention cherries at all?"         # 39
    para = f"{s1} {s2} {s3}"
    assert len(para) > 100
    assert chunk_text(para, size=100, overlap=0) == [f"{s1} {s2}", s3]


def test_newline_inside_long_paragraph_is_a_sentence_break():
    line1 = "first line without a full stop " + "a" * 40
    line2 = "second line " + "b" * 50
    para = f"{line1}\n{line2}"
    assert len(para) > 100
    assert chunk_text(para, size=100, overlap=0) == [line1, line2]


def test_over_long_sentence_is_cut_into_windows_at_spaces():
    sentence = " ".join(words(50))  # 249 chars, no sentence end
    chunks = chunk_text(sentence, size=100, overlap=0)
    # Word i sits at [5i, 5i + 4) with a space at 5i + 4: the last space at or before index 100
    # is at 99, so each window holds 20 words (99 chars); 20 + 20 + 10 words.
    assert chunks == [" ".join(words(20)), " ".join(words(20, 20)), " ".join(words(10, 40))]
    assert " ".join(chunks) == sentence


def test_hard_window_may_end_exactly_at_size():
    # the space at index 100 is the window's best cut: the window is exactly 100 characters
    sentence = "x" * 60 + " " + "y" * 39 + " " + "z" * 50
    assert chunk_text(sentence, size=100, overlap=0) == ["x" * 60 + " " + "y" * 39, "z" * 50]


def test_word_longer_than_size_is_hard_cut():
    assert chunk_text("x" * 250, size=100, overlap=0) == ["x" * 100, "x" * 100, "x" * 50]
    assert chunk_text("x" * 250, size=100, overlap=50) == ["x" * 100, "x" * 100, "x" * 50]


def test_sizes_bounded_on_realistic_text():
    para = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 12
    text = "\n\n".join([para, "Short paragraph.", para * 3, "x" * 3000, para])
    for size, overlap in [(1000, 200), (300, 100), (120, 500), (50, 25)]:
        chunks = chunk_text(text, size=size, overlap=overlap)
        cap = min(overlap, size // 2)
        assert chunks
        assert all(0 < len(c) <= max(size, 50) + cap for c in chunks)


def test_defaults_are_1000_and_200():
    text = "\n\n".join(" ".join(words(30, 30 * i)) + "." for i in range(20))
    assert chunk_text(text) == chunk_text(text, 1000, 200)
    assert all(len(c) <= 1200 for c in chunk_text(text))


# --- normalisation -------------------------------------------------------------------------


def test_normalise_nfc():
    nfd = "cafe\u0301 re\u0301sume\u0301"
    out = normalise(nfd)
    assert out == "café résumé"
    assert out == unicodedata.normalize("NFC", nfd)
    assert "\u0301" not in out
    assert chunk_text(normalise("e\u0301")) == ["é"]


def test_normalise_newlines_and_nul():
    assert normalise("a\r\nb\rc\nd") == "a\nb\nc\nd"
    assert normalise("nul\x00byte") == "nulbyte"


def test_crlf_paragraphs_split_like_lf_after_normalize():
    p1, p2 = "a" * 60, "b" * 60
    crlf = f"{p1}\r\n\r\n{p2}\r\n"
    lf = f"{p1}\n\n{p2}\n"
    assert chunk_text(normalise(crlf), size=100, overlap=0) == chunk_text(lf, size=100, overlap=0) == [p1, p2]


# --- properties ------------------------------------------------------------------------------

_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyzé", min_size=1, max_size=12)
_sentence = st.tuples(st.lists(_word, min_size=1, max_size=25), st.sampled_from([".", "!", "?", "", ","]))
_paragraph = st.tuples(st.lists(_sentence, min_size=1, max_size=8), st.sampled_from([" ", "\n", "  "]))
_document = st.tuples(st.lists(_paragraph, min_size=1, max_size=10), st.sampled_from(["\n\n", "\n \n", "\n\t\n\n"]))


def render(doc) -> tuple[str, list[str]]:
    """Text plus its tokens; every word is made unique by a counter so positions are unambiguous."""
    paragraphs, para_sep = doc
    counter = 0
    tokens: list[str] = []
    rendered = []
    for sentences, sent_sep in paragraphs:
        parts = []
        for sentence_words, end in sentences:
            ws = []
            for w in sentence_words:
                ws.append(f"{w}{counter}")
                counter += 1
            ws[-1] += end
            tokens.extend(ws)
            parts.append(" ".join(ws))
        rendered.append(sent_sep.join(parts))
    return para_sep.join(rendered), tokens


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_document, size=st.integers(min_value=1, max_value=400), overlap=st.integers(min_value=-5, max_value=400))
def test_chunking_properties(doc, size, overlap):
    text, tokens = render(doc)
    position = {t: i for i, t in enumerate(tokens)}
    chunks = chunk_text(text, size=size, overlap=overlap)
    eff_size = max(size, 50)
    eff_overlap = max(0, min(overlap, eff_size // 2))

    assert chunks, "non-blank text gives at least one chunk"
    assert chunk_text(text, size=size, overlap=overlap) == chunks  # deterministic

    runs = []
    for chunk in chunks:
        assert 0 < len(chunk) <= eff_size + eff_overlap
        assert chunk == chunk.strip()
        chunk_tokens = chunk.split()
        # every token of a chunk is a whole token of the input (words are <= 25 chars, so hard
        # windows always find a space), and the chunk is a contiguous run of the input
        assert all(t in position for t in chunk_tokens), chunk
        first = position[chunk_tokens[0]]
        assert chunk_tokens == tokens[first:first + len(chunk_tokens)]
        runs.append((first, first + len(chunk_tokens)))

    # in input order, nothing lost: runs start at 0, advance, and leave no gap
    assert runs[0][0] == 0
    assert runs[-1][1] == len(tokens)
    for (s0, e0), (s1, e1) in zip(runs, runs[1:]):
        # s0 == s1 only when the whole previous chunk (shorter than the overlap) is the overlap
        assert s0 <= s1 and e0 < e1
        assert s1 <= e0, "a gap: some words are in no chunk"
        if eff_overlap == 0:
            assert s1 == e0

    covered = {t for c in chunks for t in c.split()}
    assert covered == set(tokens)


@settings(max_examples=400, deadline=None)
@given(paragraphs=st.lists(st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=24),
                           min_size=2, max_size=8),
       size=st.integers(min_value=50, max_value=70), overlap=st.integers(min_value=0, max_value=40))
@example(paragraphs=[[5, 5, 5, 7], [9, 9, 9, 9, 8, 1]], size=50, overlap=25)  # 25-char chunk, then a 50-char unit
def test_size_bound_with_short_paragraphs(paragraphs, size, overlap):
    """Many short paragraphs near the overlap length: the bound size + overlap must hold exactly."""
    text = "\n\n".join(" ".join("x" * n for n in para) for para in paragraphs)
    cap = min(overlap, size // 2)
    chunks = chunk_text(text, size=size, overlap=overlap)
    assert all(len(c) <= size + cap for c in chunks), [len(c) for c in chunks]
    assert sum(c.count("x") for c in chunks) >= text.count("x")
