"""The keyword leg's text analysis (store/terms.py) and the store's derived columns."""

from __future__ import annotations

import unicodedata

import lancedb
import numpy as np
import pyarrow as pa
import pytest

from sensetree.store.chunks import ChunkStore
from sensetree.store.table import FTS_COLUMN, ChunkRow
from sensetree.store.terms import (
    SAMPLE_EVERY,
    _word_terms,
    _words,
    analyse,
    analyse_document,
    content_words,
    detect_language,
    marked_terms,
    match_keys,
    query_languages,
    query_terms,
)

GERMAN = "Die Bundesregierung hat die Änderungen des Kündigungsschutzgesetzes für Arbeitnehmer beschlossen."
ENGLISH = "The researchers were running several experiments on proteins and their foldings in living cells."


def terms(text: str, language: str | None = None) -> list[str]:
    return analyse(text, language).terms.split()


def test_each_chunk_is_stemmed_in_its_own_language():
    german = analyse(GERMAN)
    assert german.language == "de"
    assert "beschloss" in german.terms.split()            # the German stemmer, never the English one
    assert "beschlossen" not in german.terms.split()
    english = analyse(ENGLISH)
    assert english.language == "en"
    assert {"run", "protein", "experi"} <= set(english.terms.split())


def test_stop_words_stay_in_chunks_and_leave_queries():
    assert {"die", "des"} <= set(analyse(GERMAN).terms.split())
    assert "the" in analyse(ENGLISH).terms.split()
    assert query_terms("Wie wurde über die Revision entschieden?", ["de"]).split()[0] == "wurde"
    assert "die" not in query_terms("Wie wurde über die Revision entschieden?", ["de"]).split()
    assert query_terms("the", ["en"]) == "the"             # a query of stop words alone keeps them


def test_unknown_language_is_neither_stemmed_nor_stripped():
    assert terms("running proteins the", language="xx") == ["running", "proteins", "the"]
    assert analyse("12345 67-89").language is None and terms("12345 67-89") == ["12345", "67", "89", "67-89"]


def test_accents_fold_except_where_they_tell_words_apart():
    assert terms("élégant café Zürich", language="xx") == ["elegant", "cafe", "zurich"]
    assert terms("điểm thủ", language="vi") == ["điểm", "thủ"]


def test_nfc_and_nfd_give_the_same_terms():
    nfd = unicodedata.normalize("NFD", GERMAN)
    assert nfd != GERMAN
    assert analyse(nfd).terms == analyse(GERMAN).terms
    assert query_terms(unicodedata.normalize("NFD", "Kündigungsschutz")) == query_terms("Kündigungsschutz")


def test_thai_is_cut_into_dictionary_words():
    words = terms("บริษัทปูนซิเมนต์ไทยประกาศผลประกอบการไตรมาสที่สาม")
    assert {"บริษัท", "ไทย", "ประกาศ", "ไตรมาส"} <= set(words)
    assert all(len(w) < 12 for w in words)


def test_cjk_gets_characters_and_pairs_and_a_query_only_pairs():
    assert terms("华为手机", language="zh") == ["华", "为", "手", "机", "华为", "为手", "手机"]
    assert query_terms("华为手机") == "华为 为手 手机"
    assert query_terms("猫") == "猫"                        # a one-character word is still found


def test_mixed_text_keeps_every_part():
    stored = set(terms("华为发布了Mate 60 Pro手机，售价6999元。东京的スマートウォッチX200は29800円です。"))
    assert {"mate", "60", "pro", "6999", "华为", "手机", "x200", "29800", "スマ"} <= stored
    for query in ("Mate 60 Pro", "6999", "X200", "29800"):
        assert set(terms(query, language="xx")) <= stored, query   # as written: a zh chunk is not stemmed
    for query in ("华为", "手机", "スマートウォッチ", "29800円"):
        assert set(query_terms(query).split()) <= stored, query


