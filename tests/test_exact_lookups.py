"""Exact things found exactly (design §2.2, §2.4): a word as written, an identifier, a number or version, a
file's own name and a quoted phrase bring back the file that holds them first; the analysis on its own,
the fusion on its own, then the engine on a real folder with every vector present."""

from __future__ import annotations

import string

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sensetree.operations import SearchParams, StatusParams
from sensetree.search.fusion import both_fusion
from sensetree.search.types import Candidate
from sensetree.store.terms import analyse, identifiers, name_terms, phrases, query_parts, written_terms

E5 = "multilingual-e5-small-int8"


# --- the analysis ---------------------------------------------------------------------------------------------


def test_identifiers_are_kept_whole_beside_their_pieces():
    terms = analyse("Define HAVE_LIBGEN_H, call parsePathspec() from gcc/testsuite/test_file.c in 1.7.3.3, "
                    "see INV-2024-0042 of 2000.09.17 and mail a.b@example.org", "en").terms.split()
    for whole in ("have_libgen_h", "1.7.3.3", "inv-2024-0042", "2000.09.17", "a.b@example.org", "example.org",
                  "gcc/testsuite/test_file.c", "test_file.c"):
        assert whole in terms, whole
    for piece in ("libgen", "pars", "pathspec", "parsepathspec", "2024", "0042", "exampl"):
        assert piece in terms, piece


def test_a_query_asks_what_it_typed_apart_from_the_pieces():
    assert query_parts("HAVE_LIBGEN_H", ["en"])[:3] == ("have_libgen_h libgen h libg", "", "have_libgen_h")
    typed, pieces, *_ = query_parts("relnotes 1.8", ["en"])
    assert typed.split() == ["relnotes", "relnot", "1.8"] and pieces.split() == ["1", "8"]  # its numbers are not
    assert query_parts("2.15.1.txt", ["en"])[:3] == ("2.15.1.txt txt", "2 15 1", "2.15.1.txt")
    assert query_parts("IL-6 in beta-cell", ["en"])[0].split()[:2] == ["il-6", "beta-cell"]
    assert query_parts("parsePathspec", ["en"])[0].split()[0] == "parsepathspec"
    assert written_terms("the definite answer", ["en"]) == "definite answer"  # no stem, no stop word
    assert written_terms("2.15.1.txt", ["en"]) == ""  # an identifier's pieces are not words as written


def test_a_name_holds_itself_without_its_extension_and_its_folders():
    names = name_terms("/usr/share/doc/git/RelNotes/1.8.0.txt").split()
    assert {"1.8.0.txt", "1.8.0", "1.8", "relnotes", "rel", "notes", "git"} <= set(names)
    assert "usr" not in names  # only the nearest folders
    assert len(names) == len(set(names))


def test_phrases_are_the_quoted_runs():
    assert phrases('tender "submission cut-off" and \u201cmain hall\u201d') == ["submission cut-off", "main hall"]
    assert phrases('an "unclosed quote') == [] and phrases('""') == []


