"""Filters said in words (search/intent.py): types, periods and folders read from queries in English,
German, French and Spanish, the words that only look like filters left to the topic, and a property
test that any text is read without an error and without words the query did not have."""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sensetree.ingest.extract.registry import BY_EXTENSION, BY_TYPE
from sensetree.search import intent
from sensetree.search.intent import Understood, understand
from sensetree.search.types import Filters

NOW = datetime(2025, 6, 18, 15, 30)  # a Wednesday; naive: local time, as the timestamps below
FOLDERS = {"work": "/home/ana/Work", "projekte": "/home/ana/Projekte", "travail": "/home/ana/Travail",
           "trabajo": "/home/ana/Trabajo", "tax returns": "/home/ana/Tax Returns", "old stuff": "/home/ana/Old Stuff"}
PDF, SHEETS, SLIDES, MAIL, WORD, IMAGE = ("pdf",), ("xlsx", "xls", "ods"), ("pptx", "ppt", "odp"), ("email", "msg"), \
    ("docx", "doc"), ("image",)


def folders(name: str) -> list[str]:
    """The engine's lookup, faked: the folders under the roots with that name, case-insensitive."""
    return [FOLDERS[name.casefold()]] if name.casefold() in FOLDERS else []


def day(year: int, month: int = 1, dom: int = 1) -> float:
    return datetime(year, month, dom).timestamp()


LAST_WEEK, LAST_30_DAYS, LAST_YEAR = day(2025, 6, 11), day(2025, 5, 19), day(2024, 6, 18)
MARCH_2025 = (day(2025, 3), day(2025, 4))
JANUARY_ON = (day(2025, 1), None)
YEAR_2019 = (day(2019), day(2020))
BEFORE_2020 = (None, day(2020))
YEARS_2019_TO_2021 = (day(2019), day(2022))

