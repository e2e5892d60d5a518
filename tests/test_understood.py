"""Filters said in words (search/intent.py) through the engine, the CLI and the HTTP API, on real
files (a PDF, a DOCX, a spreadsheet, text) with real modification times, MiniLM and LanceDB."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from fpdf import FPDF
from openpyxl import Workbook

from sensetree.interfaces.api import ServerOptions, create_app
from sensetree.operations import SearchParams, TreeParams
from tests.support.zips import docx_bytes

TOKEN = "u" * 43
INVOICE = ("Invoice 2025-031 for consulting services: the garden redesign of the Marchetti villa, forty hours "
           "of planning and planting, payable within thirty days to the studio's account.")
MARCH = datetime(2025, 3, 14, 12).timestamp()
JUNE = datetime(2024, 6, 3, 12).timestamp()


def _pdf(path: Path, text: str) -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 8, text)
    pdf.output(str(path))


def _xlsx(path: Path, rows: list[list[str]]) -> None:
    book = Workbook()
    for row in rows:
        book.active.append(row)
    book.save(path)


@pytest.fixture(scope="module")
def office(tmp_path_factory, write_tree, make_engine):
    base = tmp_path_factory.mktemp("understood")
    root = base / "files"
    write_tree(root, {
        "Work/invoice_march.docx": docx_bytes(INVOICE),
        "Work/notes.txt": "Planting plan for the Marchetti villa garden: roses, lavender and two olive trees. " * 3,
        "Home/invoice_june.txt": INVOICE.replace("2025-031", "2024-117").replace("garden redesign", "kitchen garden"),
        "Home/pdf export settings.md": "How to change the PDF export settings: page size, margins, fonts embedded. " * 3,
    })
    _pdf(root / "Work" / "invoice_scan.pdf", INVOICE.replace("2025-031", "2025-032"))
    _xlsx(root / "Work" / "hours.xlsx", [["week", "hours", "client"], ["10", "18", "Marchetti villa garden"],
                                         ["11", "22", "Marchetti villa garden invoice"]])
    for name, when in [("Work/invoice_march.docx", MARCH), ("Work/invoice_scan.pdf", MARCH), ("Work/hours.xlsx", MARCH),
                       ("Work/notes.txt", MARCH), ("Home/invoice_june.txt", JUNE), ("Home/pdf export settings.md", JUNE)]:
        os.utime(root / name, (when, when))
    engine = make_engine(base / "data", root)
    yield root, engine
    engine.close()


def _names(response) -> list[str]:
    return [Path(r.path).name for r in response.results]


@pytest.mark.parametrize("query", ["Marchetti invoice pdf", "Marchetti invoice pdfs", "Rechnung Marchetti PDF",
                                   "facture Marchetti pdf", "factura Marchetti pdf"])
def test_a_type_said_in_any_of_four_languages_filters(office, query):
    _, engine = office
    response = engine.run(SearchParams(query))
    assert response.understood and response.understood["types"] == ["pdf"], response.understood
    assert _names(response) == ["invoice_scan.pdf"]
    assert "pdf" not in response.understood["query"].lower()


@pytest.mark.parametrize("query", ["invoice in March 2025", "invoice im März 2025", "facture en mars 2025",
                                   "factura en marzo de 2025", "invoice since January 2025"])
def test_a_time_said_in_words_keeps_the_files_of_that_time(office, query):
    _, engine = office
    response = engine.run(SearchParams(query))
    assert response.understood and response.understood["modified_after"] is not None, response.understood
    names = _names(response)
    assert names and "invoice_june.txt" not in names and "invoice_march.docx" in names


def test_a_folder_said_becomes_the_scope_and_a_folder_that_is_not_there_stays_a_word(office):
    root, engine = office
    response = engine.run(SearchParams("invoice in Work"))
    assert response.understood["folder"] == str(root / "Work") and response.understood["said"] == ["in Work"]
    assert response.results and all(r.path.startswith(str(root / "Work")) for r in response.results)
    elsewhere = engine.run(SearchParams("invoice in Narnia"))
    assert elsewhere.understood is None and elsewhere.results


def test_literal_and_quotes_take_the_words_as_written(office):
    _, engine = office
    literal = engine.run(SearchParams("Marchetti invoice pdf", literal=True))
    assert literal.understood is None and len(literal.results) > 1
    quoted = engine.run(SearchParams('Marchetti invoice "pdf"'))
    assert quoted.understood is None and len(quoted.results) > 1


def test_a_type_that_is_the_topic_is_not_a_filter_and_a_thin_filter_says_so(office):
    _, engine = office
    topic = engine.run(SearchParams("pdf export settings"))
    assert topic.understood is None and _names(topic)[0] == "pdf export settings.md"
    thin = engine.run(SearchParams("garden spreadsheets", limit=10))  # one spreadsheet; the words find more
    assert thin.understood["types"] == ["xlsx", "xls", "ods"] and _names(thin) == ["hours.xlsx"]
    assert thin.understood["literal_results"] >= 3
    assert any('"spreadsheets" read as a filter: 1 file found' in n and "literal=true" in n for n in thin.notices)


def test_no_filter_word_leaves_search_as_it_was(office):
    _, engine = office
    said = engine.run(SearchParams("Marchetti villa garden planting"))
    plain = engine.run(SearchParams("Marchetti villa garden planting", literal=True))
    assert said.understood is None and [r.path for r in said.results] == [r.path for r in plain.results]


def test_the_meaning_tree_reads_the_same_words(office):
    root, engine = office
    tree = engine.run(TreeParams("Marchetti invoice pdf"))
    assert tree.understood["types"] == ["pdf"] and tree.tree is not None
    leaves = []
    stack = [tree.tree]
    while stack:
        node = stack.pop()
        stack += node.children
        leaves += [node.path] if not node.is_dir else []
    assert leaves == [str(root / "Work" / "invoice_scan.pdf")]


def test_cli_prints_what_it_understood_and_literal_turns_it_off(office, cli):
    _, engine = office
    shown = cli.run(engine.data_dir, "search", "Marchetti invoice pdf")
    assert "understood: pdf" in " ".join(shown.stderr.split()) and "invoice_scan.pdf" in shown.stdout
    assert "search again with --literal" in " ".join(shown.stderr.split()) and "literal=true" not in shown.stderr
    answer = json.loads(cli.run(engine.data_dir, "search", "Marchetti invoice pdf", "--json").stdout)
    assert answer["understood"]["said"] == ["pdf"] and answer["query"] == "Marchetti invoice pdf"
    literal = json.loads(cli.run(engine.data_dir, "search", "Marchetti invoice pdf", "--literal", "--json").stdout)
    assert literal["understood"] is None and len(literal["results"]) > 1


def test_http_search_and_tree_carry_what_was_understood(office):
    _, engine = office
    client = TestClient(create_app(engine, TOKEN, ServerOptions(port=8765)), base_url="http://127.0.0.1:8765",
                        client=("127.0.0.1", 50000), headers={"Authorization": f"Bearer {TOKEN}"})
    found = client.get("/api/search", params={"q": "Marchetti invoice pdf"}).json()
    assert found["understood"]["types"] == ["pdf"] and [Path(r["path"]).name for r in found["results"]] == [
        "invoice_scan.pdf"]
    assert any("search again with literal=true" in n for n in found["notices"]), found["notices"]
    literal = client.get("/api/search", params={"q": "Marchetti invoice pdf", "literal": "true"}).json()
    assert literal["understood"] is None
    tree = client.get("/api/tree", params={"q": "invoice in Work"}).json()
    assert tree["understood"]["said"] == ["in Work"]


def test_a_folder_said_scopes_to_every_folder_of_that_name_and_says_when_it_changed_the_results(tmp_path, write_tree,
                                                                                                 make_engine):
    """Issue 33: "library in notes" returned the three files of the shallowest notes/, none about libraries,
    without a word. Now every notes/ is searched, and the answer says the filter changed what the words find."""
    root = tmp_path / "files"
    write_tree(root, {
        "notes/groceries.txt": "Buy milk, eggs, bread and coffee beans on Saturday.",
        "notes/dentist.txt": "Dentist appointment moved to Thursday at ten.",
        "notes/car.txt": "The car needs new tyres before the winter.",
        "projects/app/notes/library.txt": "Which HTTP library to use: requests or httpx, and the library's licence.",
        "libraries.md": "A list of software libraries: numpy, pandas, requests, httpx and their licences.",
        "library-card.txt": "The public library card expires in May; renew it at the library desk.",
    })
    with make_engine(tmp_path / "data", root, settings={"retrieval.rerank": False}) as engine:
        said = engine.run(SearchParams("library in notes"))
        names = _names(said)
        assert said.understood["said"] == ["in notes"] and said.understood["folder"] == str(root / "notes")
        assert "library.txt" in names and set(names) <= {"groceries.txt", "dentist.txt", "car.txt", "library.txt"}
        assert any("2 folders are called notes" in n for n in said.notices), said.notices
        assert said.understood["literal_results"] >= 3
        told = [n for n in said.notices if '"in notes" read as a filter' in n]
        assert told and "literal=true" in told[0] and "as search words" in told[0], said.notices
        tree = engine.run(TreeParams("library in notes"))  # the meaning tree reads the same: both notes/
        leaves, stack = [], [tree.tree]
        while stack:
            node = stack.pop()
            stack += node.children
            leaves += [Path(node.path).name] if not node.is_dir else []
        assert "library.txt" in leaves and set(leaves) <= {"groceries.txt", "dentist.txt", "car.txt", "library.txt"}
        plain = engine.run(SearchParams("library in notes", literal=True))
        assert plain.understood is None and {"libraries.md", "library-card.txt"} & set(_names(plain))


def _last_july() -> tuple[float, float]:
    """A day of the July that "im Juli" reads (the latest one begun), and a day of March before it."""
    now = datetime.now()
    year = now.year if now.month >= 7 else now.year - 1
    return datetime(year, 7, 15, 12).timestamp(), datetime(year, 3, 10, 12).timestamp()


@pytest.fixture(scope="module")
def holiday(tmp_path_factory, write_tree, make_engine):
    """Notes of a holiday written in March, a report of July, and two roots below folders called Work and Notes."""
    base = tmp_path_factory.mktemp("holiday")
    root, other = base / "Work" / "files", base / "Notes" / "files"
    files = write_tree(root, {
        "Reisen/sardinien.txt": "Urlaub auf Sardinien: zwei Wochen Strand, Meer und Pizza mit der Familie.",
        "Arbeit/bericht.txt": "Quartalsbericht: Umsatz, Kosten und Ausblick auf das dritte Quartal.",
        "Arbeit/liste.txt": "Einkaufsliste für die Woche: Milch, Brot, Eier und Kaffee.",
        "Projects/Work/plan.txt": "The garden project plan for the spring planting, week by week.",
    })
    write_tree(other, {"garden.txt": "Planting plan for the villa garden: roses, lavender and two olive trees."})
    july, march = _last_july()
    for name, when in [("Reisen/sardinien.txt", march), ("Arbeit/bericht.txt", july), ("Arbeit/liste.txt", march)]:
        os.utime(files[name], (when, when))
    with make_engine(base / "data", root, other, settings={"retrieval.rerank": False}) as engine:
        yield root, other, engine


def test_a_filter_that_takes_away_every_file_holding_the_words_shows_the_words_alone(holiday):
    """Issue 39: "Urlaub im Juli" read "im Juli" as a time, and the notes of the holiday, written in March,
    were gone: no result, or only July's files, none of them about the holiday. The words alone are shown,
    and the notice says why; a filter that keeps a file holding the words still filters."""
    _, _, engine = holiday
    none_held = engine.run(SearchParams("Urlaub im Juli"))  # July has a file, about something else
    assert _names(none_held)[0] == "sardinien.txt" and none_held.understood is None, _names(none_held)
    assert any('"im Juli" read as a filter: no file found holds "Urlaub"' in n and "words alone" in n
               for n in none_held.notices), none_held.notices
    nothing = engine.run(SearchParams("Urlaub im Juni"))  # no file of June at all
    assert _names(nothing)[0] == "sardinien.txt"
    assert any('"im Juni" read as a filter: no file found' in n for n in nothing.notices), nothing.notices
    kept = engine.run(SearchParams("Quartalsbericht im Juli"))  # July's file holds the words: filtered
    assert kept.understood["said"] == ["im Juli"] and _names(kept) == ["bericht.txt"]


def test_a_folder_above_the_roots_is_no_folder_said(holiday):
    """Issue 42: with the root .../Work/files, "in Work" scoped the search to the folder above the root and
    found nothing. Only folders at or under a root are read; a root itself is one."""
    root, other, engine = holiday
    inner = engine.run(SearchParams("garden plan in Work"))
    assert inner.understood["folder"] == str(root / "Projects" / "Work"), inner.understood
    assert _names(inner) == ["plan.txt"]
    own = engine.run(SearchParams("garden plan in files"))  # both roots' own name: both roots
    assert own.understood["folder"] in (str(root), str(other)) and any("2 folders are called files" in n
                                                                       for n in own.notices), own.notices
    above = engine.run(SearchParams("garden plan in Notes"))  # only the folder above a root is so called
    assert above.understood is None and "garden.txt" in _names(above), (above.understood, above.notices)
