"""The formats added to extraction (OpenDocument, RTF, notebooks, XLS, legacy Office, images without OCR)
and where in its file each part of the text comes from, on files written by real libraries."""

from __future__ import annotations

import json
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

from sensetree.ingest.extract import ExtractionError, extract, limits, location_label
from tests.support.corpus import build_corpus
from sensetree.operations import AddRootParams, SetParams


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_corpus(tmp_path_factory.mktemp("corpus"))


def _spans_text(extraction) -> list[tuple[dict, str]]:
    return [(span.location, extraction.text[span.start:span.end]) for span in extraction.spans]


def _sheets(path: Path, doc_type: str) -> list[str]:
    """The text of each sheet of a workbook, checking that each is located by its name."""
    extraction = extract(path)
    assert extraction.doc_type == doc_type
    located = _spans_text(extraction)
    assert all(text.startswith(f"Sheet: {location['sheet']}\n") for location, text in located)
    return [text for _, text in located]


# --------------------------------------------------------------------------
# OpenDocument (written with odfpy)
# --------------------------------------------------------------------------


def _odt(path: Path) -> None:
    from odf.opendocument import OpenDocumentText
    from odf.table import Table, TableCell, TableColumn, TableRow
    from odf.text import H, P, S, Span

    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text="Procès-verbal de la réunion"))
    paragraph = P(text="La séance est ouverte à 9 h 30 par Mme Brûlé.")
    document.text.addElement(paragraph)
    spaced = P(text="Budget:")
    spaced.addElement(S(c=3))
    spaced.addElement(Span(text="12 400 €"))
    document.text.addElement(spaced)
    table = Table(name="Votes")
    table.addElement(TableColumn(numbercolumnsrepeated=2))
    for row in (("Résolution", "Voix pour"), ("Rénovation du préau", "14")):
        table_row = TableRow()
        for value in row:
            cell = TableCell()
            cell.addElement(P(text=value))
            table_row.addElement(cell)
        table.addElement(table_row)
    document.text.addElement(table)
    document.text.addElement(P(text="Fin de séance."))
    document.save(str(path))


def test_odt_headings_paragraphs_and_tables_in_order(tmp_path: Path) -> None:
    path = tmp_path / "pv.odt"
    _odt(path)
    extraction = extract(path)
    assert extraction.doc_type == "odt" and not extraction.context_only
    assert extraction.text == (
        "Procès-verbal de la réunion\n\nLa séance est ouverte à 9 h 30 par Mme Brûlé.\n\n"
        "Budget:   12 400 €\n\nRésolution | Voix pour\n\nRénovation du préau | 14\n\nFin de séance."
    )


def test_ods_sheets_like_xlsx_with_locations(tmp_path: Path) -> None:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    document = OpenDocumentSpreadsheet()
    sheets = {"Q3": [("Région", "Ventes"), ("Île-de-France", "1200"), ("Bretagne", "830")],
              "Équipe": [("Nom", "Rôle"), ("Zoé", "cheffe de projet")]}
    for name, rows in sheets.items():
        table = Table(name=name)
        for row in rows:
            table_row = TableRow()
            for value in row:
                cell = TableCell(valuetype="string")
                cell.addElement(P(text=value))
                table_row.addElement(cell)
            table.addElement(table_row)
        # Spreadsheets pad themselves with a million empty rows: they must cost nothing.
        table.addElement(TableRow(numberrowsrepeated=1_048_000))
        document.spreadsheet.addElement(table)
    path = tmp_path / "ventes.ods"
    document.save(str(path))

    q3, team = _sheets(path, "ods")
    assert q3 == ("Sheet: Q3\nColumns: Région | Ventes\nRégion: Île-de-France | Ventes: 1200\n"
                  "Région: Bretagne | Ventes: 830")
    assert team.startswith("Sheet: Équipe\n") and "Nom: Zoé | Rôle: cheffe de projet" in team


