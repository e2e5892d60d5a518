"""Typos forgiven (search/spelling.py): a query word that no file has is searched as the nearest indexed
word, and the answer says so; the pure stage on its own, then the engine on a real folder."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sensetree.operations import SearchParams
from sensetree.search.spelling import (MIN_LETTERS, checked_words, choose, corrections, distance, edit_distance,
                                       folded, in_another_language, in_names, max_edits, name_words, notice, probes,
                                       respelled)
from sensetree.search.types import SearchResponse
from sensetree.operations import SetParams

letters = st.text(alphabet="abcdefghij", max_size=8)


@given(letters, letters)
def test_the_distance_is_symmetric_and_zero_only_for_equal_words(a, b):
    assert edit_distance(a, b) == edit_distance(b, a)
    assert (edit_distance(a, b) == 0) == (a == b)
    assert abs(len(a) - len(b)) <= edit_distance(a, b) <= max(len(a), len(b))


@given(st.text(alphabet="abcdefghij", min_size=2, max_size=8), st.data())
def test_one_typo_of_any_kind_is_one_edit(word, data):
    i = data.draw(st.integers(0, len(word) - 2))
    c = data.draw(st.sampled_from("klmn"))
    typos = [word[:i] + c + word[i + 1:], word[:i] + word[i + 1:], word[:i] + c + word[i:],
             word[:i] + word[i + 1] + word[i] + word[i + 2:]]
    for typo in typos:
        assert edit_distance(word, typo) <= 1
        assert edit_distance(word, typo, cap=0) <= 1


def test_the_edits_forgiven_grow_with_the_word():
    assert [max_edits("x" * n) for n in (4, 5, 6, 12)] == [1, 1, 2, 2]


def test_numbers_and_short_words_are_never_checked():
    assert checked_words("Q3 2024 tax of the Marchetty invoice2 invoice INVOICE") == ["marchetty", "invoice"]
    assert all(len(w) >= MIN_LETTERS for w in checked_words("a bb ccc dddd"))


def test_only_words_of_alphabetic_scripts_are_checked():
    """Arabic script's clitics and broken plurals, and scripts without spaces, make a missing form a real word."""
    assert checked_words("Сколько стоит билет Marchetty Ελλάδα") == ["сколько", "стоит", "билет", "marchetty", "ελλάδα"]
    assert checked_words("ماذا حدث في الثواني الأخيرة") == []
    assert checked_words("ลูค คีคลี แท็คเกิลไปกี่ครั้ง 美国的首都是哪里 नमस्ते दुनिया") == []


@given(st.dictionaries(st.text(alphabet="abcdef", min_size=1, max_size=7), st.integers(1, 50), max_size=12),
       st.text(alphabet="abcdef", min_size=4, max_size=7))
def test_the_choice_is_the_nearest_then_the_commonest(near, word):
    chosen = choose(word, [word], near)
    close = {t: c for t, c in near.items() if t != word and len(t) >= MIN_LETTERS and t[0] == word[0]
             and distance(word, [word], t)[0] <= max_edits(word)}
    if not close:
        assert chosen is None
        return
    assert chosen in close
    key = {t: (distance(word, [word], t)[1], distance(word, [word], t)[0], -c, -len(t)) for t, c in close.items()}
    assert key[chosen] == min(key.values())


def test_a_stem_is_near_the_beginning_of_a_misspelt_word():
    assert distance("prneatal", ["prneatal", "prneat"], "prenat") == (1, 0)  # its stem, transposed
    assert distance("relieviyg", ["relieviyg"], "reliev") == (0, 1)  # no stem: its beginning
    assert choose("prneatal", ["prneatal", "prneat"], {"prenat": 3}) == "prenat"
    assert choose("headches", ["headches", "headch"], {"head": 900, "headach": 12}) == "headach"
    assert choose("qzxwvutplk", ["qzxwvutplk"], {"quantum": 5, "qzx": 3}) is None
    assert choose("letter", ["letter"], {"butter": 7}) is None  # a typo seldom hits the first letter
    assert choose("chunks", ["chunks", "chunk"], {"check": 9}) is None  # two edits of a five-letter stem


