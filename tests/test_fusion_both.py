"""The 'both' fusion (design §2.4): every candidate judged by its meaning and its keywords."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sensetree.notices import meaning_sentence
from sensetree.search.fusion import both_fusion
from sensetree.search.types import Candidate

E5 = "multilingual-e5-small-int8"
ENGLISH = "what does the harbour master record in the ledger each evening"


def _legs(dense: list[tuple[str, float, float]], sparse: list[tuple[str, float, float | None]]):
    """Legs as the pipeline hands them over once complete: (file, cosine, bm25) each; a keyword hit whose
    cosine is None has no vector yet."""
    dense_hits = [Candidate(path, 0, "", "en", dense_rank=rank, cosine=cosine, bm25=bm25)
                  for rank, (path, cosine, bm25) in enumerate(dense, start=1)]
    sparse_hits = [Candidate(path, 0, "", "en", bm25_rank=rank, bm25=bm25, cosine=cosine)
                   for rank, (path, bm25, cosine) in enumerate(sparse, start=1)]
    return dense_hits, sparse_hits


def _order(fused) -> list[str]:
    return [c.path for c in fused.candidates]


scores = st.floats(min_value=0.01, max_value=50.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(scores, min_size=1, max_size=40, unique=True))
def test_without_any_vector_the_order_is_the_keyword_legs(bm25):
    """At no coverage, nothing but keywords: the fusion must rank exactly as BM25 alone."""
    ranked = sorted(((f"f{i}", score, None) for i, score in enumerate(bm25)), key=lambda hit: -hit[1])
    _, sparse = _legs([], ranked)
    assert _order(both_fusion(ENGLISH, E5, [], sparse)) == [path for path, _, _ in ranked]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(scores, st.one_of(st.none(), st.floats(0.5, 0.95))), min_size=2, max_size=40,
                unique_by=lambda hit: hit[0]))
def test_files_still_waiting_for_vectors_keep_their_keyword_order_among_themselves(hits):
    """A file without a vector is placed by its keywords alone: two such files never swap, however the
    files with vectors around them are judged."""
    ranked = sorted(((f"f{i}", score, cosine) for i, (score, cosine) in enumerate(hits)), key=lambda hit: -hit[1])
    _, sparse = _legs([], ranked)
    order = _order(both_fusion(ENGLISH, E5, [], sparse))
    waiting = [path for path, _, cosine in ranked if cosine is None]
    assert [path for path in order if path in waiting] == waiting


def test_a_keyword_leg_that_matches_only_names_gives_way_to_meaning():
    """English question over German files: BM25's first files share a name with the query but mean
    something else (low cosine); the file that means the question ranks first, carried by meaning."""
    dense, sparse = _legs(
        dense=[("answer.txt", 0.91, 1.5), ("near.txt", 0.86, 0.0), ("other.txt", 0.84, 0.0)],
        sparse=[("name1.txt", 9.0, 0.74), ("name2.txt", 8.5, 0.73), ("name3.txt", 8.0, 0.75),
                ("name4.txt", 7.0, 0.72), ("answer.txt", 1.5, 0.91)])
    fused = both_fusion(ENGLISH, E5, dense, sparse)
    assert _order(fused)[0] == "answer.txt" and fused.candidates[0].carried_by == "meaning"
    assert fused.explanation["dense"] == 0.3  # the legs' shares stay; each name match's keywords count little
    name = next(c for c in fused.candidates if c.path == "name1.txt")
    assert name.fused < 0.3 * fused.candidates[0].fused


GERMAN = {  # chunks the identifier is sure are German, one of them sharing a name with the question
    "hafen.txt": "Der Hafenmeister trägt jeden Abend die Schiffe, die eingelaufen sind, in das Hauptbuch ein.",
    "ledger.txt": "Das Ledger-Projekt wurde im Jahr 2019 gegründet und hat seinen Sitz in Hamburg, wo es wächst.",
    "harbour.txt": "Die Harbour-Bibliothek bietet eine einfache Schnittstelle für Netzwerke und wird oft genutzt.",
}


def _german_legs(lang: str = "de"):
    """English question over German files: two files share the words 'ledger' and 'harbour' with it and
    mean something else; the file that answers it shares none. Cosines as a multilingual model gives them:
    the answer nearest, the name matches not far below (one more file sets the pool's floor)."""
    cosines = {"hafen.txt": 0.88, "ledger.txt": 0.85, "harbour.txt": 0.84}
    bm25 = {"hafen.txt": 0.0, "ledger.txt": 9.0, "harbour.txt": 8.0}
    dense = [Candidate(path, 0, GERMAN[path], lang, dense_rank=rank, cosine=cosines[path], bm25=bm25[path])
             for rank, path in enumerate(cosines, start=1)]
    dense.append(Candidate("far.txt", 0, "", lang, dense_rank=4, cosine=0.78, bm25=0.0))
    sparse = [Candidate(path, 0, GERMAN[path], lang, bm25_rank=rank, bm25=bm25[path], cosine=cosines[path])
              for rank, path in enumerate(["ledger.txt", "harbour.txt"], start=1)]
    return dense, sparse


def test_words_shared_with_another_language_do_not_count_as_keywords():
    """The keyword evidence of a chunk surely in another language than a sure query counts at the floor:
    the German file that means the English question ranks first, carried by meaning. Had the chunks been
    taken for English, the name match would have ranked first on its keywords."""
    fused = both_fusion(ENGLISH, E5, *_german_legs())
    assert _order(fused)[0] == "hafen.txt" and fused.candidates[0].carried_by == "meaning"
    assert fused.explanation["keywords_in_other_languages"] == 2
    assert _order(both_fusion(ENGLISH, E5, *_german_legs(lang="en")))[0] == "ledger.txt"


def test_a_short_query_is_no_sure_language_and_keeps_its_keywords():
    """'harbour ledger' (under SURE_CHARS) could be a name in any language: nothing is discounted."""
    fused = both_fusion("harbour ledger", E5, *_german_legs())
    assert fused.explanation["keywords_in_other_languages"] == 0


def test_a_chunk_the_identifier_is_unsure_of_keeps_its_keywords():
    """Code, lists of names and changelogs get a language guess (stored as the chunk's language) with the
    query's language close behind: their keyword matches count whole for a question in that language."""
    code = 'static int ledger_close(struct harbour *h) { return h->fd >= 0 ? close(h->fd) : -1; }'
    dense = [Candidate("a.c", 0, code, "bcl", dense_rank=1, cosine=0.8, bm25=5.0)]
    sparse = [Candidate("a.c", 0, code, "bcl", bm25_rank=1, bm25=5.0, cosine=0.8)]
    assert both_fusion(ENGLISH, E5, dense, sparse).explanation["keywords_in_other_languages"] == 0


def test_keywords_that_mean_the_query_keep_their_say():
    """Same language: BM25's first files are also the nearest by meaning, so the keyword share stays."""
    dense, sparse = _legs(
        dense=[("a.txt", 0.90, 9.0), ("b.txt", 0.89, 8.0), ("c.txt", 0.80, 0.0)],
        sparse=[("a.txt", 9.0, 0.90), ("b.txt", 8.0, 0.89), ("d.txt", 7.5, 0.88)])
    fused = both_fusion(ENGLISH, E5, dense, sparse)
    assert fused.explanation["bm25"] >= 0.5
    assert _order(fused)[:2] == ["a.txt", "b.txt"] and _order(fused)[-1] == "c.txt"


def test_an_english_model_gets_no_say_on_a_query_it_cannot_read():
    dense, sparse = _legs(dense=[("x.txt", 0.9, 0.0)], sparse=[("y.txt", 5.0, 0.2)])
    fused = both_fusion("Какой город является столицей Франции и почему", "all-MiniLM-L6-v2", dense, sparse)
    assert fused.explanation["dense"] == 0.0 and _order(fused)[0] == "y.txt"


def test_each_candidate_says_which_signal_carried_it():
    dense, sparse = _legs(dense=[("m.txt", 0.95, 0.0)],
                          sparse=[("k.txt", 9.0, 0.80), ("w.txt", 4.0, None)])
    fused = both_fusion(ENGLISH, E5, dense, sparse)
    carried = {c.path: c.carried_by for c in fused.candidates}
    assert carried["w.txt"] == "keywords (no vector yet)"
    assert carried["m.txt"] == "meaning"
    assert fused.explanation["without_vector"] == 1


def test_the_coverage_in_words():
    assert meaning_sentence(5183, 1310, 3600.0, now=0.0).startswith("meaning for 1,310 of 5,183 files; the rest by about")
    assert meaning_sentence(10, 10, None) == "meaning for every file (10)"
    assert "once the semantic phase runs" in meaning_sentence(10, 3, None)