def test_odp_slides_and_notes_with_locations(tmp_path: Path) -> None:
    from odf.draw import Frame, Page, TextBox
    from odf.opendocument import OpenDocumentPresentation
    from odf.presentation import Notes
    from odf.style import MasterPage, PageLayout
    from odf.text import P

    document = OpenDocumentPresentation()
    layout = PageLayout(name="layout")
    document.automaticstyles.addElement(layout)
    master = MasterPage(name="master", pagelayoutname=layout)
    document.masterstyles.addElement(master)
    for number, (title, note) in enumerate([("Feuille de route 2026", "Parler du budget"),
                                            ("Risques identifiés", "")], start=1):
        page = Page(masterpagename=master, name=f"page{number}")
        frame = Frame(width="20cm", height="3cm", x="1cm", y="1cm")
        box = TextBox()
        box.addElement(P(text=title))
        frame.addElement(box)
        page.addElement(frame)
        if note:
            notes = Notes()
            notes_frame = Frame(width="20cm", height="5cm", x="1cm", y="1cm")
            notes_box = TextBox()
            notes_box.addElement(P(text=note))
            notes_frame.addElement(notes_box)
            notes.addElement(notes_frame)
            page.addElement(notes)
        document.presentation.addElement(page)
    path = tmp_path / "deck.odp"
    document.save(str(path))

    extraction = extract(path)
    assert extraction.doc_type == "odp"
    assert _spans_text(extraction) == [
        ({"slide": 1}, "Slide 1\nFeuille de route 2026\nNotes: Parler du budget"),
        ({"slide": 2}, "Slide 2\nRisques identifiés"),
    ]


def test_opendocument_is_sniffed_without_its_extension(tmp_path: Path) -> None:
    source = tmp_path / "pv.odt"
    _odt(source)
    target = tmp_path / "pv.backup"
    target.write_bytes(source.read_bytes())
    assert extract(target).doc_type == "odt"


def test_odt_zip_bomb_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bomb.odt"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        with archive.open("content.xml", "w", force_zip64=True) as member:
            for _ in range(300):
                member.write(b" " * (1 << 20))
    with pytest.raises(ExtractionError, match=r"^refusing ODT: .*zip bomb"):
        extract(path)


def test_odt_with_an_entity_bomb_is_refused_without_expanding(tmp_path: Path) -> None:
    entities = "".join(f'<!ENTITY e{i} "{f"&e{i - 1};" * 10 if i else "lol"}">' for i in range(9))
    content = (f'<?xml version="1.0"?><!DOCTYPE d [{entities}]>'
               '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
               'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>'
               '<text:p>Harmless line</text:p><text:p>&e8;</text:p></office:text></office:body>'
               '</office:document-content>')
    path = tmp_path / "laughs.odt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        archive.writestr("content.xml", content)
    with pytest.raises(ExtractionError, match=r"^corrupt ODT: .*entity amplification") as caught:
        extract(path)
    assert "\n" not in str(caught.value)


# --------------------------------------------------------------------------
# RTF, notebooks, XLS, legacy Office
# --------------------------------------------------------------------------


def test_rtf_with_code_page_and_unicode_escapes(tmp_path: Path) -> None:
    path = tmp_path / "lettre.rtf"
    path.write_bytes(
        rb"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0 Times New Roman;}}"
        rb"{\info{\title Brouillon}}\f0\fs24 Ch\'e8re Mme Dupont,\par "
        rb"Le devis s'\'e9l\'e8ve \'e0 450 \u8364?.\par "
        rb"{\b Merci} de votre confiance.\par}"
    )
    extraction = extract(path)
    assert extraction.doc_type == "rtf"
    assert extraction.text == "Chère Mme Dupont,\nLe devis s'élève à 450 €.\nMerci de votre confiance."


def test_notebook_keeps_markdown_and_code_not_outputs(tmp_path: Path) -> None:
    notebook = {
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Analyse des crues\n", "Données de la Loire."]},
            {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "import pandas as pd\ndf = load()",
             "outputs": [{"output_type": "stream", "name": "stdout", "text": ["OUTPUT_MUST_NOT_APPEAR\n"]}]},
            {"cell_type": "raw", "metadata": {}, "source": "RAW_MUST_NOT_APPEAR"},
        ],
    }
    path = tmp_path / "crues.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    extraction = extract(path)
    assert extraction.doc_type == "notebook"
    assert extraction.text == "# Analyse des crues\nDonnées de la Loire.\n\nimport pandas as pd\ndf = load()"