def test_only_unknown_words_are_corrected():
    index = {"marchetti": 2, "marchetta": 9, "invoic": 40, "invoice": 1}
    asked = []

    def near(forms, edits):
        asked.append(forms)
        return index

    found = corrections("Marchetty invoice blorpzzzq", lambda w: [w], lambda forms: any(f in index for f in forms), near)
    assert found == {"marchetty": "marchetta"}  # both one edit away, as long: the commoner wins
    assert ["invoice"] not in asked  # a known word never looks for neighbours
    assert respelled("Marchetty INVOICE", {"marchetty": "Marchetti"}) == "Marchetti INVOICE"
    assert notice("marchetty invoice", {"marchetty": "marchetti"}) == (
        'showing results for "marchetti invoice" (searched for "marchetty invoice": no file has "marchetty"; '
        'search again with literal=true for the words as typed)')


def test_a_question_in_another_language_than_the_files_is_not_corrected():
    """Most of its words unknown to the index: another language, not typos. Each word taken alone would
    be "corrected" into a Turkish word beginning like it; none is. A typo among known words still is."""
    index = {"hangi": 3, "nerede": 5, "thanh": 1, "phoenix": 2, "toplam": 4}
    known = lambda forms: any(f in index for f in forms)  # noqa: E731
    near = lambda forms, edits: {"thành": 1, "nhiem": 2, "nhieu": 3, "phoenix": 2}  # noqa: E731
    assert corrections("Thành phố nào có nhiều người nhiệm vụ nhất", lambda w: [w], known, near,
                       is_word=lambda w: False) == {}
    assert corrections("phoenex toplam hangi nerede", lambda w: [w], known, near,
                       is_word=lambda w: False) == {"phoenex": "phoenix"}


def test_a_question_surely_in_a_language_the_index_does_not_hold_is_left_as_written():
    """Its unknown words are that language's, not typos; a short query or one in the files' language may hold typos."""
    question = "Tên của nhà lãnh đạo được Henry III thăng chức quý tộc là gì"
    assert in_another_language(question, ["tr"])
    assert not in_another_language(question, ["tr", "vi"])
    assert not in_another_language("marchetty invoice", ["it"])  # too short to tell its language
    assert not in_another_language("the invoices of the harbour master in marchetty", ["en"])
    assert not in_another_language(question, [])  # an empty index: nothing to compare with


def test_a_tie_goes_to_the_term_the_whole_index_holds_most():
    """The fuzzy match reads a few hundred chunks, the rarer terms' first: its counts may say "deal" is as
    common as "death" in a medical corpus. The index's own count settles a tie, and only a tie."""
    near = {"death": 10, "deal": 10, "dean": 3}
    whole = {"death": 447, "deal": 10, "dean": 3}
    assert choose("deah", ["deah"], near, whole.__getitem__) == "death"
    assert choose("deah", ["deah"], {"death": 2, "deal": 9}) == "deal"  # without the index's count: the fuzzy one
    # not a tie: the nearer term wins however common the farther one is
    assert choose("prneatal", ["prneatal", "prneat"], {"prenat": 3, "pronat": 9}, {"prenat": 3, "pronat": 900}.get) \
        == "prenat"


def test_a_word_whose_forms_have_no_neighbour_is_looked_up_by_its_beginnings():
    """A typo can keep the stemmer from cutting a word's ending ("toxqcity" is no form of "toxic"), and a
    fuzzy match of the whole form finds nothing within two edits: its beginnings do."""
    assert probes("toxqcity") == ["toxqcit", "toxqci", "toxqc", "toxq"]
    assert probes("mucs") == []  # no beginning is long enough to look up
    asked = []

    def near(terms, edits):
        asked.append(terms)
        return {"toxic": 12} if "toxqc" in terms else {}

    found = corrections("toxqcity of lead", lambda w: [w, w[:-1] + "i"], lambda forms: False, near)
    assert found == {"toxqcity": "toxic"}
    assert asked[0] == ["toxqcity", "toxqciti"] and asked[1] == probes("toxqcity")


def test_the_spelling_survives_a_served_answer():
    response = SearchResponse("marchetty", spelled={"marchetty": "marchetti"})
    assert SearchResponse.from_dict(response.as_dict()).spelled == {"marchetty": "marchetti"}
    older = response.as_dict()
    del older["spelled"]
    assert SearchResponse.from_dict(older).spelled == {}