# (query, the rest, types, (after, before), folder)
CASES = [
    # English
    ("invoices from March 2025 pdf in Work", "invoices", PDF, MARCH_2025, "/home/ana/Work"),
    ("budget spreadsheets last week", "budget", SHEETS, (LAST_WEEK, None), None),
    ("contract this month", "contract", (), (day(2025, 6), day(2025, 7)), None),
    ("minutes yesterday", "minutes", (), (day(2025, 6, 17), day(2025, 6, 18)), None),
    ("report in 2019", "report", (), YEAR_2019, None),
    ("memo before 2020", "memo", (), BEFORE_2020, None),
    ("notes since January", "notes", (), JANUARY_ON, None),
    ("contract until March 2025", "contract", (), (None, day(2025, 4)), None),
    ("notes from 2019 to 2021", "notes", (), YEARS_2019_TO_2021, None),
    ("report last 30 days", "report", (), (LAST_30_DAYS, None), None),
    ("budget since 2025-03-01", "budget", (), (day(2025, 3), None), None),
    ("invoices in the year 2019", "invoices", (), YEAR_2019, None),
    ("2019 photos of the kids", "of the kids", IMAGE, YEAR_2019, None),
    ("taxes pdfs 2019", "taxes", PDF, YEAR_2019, None),
    ("tax return 2019 pdf", "tax return 2019", PDF, (None, None), None),
    ("slides quarterly review", "quarterly review", SLIDES, (None, None), None),
    ("word documents contract", "contract", WORD, (None, None), None),
    ("budget xlsx", "budget", SHEETS, (None, None), None),
    ("budget *.xlsx", "budget", SHEETS, (None, None), None),
    ("Anna's emails and slides", "Anna's", MAIL + SLIDES, (None, None), None),
    ("email from Anna", "from Anna", MAIL, (None, None), None),
    ("pdf files from Anna", "from Anna", PDF, (None, None), None),
    ("minutes in the Work folder", "minutes", (), (None, None), "/home/ana/Work"),
    ("letters in Tax Returns", "letters", (), (None, None), "/home/ana/Tax Returns"),
    ('letters in "Old Stuff" pdf', "letters", PDF, (None, None), "/home/ana/Old Stuff"),
    # German
    ("Rechnungen letzte Woche", "Rechnungen", (), (LAST_WEEK, None), None),
    ("Angebote im März 2025", "Angebote", (), MARCH_2025, None),
    ("Verträge seit Januar", "Verträge", (), JANUARY_ON, None),
    ("Protokolle vor 2020", "Protokolle", (), BEFORE_2020, None),
    ("Rechnungen im Jahr 2019", "Rechnungen", (), YEAR_2019, None),
    ("Protokolle von 2019 bis 2021", "Protokolle", (), YEARS_2019_TO_2021, None),
    ("Berichte der letzten 30 Tage", "Berichte", (), (LAST_30_DAYS, None), None),
    ("Protokolle seit 1. März 2025", "Protokolle", (), (day(2025, 3), None), None),
    ("Notizen gestern", "Notizen", (), (day(2025, 6, 17), day(2025, 6, 18)), None),
    ("Folien Vertrieb diesen Monat", "Vertrieb", SLIDES, (day(2025, 6), day(2025, 7)), None),
    ("Steuer Tabellen im Ordner Projekte", "Steuer", SHEETS, (None, None), "/home/ana/Projekte"),
    ("Entwürfe im Projekte-Ordner", "Entwürfe", (), (None, None), "/home/ana/Projekte"),
    ("Präsentationen Kunde", "Kunde", SLIDES, (None, None), None),
    ("E-Mails von Anna", "von Anna", MAIL, (None, None), None),
    ("Bilder Urlaub", "Urlaub", IMAGE, (None, None), None),
    ("PDF-Dateien Steuer", "Steuer", PDF, (None, None), None),
    ("Word-Dokumente Vertrag", "Vertrag", WORD, (None, None), None),
    # French
    ("factures la semaine dernière", "factures", (), (LAST_WEEK, None), None),
    ("factures en mars 2025", "factures", (), MARCH_2025, None),
    ("contrats depuis janvier", "contrats", (), JANUARY_ON, None),
    ("rapport avant 2020", "rapport", (), BEFORE_2020, None),
    ("comptes de 2019 à 2021", "comptes", (), YEARS_2019_TO_2021, None),
    ("rapports des 30 derniers jours", "rapports", (), (LAST_30_DAYS, None), None),
    ("factures d'hier", "factures", (), (day(2025, 6, 17), day(2025, 6, 18)), None),
    ("photos de vacances l'année dernière", "de vacances", IMAGE, (LAST_YEAR, None), None),
    ("rapport dans Travail", "rapport", (), (None, None), "/home/ana/Travail"),
    ("notes dans le dossier Travail", "notes", (), (None, None), "/home/ana/Travail"),
    ("diapositives réunion", "réunion", SLIDES, (None, None), None),
    ("courriels budget", "budget", MAIL, (None, None), None),
    ("budget tableur", "budget", SHEETS, (None, None), None),
    ("fichiers pdf impôts", "impôts", PDF, (None, None), None),
    # Spanish
    ("facturas la semana pasada", "facturas", (), (LAST_WEEK, None), None),
    ("facturas en marzo de 2025", "facturas", (), MARCH_2025, None),
    ("contratos desde enero", "contratos", (), JANUARY_ON, None),
    ("informe antes de 2020", "informe", (), BEFORE_2020, None),
    ("actas entre 2019 y 2021", "actas", (), YEARS_2019_TO_2021, None),
    ("facturas de enero a marzo de 2025", "facturas", (), (day(2025, 1), day(2025, 4)), None),
    ("informes de los últimos 30 días", "informes", (), (LAST_30_DAYS, None), None),
    ("presupuesto este año", "presupuesto", (), (day(2025), day(2026)), None),
    ("notas ayer", "notas", (), (day(2025, 6, 17), day(2025, 6, 18)), None),
    ("informe en Trabajo", "informe", (), (None, None), "/home/ana/Trabajo"),
    ("informe en la carpeta Trabajo", "informe", (), (None, None), "/home/ana/Trabajo"),
    ("hojas de cálculo presupuesto", "presupuesto", SHEETS, (None, None), None),
    ("diapositivas ventas", "ventas", SLIDES, (None, None), None),
    ("correos de Juan", "de Juan", MAIL, (None, None), None),
    ("fotos de vacaciones", "de vacaciones", IMAGE, (None, None), None),
    ("documentos de Word contrato", "contrato", WORD, (None, None), None),
]


@pytest.mark.parametrize(("query", "rest", "types", "period", "folder"), CASES, ids=[c[0] for c in CASES])
def test_the_filters_a_query_says_are_read_and_taken_out(query, rest, types, period, folder):
    understood = understand(query, now=NOW, folders=folders)
    assert understood is not None
    assert understood.query == rest
    assert understood.types == types
    assert (understood.modified_after, understood.modified_before) == period
    assert understood.folder == folder