connector = st.sampled_from(["_", ".", "-", "/", ":", "@"])
part = st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=6)
word = st.text(alphabet=string.ascii_letters, min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(part, min_size=2, max_size=4), connector, st.lists(word, max_size=6), st.lists(word, max_size=6))
def test_an_identifier_anywhere_in_a_text_is_found_whole(parts, joint, before, after):
    """Whatever surrounds it, an identifier written with one connector is a term whole, and what a query that
    types it asks first is that whole."""
    identifier = joint.join(parts)
    text = " ".join([*before, identifier, *after])
    wholes, _ = identifiers(text)
    assert identifier in wholes
    assert identifier in analyse(text, "en").terms.split()
    assert identifier in query_parts(identifier)[0].split()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_analysed_into_terms_without_spaces(text):
    """Hostile text (controls, surrogates excepted by the extractor, any script) never breaks the analysis."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    analysis = analyse(text)
    assert all(term and not any(c.isspace() for c in term) for term in analysis.terms.split())
    wholes, pieces = identifiers(text)
    assert all(w in text.lower() for w in wholes)
    assert all(isinstance(part, str) for part in query_parts(text))


# --- the fusion ------------------------------------------------------------------------------------------------


def test_a_file_alone_in_holding_the_query_ranks_first_among_crowded_cosines():
    """The typo case: one file holds the (respelled) query word, BM25 10.1, every other file 0; E5's cosines all
    lie near 0.8 and two abstracts that hold none of the words are a hair nearer. Keywords that stand out are
    not discounted by a meaning scaled over so narrow a band."""
    neighbours = [(f"abstract{i}.txt", 0.82 - 0.001 * i, 0.0) for i in range(30)]
    dense = [Candidate(path, 0, "", "en", dense_rank=rank, cosine=cosine, bm25=bm25)
             for rank, (path, cosine, bm25) in enumerate(neighbours, start=1)]
    sparse = [Candidate("haeundae.txt", 0, "", "en", bm25_rank=1, bm25=10.1, cosine=0.81)]
    fused = both_fusion("haeundae beach", E5, dense, sparse)
    assert fused.candidates[0].path == "haeundae.txt" and fused.candidates[0].carried_by == "keywords"


def test_keywords_that_do_not_stand_out_stay_backed_by_meaning():
    """A flat keyword leg (no file twice the next) keeps the meaning backing: the far-off keyword match does
    not jump the file that means the question."""
    dense = [Candidate("answer.txt", 0, "", "en", dense_rank=1, cosine=0.90, bm25=6.0),
             Candidate("far.txt", 0, "", "en", dense_rank=2, cosine=0.70, bm25=0.0)]
    sparse = [Candidate(f"k{i}.txt", 0, "", "en", bm25_rank=i + 1, bm25=7.0 - 0.2 * i, cosine=0.72)
              for i in range(6)] + [Candidate("answer.txt", 0, "", "en", bm25_rank=7, bm25=6.0, cosine=0.90)]
    fused = both_fusion("what does the harbour master record each evening", E5, dense, sparse)
    assert fused.candidates[0].path == "answer.txt"


# --- the engine, on a real folder, every vector present ---------------------------------------------------------

FILLER = ("The maintainers fixed several problems in this release. Documentation was updated and the build "
          "system learned to find its libraries on more platforms. ")
DEFINITIONS = ("A definition of each option is given below; every option is defined once and the definitions "
               "are kept in one place, so that defining a new one is easy. ")


@pytest.fixture(scope="module")
def folder(tmp_path_factory, make_engine, write_tree):
    root = tmp_path_factory.mktemp("exact") / "docs"
    files = {f"notes/defs{i}.txt": DEFINITIONS * 3 + FILLER for i in range(12)}
    files.update({
        "notes/answer.txt": FILLER + "The answer is definite: the release ships on Monday.",
        "src/config.h": FILLER + "#ifdef HAVE_LIBGEN_H\n#include <libgen.h>\n#endif\n",
        "src/other.h": FILLER + "We have libgen support where the h files allow it. Have a look.\n" * 3,
        "src/pathspec.c": FILLER + "int parsePathspec(const char *spec);\n",
        "changes/NEWS": FILLER + "Version 1.7.3.4 and 3.3.1.7 and 1.7.2.3 came out; 1.7 was long ago.\n" * 4,
        "changes/versions.txt": FILLER + "This build is 1.7.3.3, the one after the last.\n",
        "RelNotes/1.8.0.txt": FILLER + "Release notes of the autumn release.\n",
        "RelNotes/2.15.1.txt": FILLER + "Release notes of a fix release.\n",
        "changes/changelog": FILLER + "2.15.1 2.15.1 2.15.1: fixes of 2.15.1 txt handling, 2.15.1 again.\n",
        "BUG-REPORT": "How to tell the maintainers about a problem you found.\n",
        "howto/quoting.txt": FILLER + "Always use properly quoting pathnames in scripts.\n",
        "howto/unquoted.txt": FILLER + "Pathnames need quoting, properly, in scripts.\n" * 2,
    })
    written = write_tree(root, files)
    with make_engine(tmp_path_factory.mktemp("data"), root, settings={"retrieval.rerank": False}) as engine:
        yield engine, {relative: str(path) for relative, path in written.items()}


def _first(engine, query: str, n: int = 1) -> list[str]:
    return [r.path for r in engine.run(SearchParams(query, limit=10)).results][:n]


@pytest.mark.parametrize(("query", "expected"), [
    ("definite", "notes/answer.txt"),  # a word as written, whose stem twelve files hold
    ("HAVE_LIBGEN_H", "src/config.h"),  # an identifier, its pieces in another file many times
    ("libgen.h", "src/config.h"),
    ("pathspec", "src/pathspec.c"),  # a piece of an identifier still finds it
    ("parsePathspec", "src/pathspec.c"),
    ("1.7.3.3", "changes/versions.txt"),  # a version, its numbers in another file many times
    ("BUG-REPORT", "BUG-REPORT"),  # a file's own name
    ("2.15.1.txt", "RelNotes/2.15.1.txt"),  # ... under a file that says 2.15.1 five times
    ("relnotes 1.8", "RelNotes/1.8.0.txt"),  # a folder's name and a version's shorter form
    ('"properly quoting pathnames"', "howto/quoting.txt"),
])
def test_an_exact_thing_brings_its_file_first(folder, query, expected):
    engine, paths = folder
    phases = engine.run(StatusParams()).phases
    assert phases.semantic == phases.files  # every vector present: meaning buries nothing
    assert _first(engine, query) == [paths[expected]], query


def test_a_quoted_phrase_matches_in_that_order_only(folder):
    engine, paths = folder
    found = [r.path for r in engine.run(SearchParams('"properly quoting pathnames"', limit=10)).results]
    assert found == [paths["howto/quoting.txt"]]  # the same words in another order are no match
    definite = [r.path for r in engine.run(SearchParams('"definite"', limit=10)).results]
    assert definite == [paths["notes/answer.txt"]]  # a quoted word is never matched by its stem
    nothing = engine.run(SearchParams('"quoting properly pathnames scripts"', limit=10))
    assert not nothing.results
    assert nothing.notices == ['no file holds "quoting properly pathnames scripts" as written, in that order']


def test_a_piece_of_a_version_does_not_outweigh_the_whole(folder):
    engine, paths = folder
    ranked = [r.path for r in engine.run(SearchParams("1.7.3.3", limit=10)).results]
    assert ranked.index(paths["changes/versions.txt"]) < ranked.index(paths["changes/NEWS"])
    assert np.isfinite([r.score for r in engine.run(SearchParams("1.7.3.3", limit=10)).results]).all()


def test_an_index_from_before_gets_its_names_on_the_next_run(tmp_path, make_engine, write_tree):
    """A table written before the names existed answers searches as it did, and the next indexing run analyses
    it again (its vectors kept): then a file's name finds it."""
    root = tmp_path / "docs"
    written = write_tree(root, {"RelNotes/2.15.1.txt": FILLER + "Release notes of a fix release.\n",
                                "changes/changelog": FILLER + "2.15.1 fixes 2.15.1 txt handling; 2.15.1 again.\n"})
    with make_engine(tmp_path / "data", root) as engine:
        store = engine.store  # an earlier version's table made on purpose: its names dropped
        store.table.handle.drop_index("names_idx")
        store.table.handle.drop_columns(["names"])
        store.table.reopen()
        assert store.upkeep.unanalysed()
        assert engine.run(SearchParams("2.15.1.txt", limit=5)).results  # no error: the names are not asked
        vectors = store.queries.vectors_of(str(written["RelNotes/2.15.1.txt"]))
        engine.index()
        assert not store.upkeep.unanalysed()
        assert _first(engine, "2.15.1.txt") == [str(written["RelNotes/2.15.1.txt"])]
        assert (store.queries.vectors_of(str(written["RelNotes/2.15.1.txt"])) == vectors).all()
