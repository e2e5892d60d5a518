"""Property tests on arbitrary input: the chunker, path normalisation and scope predicates.

tests/test_chunker.py and tests/test_paths.py check the rules on chosen examples and on
well-formed words; here hypothesis throws any Unicode at them (combining marks, CR/LF mixes,
NULs, tabs, RTL, emoji, Windows and POSIX paths with quotes, ``%``, ``_`` and backslashes),
and the scope predicates run inside a real LanceDB table.
"""

from __future__ import annotations

import re
import unicodedata

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sensetree import paths
from sensetree.ingest.chunker import chunk_spans, chunk_text
from sensetree.ingest.extract import normalise
from sensetree.store.chunks import ChunkStore
from sensetree.store.table import ChunkRow

pytestmark = pytest.mark.slow  # a fault suite

# --- the chunker on any text ------------------------------------------------------------------

# Any code point but surrogates, weighted towards the separators the chunker cares about.
_any_char = st.characters(blacklist_categories=("Cs",))
_separator = st.sampled_from(["\n", "\n\n", "\r\n", "\r", " ", "\t", ". ", "! ", "? ", "\n \n", "\u00a0", "\x00"])
_accent = st.sampled_from(["e\u0301", "q\u0301", "\u1100\u1161", "A\u030a", "\u0915\u093c", "👩\u200d💻", "שלום", "ﷺ"])
_text = st.lists(st.one_of(_any_char, _separator, _accent, st.text(min_size=1, max_size=30)), max_size=120).map("".join)
_sizes = st.integers(min_value=1, max_value=300)
_overlaps = st.integers(min_value=-10, max_value=400)


def _squash(text: str) -> str:
    """The text without any whitespace: what the chunker may drop is whitespace, nothing else."""
    return re.sub(r"\s+", "", text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=_text, size=_sizes, overlap=_overlaps)