def test_query_is_analysed_under_its_languages_and_unstemmed():
    assert query_languages("Kündigungsschutz für Arbeitnehmer")[0] == "de"
    german = query_terms("Kündigungsschutz für Arbeitnehmer").split()
    assert {"kundigungsschutz", "arbeitnehmer", "arbeitnehm"} <= set(german)
    english = query_terms("running experiments on proteins").split()
    assert {"run", "running", "protein", "proteins"} <= set(english)
    assert len(english) == len(set(english))
    assert query_terms("   ") == "" and query_languages("") == ()


def test_detection_reads_only_the_start():
    assert detect_language(ENGLISH * 4 + " " + GERMAN * 20) == "en"


def test_a_long_document_in_one_language_is_detected_on_samples():
    chunks = [GERMAN] * (4 * SAMPLE_EVERY) + ["1.2.3 -- 4.5.6"]
    chunks[5] = "Ergebnisse: ok, ok, ok"  # too short to tell on its own; the document is German
    analyses = analyse_document(chunks)
    assert [a.language for a in analyses] == ["de"] * (4 * SAMPLE_EVERY) + [None]  # no letters, no language
    assert analyses[1] == analyse(GERMAN)
    assert analyses[5].terms == analyse("Ergebnisse: ok, ok, ok", "de").terms


def test_a_document_whose_samples_disagree_is_detected_chunk_by_chunk():
    chunks = [GERMAN] * (SAMPLE_EVERY // 2) + [ENGLISH] * (SAMPLE_EVERY // 2 + 1)  # samples: the first and last
    assert analyse_document(chunks) == [analyse(text) for text in chunks]
    assert analyse_document([]) == [] and analyse_document([ENGLISH]) == [analyse(ENGLISH)]


@pytest.mark.parametrize("language", ["de", "en", "hi", "vi", None])
def test_remembered_terms_equal_terms_made_afresh(language):
    words = "die häuser laufen running experiments beschlossen कार्यों Việt übergrößen running".split()
    assert _words(words, language) == _word_terms(words, language)
    assert _words(words, language) == _word_terms(words, language)  # the second time from the cache


def _old_table(directory, rows: int = 6):
    """A chunks table as written before the analysed columns existed."""
    db = lancedb.connect(str(directory))
    rng = np.random.default_rng(0)
    texts = [f"Rechnung Nummer {n} für die Beratung" if n % 2 else f"Invoice number {n} for consulting" for n in range(rows)]
    data = pa.table({
        "path": [f"/docs/f{n}.txt" for n in range(rows)], "chunk_index": pa.array([0] * rows, pa.int32()),
        "text": texts,
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(rows * 4, dtype=np.float32)), 4),
        "content_hash": ["h"] * rows, "mtime": pa.array([0.0] * rows), "embed_model": ["m"] * rows})
    table = db.create_table("chunks", data=data)
    from lancedb.index import FTS

    table.create_index("text", config=FTS())
    return data


def test_a_table_from_before_is_analysed_on_its_first_keyword_build(tmp_path):
    old = _old_table(tmp_path / "db")
    store = ChunkStore(tmp_path / "db")
    assert FTS_COLUMN not in store.table.handle.schema.names
    assert [h["path"] for h in store.queries.dense(np.ones(4, np.float32), 10)]  # dense reads work before the migration
    store.upkeep.build_fts_index()
    assert {"lang", FTS_COLUMN} <= set(store.table.handle.schema.names)
    assert store.upkeep.has_fts_index()
    assert sorted(i.columns for i in store.table.handle.list_indices() if i.index_type == "FTS") == [
        ["names"], [FTS_COLUMN], ["text"]
    ]
    hits = store.queries.sparse("Beratung", 10)
    assert [h["path"] for h in store.queries.sparse('"Nummer 3 für"', 10)] == ["/docs/f3.txt"]  # positions now
    assert {h["path"] for h in hits} == {f"/docs/f{n}.txt" for n in (1, 3, 5)}
    assert {h["lang"] for h in hits} == {"de"}
    after = store.table.handle.search().select(["path", "vector"]).limit(None).to_arrow().sort_by("path")
    assert after["vector"].to_pylist() == old.sort_by("path")["vector"].to_pylist()  # no re-embedding