def test_a_typo_in_a_name_finds_its_file_through_bm25(named):
    root, engine = named
    # ("Marchetty" needs no correction: English stemming already makes it "marchetti")
    for typed in ("Marchetta", "Marhcetti", "Marchettti"):
        typo = engine.run(SearchParams(typed))
        assert typo.spelled == {typed.lower(): "marchetti"}
        assert f'showing results for "marchetti" (searched for "{typed}": no file has "{typed.lower()}"; ' \
            "search again with literal=true for the words as typed)" in typo.notices
        top = typo.results[0]
        assert top.path == str(root / "supplier.txt") and "bm25" in top.legs
        assert typo.as_dict()["spelled"] == {typed.lower(): "marchetti"}

    right = engine.run(SearchParams("Marchetti"))
    assert right.spelled == {} and not any("showing results for" in n for n in right.notices)
    assert right.results[0].path == str(root / "supplier.txt")

    far = engine.run(SearchParams("zyxwvutqp"))
    assert far.spelled == {} and not any("showing results for" in n for n in far.notices)

    engine.run(SetParams("retrieval.spelling", "off"))  # the setting: every word searched as typed
    typed_as_is = engine.run(SearchParams("Marhcetti"))
    assert typed_as_is.spelled == {} and not any("showing results for" in n for n in typed_as_is.notices)

    literal = engine.run(SearchParams("Marhcetti", literal=True))  # --literal: as typed, no correction
    assert literal.spelled == {} and not any("showing results for" in n for n in literal.notices)
    engine.run(SetParams("retrieval.spelling", "both"))
    assert engine.run(SearchParams("Marhcetti")).spelled == {"marhcetti": "marchetti"}
    assert engine.run(SearchParams("Marhcetti", literal=True)).spelled == {}
    # a common word no file has is not a typo of one that some file has ("last" is not "list")
    assert engine.run(SearchParams("the last museums")).spelled == {}


def test_a_common_word_of_the_language_is_never_corrected():
    """Issue 33: "last" became "list". A word of the language is left as typed, whatever the index holds."""
    from sensetree.search import lexicon

    near = lambda forms, edits: {"list": 40, "lost": 3, "laser": 2}
    assert corrections("the last report", lambda w: [w], lambda forms: False, near) == {}
    assert lexicon.is_word("last") and lexicon.is_word("reports") and lexicon.is_word("lasted")
    assert not lexicon.is_word("marchetty") and not lexicon.is_word("lighthuose")
    assert corrections("lighthuose", lambda w: [w], lambda forms: False, lambda f, e: {"lighthouse": 3}) == \
        {"lighthuose": "lighthouse"}


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_no_word_of_the_lexicon_is_ever_corrected(data):
    """Any query made of words of the language, whatever terms lie near them, keeps every word."""
    from sensetree.search import lexicon

    pool = sorted(lexicon.words())
    typed = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=6))
    near_terms = data.draw(st.dictionaries(st.sampled_from(pool), st.integers(1, 50), max_size=8))
    assert corrections(" ".join(typed), lambda w: [w], lambda forms: False, lambda f, e: near_terms) == {}


def test_words_in_quotes_are_searched_as_typed():
    """A quoted word is what the person means, typo or not: never checked, never replaced."""
    assert checked_words('"Marhcetti" invoice Marhcettu') == ["invoice", "marhcettu"]
    assert checked_words("„Marhcetti“ «lighthuose» “Strnad”") == []
    assert respelled('"Marhcetti" and Marhcetti', {"marhcetti": "marchetti"}) == '"Marhcetti" and marchetti'


def test_the_words_of_a_name_are_its_runs_and_humps_folded():
    assert name_words("/Fotos/Urlaub_Sardinien-2024.JPG") == {"fotos", "urlaub", "sardinien", "2024", "jpg"}
    assert name_words("ReisekostenAbrechnung.xlsx") >= {"reisekostenabrechnung", "reisekosten", "abrechnung"}
    assert name_words("HTTPServer") >= {"httpserver", "http", "server"}
    assert name_words("Übersicht Café отчёт") == {"ubersicht", "cafe", "отчет"}
    names = ["/Reisen/Urlaub_Sardinien/strand.jpg", "/Arbeit/umlaut.txt"]
    assert in_names(["urlaub"], lambda fragments: names) and in_names(["Sardinien"], lambda fragments: names)
    assert not in_names(["urlau"], lambda fragments: names)  # a piece of a word is no word of the name


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_every_word_of_any_name_lies_in_the_whole_name_folded(name):
    """in_names looks at a name's words only when the whole name, folded, holds the word: sound for any name,
    hostile ones included (marks, surrogates, scripts mixed, case that folds to several letters)."""
    whole = folded(name)
    assert all(word and word in whole for word in name_words(name))