@example(raw="a\u0308" * 80, size=50, overlap=10)  # long runs that NFC composes
@example(raw="x" * 49 + "\u0301" + "y" * 60, size=50, overlap=0)  # a hard cut right before a combining mark
@example(raw="\x1c\x1d\x1e\x1f" * 10 + "word", size=50, overlap=5)  # separators Python counts as whitespace
def test_chunks_of_any_text(raw, size, overlap):
    text = normalise(raw)
    chunks = chunk_text(text, size, overlap)
    eff_size = max(size, 50)
    eff_overlap = max(0, min(overlap, eff_size // 2))

    assert chunks == chunk_text(text, size, overlap), "deterministic"
    assert bool(chunks) == bool(text.strip()), "non-blank text gives chunks, blank text none"
    for chunk in chunks:
        assert chunk and chunk == chunk.strip(), "no empty or padded chunk"
        assert len(chunk) <= eff_size + eff_overlap
        assert "\r" not in chunk and "\x00" not in chunk

    # Covered in order: each chunk (whitespace aside) is the run of the text that starts at most
    # `overlap` characters before the previous chunk ends (the latest such run, so repeated
    # text is matched where it continues), and the last run reaches the end of the text.
    flat = _squash(text)
    end = 0
    for chunk in chunks:
        piece = _squash(chunk)
        start = flat.rfind(piece, max(0, end - eff_overlap), end + len(piece))
        assert start != -1, f"{chunk!r} is not the run that follows {flat[max(0, end - eff_overlap):end]!r}"
        end = max(end, start + len(piece))
    assert end == len(flat), f"the end of the text is in no chunk: {flat[end:]!r}"


@settings(max_examples=200, deadline=None)
@given(raw=_text, size=_sizes, overlap=_overlaps)
def test_each_chunk_knows_where_its_own_text_sits(raw, size, overlap):
    """text[start:end] holds the chunk's own units (the overlap it repeats aside): what pages are read from."""
    text = normalise(raw)
    spans = chunk_spans(text, size, overlap)
    assert [c.text for c in spans] == chunk_text(text, size, overlap)
    previous = 0
    for chunk in spans:
        assert previous <= chunk.start < chunk.end <= len(text)
        assert _squash(chunk.text).endswith(_squash(text[chunk.start:chunk.end]))
        previous = chunk.start


@settings(max_examples=200, deadline=None)
@given(raw=_text, size=_sizes, overlap=_overlaps)
def test_a_chunk_that_fits_is_a_fixed_point(raw, size, overlap):
    """Chunking a chunk that fits again gives the chunk back: no stage rewrites text it keeps."""
    for chunk in chunk_text(normalise(raw), size, overlap):
        if len(chunk) <= max(size, 50):
            assert chunk_text(chunk, size, overlap) == [chunk]


@settings(max_examples=300, deadline=None)
@given(raw=_text)
@example(raw="\r\r\n\n\r")
@example(raw="e\u0301\x00\u0301")
def test_normalise_is_idempotent_and_canonical(raw):
    once = normalise(raw)
    assert normalise(once) == once
    assert unicodedata.is_normalized("NFC", once)
    assert "\r" not in once and "\x00" not in once
    # What is left is the text itself, whitespace aside; byte order marks at the start are dropped.
    assert _squash(once) == _squash(unicodedata.normalize("NFC", raw.replace("\x00", ""))).lstrip("\ufeff")


@settings(max_examples=200, deadline=None)
@given(raw=_text, size=_sizes, overlap=_overlaps)
def test_chunks_of_nfc_text_stay_nfc(raw, size, overlap):
    """A cut never splits a character from the mark NFC would compose it with."""
    for chunk in chunk_text(normalise(raw), size, overlap):
        assert unicodedata.is_normalized("NFC", chunk), chunk


# --- path rules on any name ----------------------------------------------------------------------

# Segment names as users make them: quotes, LIKE wildcards, dots, spaces, Unicode, emoji.
_segment = st.text(
    alphabet=st.one_of(st.sampled_from("abcXYZ019 '\"%_.-~$()[]{}#!;,=+é€ßİıΣσςµ😀שא"), _any_char),
    min_size=1, max_size=12,
).filter(lambda s: s not in (".", "..") and "/" not in s and "\\" not in s and "\x00" not in s and s.strip() == s)
_segments = st.lists(_segment, min_size=1, max_size=5)
_drive = st.sampled_from(["C:", "c:", "D:", "z:"])


def _posix(segments: list[str]) -> str:
    return "/" + "/".join(segments)


def _windows(drive: str, segments: list[str], sep: str = "\\") -> str:
    return drive + sep + sep.join(segments)


@settings(max_examples=300, deadline=None)
@given(segments=_segments, junk=st.lists(st.sampled_from(["", ".", "..", "x/..", "./"]), max_size=4),
       trailing=st.booleans())
def test_normalize_posix_is_idempotent_and_clean(segments, junk, trailing):
    raw = _posix(segments) + "/" + "/".join(junk) + ("/" if trailing else "")
    once = paths.normalize(raw)
    assert paths.normalize(once) == once
    assert once.startswith("/") and "//" not in once
    assert once == "/" or not once.endswith("/")
    assert all(part not in (".", "..") for part in once.split("/"))


@settings(max_examples=300, deadline=None)
@given(drive=_drive, segments=_segments, sep=st.sampled_from(["\\", "/"]), trailing=st.booleans(),
       junk=st.lists(st.sampled_from([".", "..", ""]), max_size=3))
def test_normalize_windows_is_idempotent_and_clean(drive, segments, sep, trailing, junk):
    raw = _windows(drive, segments + junk, sep) + (sep if trailing else "")
    once = paths.normalize(raw)
    assert paths.normalize(once) == once
    assert paths.is_windows_path(once)
    assert once[0].isupper() and once[1:3] == ":\\" and "/" not in once
    assert "\\\\" not in once[2:]
    assert once.endswith(":\\") or not once.endswith("\\")


@settings(max_examples=300, deadline=None)
@given(folder=_segments, child=_segments, sibling_tail=_segment, windows=st.booleans(), drive=_drive)
def test_is_under_agrees_with_folder_prefix(folder, child, sibling_tail, windows, drive):
    root = _windows(drive, folder) if windows else _posix(folder)
    sep = "\\" if windows else "/"
    inside = root + sep + sep.join(child)
    sibling = root + sibling_tail  # shares the folder's name as a prefix: never inside it
    assert paths.is_under(root, root)
    assert paths.is_under(inside, root)
    assert not paths.is_under(sibling, root)
    assert paths.name_of(inside) == child[-1]
    assert paths.folder_prefix(root) == paths.normalize(root) + sep
    for path in (inside, sibling):
        by_prefix = paths.path_key(path).startswith(paths.path_key(root) + sep)
        assert paths.is_under(path, root) == by_prefix
    if windows:  # the Windows file system ignores case
        assert paths.is_under(inside.upper(), root.lower()) == paths.is_under(inside, root)


@settings(max_examples=200, deadline=None)
@given(a=_segments, b=_segments, c=_segments)
def test_is_under_is_transitive(a, b, c):
    outer = _posix(a)
    middle = outer + "/" + "/".join(b)
    inner = middle + "/" + "/".join(c)
    assert paths.is_under(inner, middle) and paths.is_under(middle, outer) and paths.is_under(inner, outer)
    assert not paths.is_under(outer, middle)


@settings(max_examples=200, deadline=None)
@given(text=st.text())
def test_sql_literal_round_trips(text):
    """A literal is one quoted token: strip the outer quotes and undouble, and the text is back."""
    literal = paths.sql_literal(text)
    assert literal[0] == literal[-1] == "'"
    inner = literal[1:-1]
    assert "'" not in inner.replace("''", "")
    assert inner.replace("''", "'") == text


# --- scope predicates inside a real LanceDB table --------------------------------------------------

DIM = 8


@pytest.fixture(scope="module")
def lance_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("scope-props")


_counter = iter(range(1_000_000))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scope=_segments, names=st.lists(_segment, min_size=1, max_size=6, unique=True),
       windows=st.booleans(), drive=_drive, case_flip=st.booleans())
def test_scope_predicate_selects_exactly_the_paths_under_the_scope(lance_dir, scope, names, windows, drive, case_flip):
    """Files inside the scope, in sibling folders sharing its prefix, with wildcards and quotes in
    their names, one level up and elsewhere: the predicate returns exactly the files inside."""
    sep = "\\" if windows else "/"
    root = _windows(drive, scope) if windows else _posix(scope)
    inside: set[str] = set()
    outside: set[str] = set()
    for name in names:
        inside |= {root + sep + name, root + sep + name + sep + "deeper.txt"}
        outside |= {
            root + name,                                   # a sibling sharing the prefix
            root + "_" + sep + name,                       # what a LIKE wildcard would match
            root + "%" + sep + name,
            root + sep + ".." + sep + "elsewhere" + sep + name,
        }
    inside = {paths.normalize(p) for p in inside}
    stored = sorted(inside | {paths.normalize(p) for p in outside})
    store = ChunkStore(lance_dir / f"t{next(_counter)}")
    rng = np.random.default_rng(0)
    rows = [ChunkRow(p, 0, "word", rng.standard_normal(DIM).astype(np.float32), "h", 0.0) for p in stored]
    store.writes.replace_files(stored, rows, "test-model", DIM)

    query_scope = root.swapcase() if windows and case_flip else root
    where = paths.scope_predicate(query_scope)
    expected = {p for p in stored if paths.is_under(p, query_scope)}
    assert inside <= expected
    found = {r["path"] for r in store.table.handle.search().where(where).select(["path"]).limit(10_000).to_list()}
    assert found == expected, where
    assert store.table.count(where) == len(expected)