TOPICS = [
    "pdf export settings",                       # a singular type word modifying a noun: about the format
    "email server configuration",
    "photo editing software",
    "jpg to png converter",
    "export to pdf",                             # a target format
    "save as pdf",
    "convertir a pdf",
    "size of pdf",                               # what the rest is about
    "configuración del correo electrónico",
    "pdf",                                       # nothing else would remain
    "emails",
    "last week",
    "in March",
    "2019",
    "tax return 2019",                           # a bare year without a type beside it: the topic
    "Steuererklärung 2019",
    "May report",                                # a month alone needs its connecting word
    "Mars exploration",
    "the last days of Pompeii",                  # "last days" without a number is no time
    "last year's budget",
    "report.pdf",                                # a file name, not a type
    "Formulare hier",                            # German "here", not French "yesterday"
    "notes in Berlin",                           # no such folder: the words stay
    "Dr. Greger's New Year-in-Review Presentation",  # a talk; plural "presentations" would be read
    "Incidence of heart failure increased by 10% in women since 1979.",  # prose: its dates are its topic
    "Wie wurde über die Revision im Urteil vom 2. April 2013 entschieden?",
    "Sepsis related mortality has risen from 2009 to 2014",
    "In British Men, haplogroup I decreases risk of cardiovascular disease in Work.",  # "I" a letter, not the writer
    "Urteil vom 2. April 2013",                  # a full date alone or after "vom": the document's own date
    "minutes 2025-03-01",
    "quarterly budget review notes",
    "",
]


@pytest.mark.parametrize("query", TOPICS)
def test_what_only_looks_like_a_filter_stays_the_topic(query):
    assert understand(query, now=NOW, folders=folders) is None


def test_said_holds_the_words_read_as_they_were_written():
    understood = understand("invoices from March 2025 PDF in work", now=NOW, folders=folders)
    assert understood.said == ("from March 2025", "PDF", "in work")
    assert understood.folder == "/home/ana/Work"


def test_type_words_stay_in_the_query_when_nothing_else_would_remain():
    """ "photos from last week" asks for photos: the word stays as the query and as a filter."""
    photos = understand("photos from last week", now=NOW, folders=folders)
    assert (photos.query, photos.types, photos.modified_after) == ("photos", IMAGE, LAST_WEEK)
    in_work = understand("pdf in Work", now=NOW, folders=folders)
    assert (in_work.query, in_work.types, in_work.folder) == ("pdf", PDF, "/home/ana/Work")
    both = understand("pdfs and spreadsheets from 2024", now=NOW)
    assert (both.query, both.types, both.said) == ("pdfs and spreadsheets", PDF + SHEETS,
                                                   ("pdfs and spreadsheets", "from 2024"))


def test_a_sentence_in_the_first_person_asks_about_ones_own_files():
    understood = understand("what did I send Anna last week?", now=NOW)
    assert (understood.query, understood.modified_after) == ("what did I send Anna?", LAST_WEEK)
    assert understand("what did Anna send last week to the whole team in Berlin?", now=NOW) is None
    french = understand("qu'ai-je écrit en mars 2025 à Paul ?", now=NOW)
    assert (french.query, french.modified_after) == ("qu'ai-je écrit à Paul?", MARCH_2025[0])
    folder = understand("Which documents did I write in Work last year?", now=NOW, folders=folders)
    assert (folder.query, folder.folder, folder.modified_after) == ("Which documents did I write?", "/home/ana/Work",
                                                                     LAST_YEAR)


def test_folders_are_read_only_where_the_lookup_finds_them():
    calls = []

    def lookup(name: str) -> list[str]:
        calls.append(name)
        return folders(name)

    assert understand("notes in Work", now=NOW) is None  # no lookup: no folder
    assert understand("notes in Work", now=NOW, folders=lambda name: []) is None
    understood = understand("budget in Tax Returns pdf", now=NOW, folders=lookup)
    assert (understood.query, understood.folder, understood.types) == ("budget", "/home/ana/Tax Returns", PDF)
    assert calls[0] == "Tax Returns pdf"  # the longest name first, as written
    assert understand("notes in March", now=NOW, folders=lookup).folder is None  # a time before a folder

    def broken(name: str) -> list[str]:
        raise OSError("catalog busy")

    assert understand("notes in Work", now=NOW, folders=broken) is None


def test_an_aware_now_is_read_in_local_time():
    assert understand("report last week", now=NOW.astimezone()) == understand("report last week", now=NOW)


def test_json_and_filters_for_the_interfaces():
    understood = understand("budget spreadsheets in March 2025", now=NOW)
    assert json.loads(json.dumps(understood.as_dict())) == {
        "query": "budget", "types": list(SHEETS), "modified_after": MARCH_2025[0], "modified_before": MARCH_2025[1],
        "folder": None, "said": ["spreadsheets", "in March 2025"]}
    assert understood.filters() == Filters(SHEETS, *MARCH_2025)
    assert Understood("notes", (), None, None, "/home/ana/Work", ("in Work",)).filters() is None


def test_the_type_words_name_the_registrys_types():
    """``search`` may not import ``ingest``: the table spells the registry's names, and this keeps them in step."""
    for word, (types, _plural) in intent._TYPES.items():
        assert set(types) <= set(BY_TYPE), word
        if word in BY_EXTENSION:
            assert BY_EXTENSION[word].doc_type in types, word