def test_a_write_to_a_table_from_before_migrates_it(tmp_path):
    _old_table(tmp_path / "db")
    store = ChunkStore(tmp_path / "db")
    row = ChunkRow("/docs/new.txt", 0, "Invoice number 99 for an audit", np.ones(4, np.float32), "h", 1.0)
    store.writes.replace_files([row.path], [row], "m", 4)
    assert store.table.count(f"{FTS_COLUMN} IS NULL") == 0
    assert [h["path"] for h in store.queries.sparse("audit", 5)] == ["/docs/new.txt"]


@pytest.mark.parametrize("query", ["", "   ", "!!!", "the"])
def test_a_query_without_terms_finds_nothing_without_error(tmp_path, query):
    _old_table(tmp_path / "db")
    store = ChunkStore(tmp_path / "db")
    store.upkeep.build_fts_index()
    assert store.queries.sparse(query, 5) == []


def test_the_words_to_mark_drop_the_stop_words_of_the_querys_language():
    assert marked_terms("When is the tender submission deadline?") == ["submission", "deadline", "tender"]
    german = marked_terms("Wann ist die Frist für die Abgabe des Angebots?")
    assert "angebots" in german and "frist" in german and not {"die", "des", "ist"} & set(german)
    assert marked_terms("") == [] and marked_terms("a ! ?") == []
    assert marked_terms("INVOICE invoice") == ["invoice"]  # once, lower case


def test_words_keep_their_combining_marks():
    """A matra or a tone mark is part of its word: splitting there made XQuAD-hi's BM25 fall from 0.96 to 0.75."""
    assert analyse("भारत की राजधानी नई दिल्ली है", "hi").terms.split()[0] == "भारत"
    assert "दिल्ली" in marked_terms("भारत की राजधानी नई दिल्ली है")


def test_snippets_and_the_assistant_read_words_through_the_one_module():
    assert match_keys("Invoices, invoiced!") == {"invoi"}
    assert match_keys("Café") == {"cafe"}
    assert content_words("The invoice of Ana's shop is 42 euros") == ["invoice", "ana", "shop", "42", "euros"]


REFUSE_TEMPORARY_FILES = """
import json, sys, tempfile
def refuse(*args, **kwargs):
    raise OSError(28, "No space left on device (the temporary folder)")
tempfile.TemporaryFile = refuse  # what py3langid's own loader unpacks its 65 MB into, every time
from sensetree.store import terms
print(json.dumps(terms.text_languages(sys.argv[1])))
"""


def test_the_language_model_is_unpacked_once_per_user_not_into_the_temporary_folder(tmp_path):
    """Issue 42: every process unpacked py3langid's model (65 MB) into the temporary folder, about 0.6 s
    before its first query; now the user's cache holds it unpacked, named by the packed file's hash."""
    import json
    import os
    import subprocess
    import sys

    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    text = "Das ist ein deutscher Satz über Häuser, Bäume und die Straßenbahn der Stadt."
    answers = []
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", REFUSE_TEMPORARY_FILES, text], capture_output=True, text=True,
                             env=environment, timeout=120)
        assert run.returncode == 0, run.stderr
        answers.append(json.loads(run.stdout))
        unpacked = list((tmp_path / "cache" / "sensetree" / "models").glob("py3langid-*/*.npy"))
        assert len(unpacked) == 6
        if len(answers) == 1:
            written = {path: path.stat().st_mtime_ns for path in unpacked}
    assert {path: path.stat().st_mtime_ns for path in unpacked} == written  # the second process only read it
    wheel = dict(LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True).rank(text))
    assert answers[0] == answers[1] and max(answers[0], key=answers[0].get) == "de"
    assert answers[0] == pytest.approx({lang: p for lang, p in wheel.items() if lang in answers[0]}, rel=1e-4)