_NAME_PART = st.text(alphabet="abcdefghijklmnopqrstuvwxyzäéöüßçñABCDEFGHIJKLMNOPQRSTUVWXYZÄÉÖÜ", min_size=1,
                     max_size=10)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(_NAME_PART, min_size=1, max_size=5), joints=st.lists(st.sampled_from(["_", "-", ".", " ", "/"]),
       min_size=4, max_size=4), data=st.data())
def test_a_word_of_any_name_is_never_respelled(parts, joints, data):
    """Whatever a file or folder is called, a query word that is one of its name's words, in any case, is
    left as typed, however near an indexed term lies (the pure stage, the names looked up as the engine does)."""
    name = "/" + "".join(part + joint for part, joint in zip(parts, joints + [""]))
    words = sorted(w for w in name_words(name) if w.isalpha())
    typed = [w for w in words if checked_words(w)]
    if not typed:
        return
    word = data.draw(st.sampled_from(typed))
    word = "".join(c.upper() if data.draw(st.booleans()) else c for c in word)
    near = {word.lower()[:-1] + "x": 9, word.lower() + "s": 9}  # terms one edit away: a correction otherwise
    found = corrections(word, lambda w: [w], lambda forms: False, lambda forms, edits: near, is_word=lambda w: False,
                        named=lambda forms: in_names(forms, lambda fragments: [name]))
    assert found == {}, (name, word)


@pytest.fixture(scope="module")
def named(tmp_path_factory, write_tree, make_engine):
    """Files whose names hold words their text does not, and the reverse."""
    base = tmp_path_factory.mktemp("named")
    root = base / "files"
    write_tree(root, {
        "Reisen/Urlaub_Sardinien/strand.txt": "Zwei Wochen Strand, Meer und Pizza mit der Familie.",
        "Arbeit/umlaut.txt": "Der Umlaut in Dateinamen und wie man ihn schreibt: ä, ö, ü.",
        "Arbeit/ReisekostenAbrechnung.txt": "Hotel, Bahn und Taxi für die Messe in Leipzig.",
        "Übersicht-Quartal.md": "Umsatz und Kosten des dritten Quartals, nach Monaten.",
        "notes/Haeundae beach.txt": "Morning walk along the sand, then fish soup at the market.",
        "supplier.txt": "Payment terms agreed with Luca Marchetti for the spring delivery of olive oil.",
        "garden.txt": "Notes on pruning the apple trees and planting tomatoes in the spring.",
        "recipes.txt": "A recipe for risotto with mushrooms, parmesan and a glass of white wine.",
        "travel.txt": "Train times from Milan to Florence, and a list of museums to visit.",
        "budget.txt": "Monthly household budget: rent, groceries, electricity and savings.",
    })
    with make_engine(base / "data", root, settings={"retrieval.rerank": False}) as engine:
        yield root, engine


def test_a_word_a_file_or_folder_name_holds_is_never_respelled(named):
    """Issue 39: "Urlaub im Juli" became "umlaut" though a folder is called Urlaub_Sardinien; a typo no name
    or text holds is still corrected, except in quotes."""
    _, engine = named
    for typed in ("Urlaub im Juli", "Urlaub", "sardinien strand", "Reisekosten Leipzig", "Abrechnung",
                  "Übersicht", "Ubersicht", "Haeundae"):
        response = engine.run(SearchParams(typed))
        assert response.spelled == {} and not any("showing results for" in n for n in response.notices), typed
    assert engine.run(SearchParams("Marhcetti olive")).spelled == {"marhcetti": "marchetti"}
    quoted = engine.run(SearchParams('"Marhcetti" olive'))
    assert quoted.spelled == {} and not any("showing results for" in n for n in quoted.notices)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_word_of_a_name_or_a_text_is_never_rewritten(named, data):
    """The engine on real files: whatever word of a file's name or text is typed, in any case, it is searched
    as typed."""
    root, engine = named
    names, texts = set(), set()
    for path in root.rglob("*"):
        names |= name_words(str(path.relative_to(root)))
        if path.is_file():
            texts |= {w.lower() for w in re.findall(r"\w+", path.read_text(encoding="utf-8"))}
    pool = data.draw(st.sampled_from([sorted(w for w in words if checked_words(w)) for words in (names, texts)]))
    typed = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
    query = " ".join(w.upper() if data.draw(st.booleans()) else w for w in typed)
    assert engine.run(SearchParams(query)).spelled == {}, query