def test_xls_sheets_with_dates_and_locations(tmp_path: Path) -> None:
    import xlwt

    workbook = xlwt.Workbook(encoding="utf-8")
    budget = workbook.add_sheet("Budget")
    for column, value in enumerate(("Poste", "Montant", "Échéance")):
        budget.write(0, column, value)
    budget.write(1, 0, "Façade")
    budget.write(1, 1, 18500.0)
    budget.write(1, 2, datetime(2026, 3, 14), xlwt.easyxf(num_format_str="YYYY-MM-DD"))
    people = workbook.add_sheet("Équipe")
    people.write(0, 0, "Nom")
    people.write(1, 0, "Anaïs")
    path = tmp_path / "travaux.xls"
    workbook.save(str(path))

    budget_text, people_text = _sheets(path, "xls")
    assert budget_text.startswith("Sheet: Budget\n")
    assert "Poste: Façade | Montant: 18500 | Échéance: 2026-03-14" in budget_text
    assert people_text == "Sheet: Équipe\nColumns: Nom\nNom: Anaïs"


@pytest.mark.parametrize(("name", "words"), [("minutes.doc", "Word 97-2003"), ("pitch.ppt", "PowerPoint 97-2003")])
def test_legacy_office_files_are_context_only_and_say_why(tmp_path: Path, name: str, words: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(2000))
    extraction = extract(path)
    assert extraction.context_only and extraction.doc_type == name.rsplit(".", 1)[1]
    assert name in extraction.text and words in extraction.text
    assert len(extraction.notes) == 1 and words in extraction.notes[0] and "no reader" in extraction.notes[0]


def test_the_queue_says_why_a_file_is_context_only(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from sensetree.engine import Engine
    from sensetree.interfaces.cli import app

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "minutes.doc").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(2000))
    (tree / "plain.txt").write_text("Nothing to say about this one.", encoding="utf-8")
    with Engine(tmp_path / "data") as engine:
        engine.run(SetParams("embedding.model", "minilm"))
        engine.run(AddRootParams(str(tree)))
        engine.index()
    runner = CliRunner()
    queue = json.loads(runner.invoke(app, ["queue", "--json", "--data-dir", str(tmp_path / "data")]).stdout)
    assert [row["path"] for row in queue["noted"]] == [str(tree / "minutes.doc")]
    assert "Word 97-2003" in queue["noted"][0]["notes"] and queue["noted"][0]["status"] == "indexed"
    shown = " ".join(runner.invoke(app, ["queue", "--data-dir", str(tmp_path / "data")]).stdout.split())
    assert "minutes.doc" in shown and "no reader" in shown


def test_image_with_ocr_off_is_context_only(tmp_path: Path) -> None:
    from PIL import Image

    path = tmp_path / "receipt.png"
    Image.new("L", (400, 200), 255).save(path)
    extraction = extract(path, ocr=None)
    assert extraction.context_only and extraction.doc_type == "image"
    assert extraction.notes == ("image (OCR is off)",) and "receipt.png" in extraction.text


def test_image_is_sniffed_without_its_extension(tmp_path: Path) -> None:
    from PIL import Image

    for name, kind in (("IMG_0001", "JPEG"), ("scan_17", "BMP"), ("frame", "WEBP"), ("fax", "TIFF")):
        path = tmp_path / name
        Image.new("RGB", (300, 120), "white").save(path, format=kind)
        assert extract(path, ocr=None).doc_type == "image", kind
    text = tmp_path / "NOTES"
    text.write_text("BMW quarterly report: sales in the north region grew.", encoding="utf-8")
    assert extract(text, ocr=None).doc_type == "text"


# --------------------------------------------------------------------------
# Where in the file
# --------------------------------------------------------------------------