def test_importing_and_a_query_without_dates_leave_dateparser_unimported():
    """dateparser's import costs a few hundred milliseconds: only a query naming a date pays it."""
    code = ("import sys, datetime; from sensetree.search.intent import understand; "
            "understand('budget spreadsheets last week in Work', now=datetime.datetime(2025, 6, 18), "
            "folders=lambda name: ['/w']); print('dateparser' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


VOCABULARY = ["pdf", "pdfs", "in", "Work", "March", "2025", "2019", "last", "week", "since", "seit", "Januar", "im",
              "März", "en", "marzo", "de", "la", "semaine", "dernière", "emails", "e-mail", "from", "to", "before",
              "I", "?", ".", "'", "\"", "d'hier", "depuis", "hier", "Tabellen", "hojas de cálculo", "-", "2025-03-01",
              "30", "derniers", "jours", "últimos", "días", "und", "and", "folder", "Ordner", "\u0e35", "e\u0301"]
QUERIES = st.one_of(st.text(), st.lists(st.one_of(st.sampled_from(VOCABULARY), st.text(max_size=3)), max_size=10)
                    .map(" ".join))


def _non_space(text: str) -> str:
    return "".join(text.split())


def _is_subsequence(part: str, whole: str) -> bool:
    characters = iter(whole)
    return all(char in characters for char in part)


@settings(max_examples=300, deadline=None)
@given(QUERIES)
def test_any_text_is_read_without_error_and_without_new_words(query):
    understood = understand(query, now=NOW, folders=folders)
    if understood is None:
        return
    text = unicodedata.normalize("NFC", query)
    assert understood.query.strip()
    assert _is_subsequence(_non_space(understood.query), _non_space(text))
    assert all(_is_subsequence(_non_space(said), _non_space(text)) for said in understood.said)
    assert understood.said
    json.dumps(understood.as_dict())


@pytest.mark.parametrize("query", ['"pdf" export settings', 'invoices "from March 2025"', '„letzte Woche“ Protokoll',
                                   'rapport «la semaine dernière»', '“spreadsheets” tutorial'])
def test_a_phrase_in_quotes_is_taken_as_written(query):
    assert understand(query, now=NOW) is None


def test_quotes_keep_one_filter_as_words_and_the_others_read():
    understood = understand('invoices "pdf" from March 2025', now=NOW)
    assert understood is not None and understood.types == () and understood.said == ("from March 2025",)
    assert '"pdf"' in understood.query


# issue 33: two times, two folders of one name ---------------------------------------------------
def test_two_years_said_mean_the_span_of_both_never_an_empty_period():
    both = understand("invoices in 2024 in 2025", now=NOW, folders=folders)
    assert both.query == "invoices" and (both.modified_after, both.modified_before) == (day(2024), day(2026))
    overlapping = understand("invoices since 2019 before 2021", now=NOW, folders=folders)
    assert (overlapping.modified_after, overlapping.modified_before) == (day(2019), day(2021))
    contradicting = understand("invoices since 2025 before 2024", now=NOW, folders=folders)
    assert contradicting is None  # nothing bounded: the words stay the query
    typed = understand("invoices pdfs since 2025 before 2024", now=NOW, folders=folders)
    assert typed.types == PDF and typed.modified_after is None and typed.modified_before is None
    assert "2025" in typed.query and "2024" in typed.query


@settings(max_examples=150, deadline=None)
@given(first=st.integers(1990, 2025), second=st.integers(1990, 2025),
       words=st.sampled_from(["in", "since", "before", "until"]), other=st.sampled_from(["in", "since", "before", "until"]))
def test_any_two_times_read_give_a_period_that_is_not_empty(first, second, words, other):
    understood = understand(f"reports {words} {first} {other} {second}", now=NOW, folders=folders)
    if understood is None:
        return
    after, before = understood.modified_after, understood.modified_before
    assert after is not None or before is not None or understood.types or understood.folder
    if after is not None and before is not None:
        assert after < before
    if words == other == "in":  # both years listed: the span covers each of them
        assert after == day(min(first, second)) and before == day(max(first, second) + 1)


def test_a_folder_name_several_folders_have_scopes_to_all_of_them():
    many = {"notes": ["/home/ana/notes", "/home/ana/Work/notes", "/home/ana/Old/2019/notes"]}
    understood = understand("library in notes", now=NOW, folders=lambda name: many.get(name.casefold(), []))
    assert understood.folder == "/home/ana/notes" and understood.folders == tuple(many["notes"])
    assert understood.scope == many["notes"] and understood.as_dict()["folder"] == "/home/ana/notes"
    one = understand("budget in Work", now=NOW, folders=folders)
    assert one.scope == "/home/ana/Work" and one.folders == ("/home/ana/Work",)