def test_pdf_pages_are_located(tmp_path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for number in (1, 2, 3):
        pdf.add_page()
        if number != 2:  # page 2 is blank: it has no text and no location
            pdf.multi_cell(0, 8, f"Page {number} of the harbour survey. " * 5)
    path = tmp_path / "survey.pdf"
    pdf.output(str(path))

    extraction = extract(path, ocr=None)
    assert [location for location, _ in _spans_text(extraction)] == [{"page": 1}, {"page": 3}]
    for location, text in _spans_text(extraction):
        assert text.startswith(f"Page {location['page']} of the harbour survey.")
    third = extraction.text.index("Page 3")
    assert extraction.location_at(0) == {"page": 1} and extraction.location_at(third) == {"page": 3}
    assert extraction.location_at(third - 1) is None  # the blank line between pages
    assert extraction.locations_between(10, third + 5) == [{"page": 1}, {"page": 3}]


def test_office_and_epub_parts_are_located(corpus: dict[str, Path]) -> None:
    slides = extract(corpus["pptx"])
    assert [location for location, _ in _spans_text(slides)] == [{"slide": 1}, {"slide": 2}, {"slide": 3}]
    assert all(text.startswith(f"Slide {loc['slide']}\n") for loc, text in _spans_text(slides))

    sheets = extract(corpus["xlsx"])
    assert [loc for loc, text in _spans_text(sheets) if text.startswith(f"Sheet: {loc['sheet']}\n")] == [
        {"sheet": "Budget 2026"}, {"sheet": "Headcount"}]

    book = extract(corpus["epub"])
    chapters = _spans_text(book)
    assert [location for location, _ in chapters] == [{"chapter": "Chapter 1: The Storm"},
                                                      {"chapter": "Chapter 2: The Letter"}]
    assert "ninety-one steps" in chapters[0][1]
    assert book.location_at(0) is None  # the book's title comes before any chapter


def test_truncated_text_keeps_locations_inside_it(corpus: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_TEXT_CHARS", 150)
    extraction = extract(corpus["pptx"])
    assert "truncated" in extraction.text
    assert [span.location for span in extraction.spans] == [{"slide": 1}, {"slide": 2}]
    assert all(span.end <= 150 for span in extraction.spans)


def test_unlocated_formats_have_no_spans(corpus: dict[str, Path]) -> None:
    for label in ("docx", "html", "markdown", "email"):
        assert extract(corpus[label]).spans == ()


def test_outlook_msg_headers_body_and_attachments(tmp_path: Path) -> None:
    from tests.support.msgfile import write_msg

    path = tmp_path / "RE_ devis.msg"
    write_msg(path, subject="RE: Devis pour la façade", body="Bonjour Anaïs,\r\nle devis s'élève à 18 500 €.\r\n",
              sender=("Hugo Marchetti", "hugo@northwind.example"),
              recipients=[("Anaïs Lefèvre", "anais@example.org")],
              attachments=[("devis-2026.pdf", b"%PDF-1.4 stand-in"), ("plan.png", b"\x89PNG stand-in")],
              sent=datetime(2026, 3, 2, 9, 30, tzinfo=timezone.utc))
    extraction = extract(path)
    assert extraction.doc_type == "msg" and not extraction.context_only
    assert extraction.text == (
        "From: \"Hugo Marchetti\" <hugo@northwind.example>\nTo: Anaïs Lefèvre <anais@example.org>\n"
        "Subject: RE: Devis pour la façade\nDate: Mon, 02 Mar 2026 09:30:00 +0000\n\n"
        "Bonjour Anaïs,\nle devis s'élève à 18 500 €.\n\nAttachments: devis-2026.pdf, plan.png"
    )


def test_a_damaged_msg_fails_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.msg"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    with pytest.raises(ExtractionError, match=r"^corrupt Outlook message: ") as caught:
        extract(path)
    assert "\n" not in str(caught.value)


def test_location_labels_for_people() -> None:
    assert location_label([]) == ""
    assert location_label([{"page": 3}]) == "page 3"
    assert location_label([{"page": 3}, {"page": 4}, {"page": 5}]) == "pages 3–5"
    assert location_label([{"slide": 2}]) == "slide 2"
    assert location_label([{"sheet": "Q3"}, {"sheet": "Q4"}, {"sheet": "Q3"}]) == "sheets Q3, Q4"
    assert location_label([{"chapter": "Chapter 1: The Storm"}]) == "chapter Chapter 1: The Storm"
