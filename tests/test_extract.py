"""Extraction over real files: the corpus tree plus hand-made awkward cases."""

from __future__ import annotations

import io
import os
import random
import tempfile
import unicodedata
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sensetree.ingest.extract import Extraction, ExtractionError, context_descriptor, extract, limits, normalise
from tests.support.corpus import (
    CAFE_MENU,
    INVOICE_IBAN,
    LATIN1_NOTES,
    PARSER_CODE,
    build_corpus,
)
from tests.support.zips import declare_member_size

READABLE_LABELS = [
    "pdf",
    "docx",
    "xlsx",
    "pptx",
    "html",
    "markdown",
    "code",
    "csv",
    "epub",
    "email",
    "latin1",
    "percent_dir",
    "apostrophe_dir",
    "unicode_name",
    "node_modules_js",
    "node_modules_json",
    "node_modules_readme",
    "node_modules_lib",
    "hidden",
    "docs_inside",
    "docs_evil",
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def texts(corpus: dict[str, Path]) -> dict[str, Extraction]:
    return {label: extract(corpus[label]) for label in READABLE_LABELS}


# --------------------------------------------------------------------------
# The corpus itself
# --------------------------------------------------------------------------


def test_corpus_writes_every_labelled_file(corpus: dict[str, Path]) -> None:
    assert set(corpus) == {*READABLE_LABELS, "corrupt_pdf", "binary"}
    root = corpus["pdf"].parents[1]
    for label, path in corpus.items():
        assert path.is_file() and path.stat().st_size > 0, label
        assert root in path.parents, label
    assert (root / "Docs" / "inside.txt").is_file() and (root / "DocsEvil" / "evil.txt").is_file()
    assert len(list((root / "node_modules").rglob("*.*"))) >= 4


def test_corpus_is_deterministic(tmp_path: Path, corpus: dict[str, Path], texts: dict[str, Extraction]) -> None:
    again = build_corpus(tmp_path)
    assert {label: extract(again[label]).text for label in READABLE_LABELS} == {
        label: extraction.text for label, extraction in texts.items()
    }
    assert again["binary"].read_bytes() == corpus["binary"].read_bytes()
    assert again["email"].read_bytes() == corpus["email"].read_bytes()


# --------------------------------------------------------------------------
# Each format of the corpus
# --------------------------------------------------------------------------


@pytest.mark.parametrize("label", READABLE_LABELS)
def test_readable_files_give_normalised_text(texts: dict[str, Extraction], label: str) -> None:
    extraction = texts[label]
    assert not extraction.context_only
    assert len(extraction.text) > 100
    assert unicodedata.is_normalized("NFC", extraction.text)
    assert "\r" not in extraction.text and "\x00" not in extraction.text
    assert "\n\n\n\n" not in extraction.text
    assert "\ufffd" not in extraction.text


@pytest.mark.parametrize(
    ("label", "doc_type"),
    [
        ("pdf", "pdf"),
        ("docx", "docx"),
        ("xlsx", "xlsx"),
        ("pptx", "pptx"),
        ("html", "html"),
        ("markdown", "markdown"),
        ("code", "code"),
        ("csv", "csv"),
        ("epub", "epub"),
        ("email", "email"),
        ("latin1", "text"),
        ("node_modules_js", "code"),
        ("node_modules_json", "json"),
    ],
)
def test_doc_types(texts: dict[str, Extraction], label: str, doc_type: str) -> None:
    assert texts[label].doc_type == doc_type


def test_pdf_text_layer_with_pages_separated(texts: dict[str, Extraction]) -> None:
    text = texts["pdf"].text
    assert "Hollowbrook Ltd" in text
    assert "EUR 4.82 million" in text
    assert "Carrow Logistics" in text
    assert "\n\nOutlook for Q4 2025" in text  # second page, after a blank line
    assert text.index("Quarterly Revenue Report") < text.index("Outlook for Q4")


def test_corrupt_pdf_raises_a_clear_error(corpus: dict[str, Path]) -> None:
    with pytest.raises(ExtractionError, match=r"^corrupt PDF: ") as caught:
        extract(corpus["corrupt_pdf"])
    assert "\n" not in str(caught.value)


def test_docx_paragraphs_and_table_in_order(texts: dict[str, Extraction]) -> None:
    text = texts["docx"].text
    assert text.startswith("Public Tender 2026: Riverside Library Renovation")
    assert "The submission deadline is 14 March 2026 at 12:00 noon" in text
    assert "Lot | Description | Estimated value" in text
    assert "1 | Roof replacement and insulation | EUR 420,000" in text
    assert text.index("14 March 2026") < text.index("Roof replacement") < text.index("Signed for")


def test_xlsx_cells_carry_their_column_names(texts: dict[str, Extraction]) -> None:
    text = texts["xlsx"].text
    assert "Sheet: Budget 2026" in text and "Sheet: Headcount" in text
    assert "Columns: Department | Q1 | Q2 | Q3 | Q4 | Owner" in text
    assert "Department: Marketing | Q1: 12500 | Q2: 14000 | Q3: 9800 | Q4: 16200 | Owner: Priya Natarajan" in text
    assert "Team: Mobile | Employees: 6 | Location: Kraków | Hiring plan: 1 iOS developer" in text
    assert text.index("Sheet: Budget 2026") < text.index("Sheet: Headcount")


def test_pptx_slides_and_notes(texts: dict[str, Extraction]) -> None:
    text = texts["pptx"].text
    for number in (1, 2, 3):
        assert f"Slide {number}" in text
    assert text.index("Slide 1") < text.index("Project Atlas Kickoff") < text.index("Slide 2")
    assert "Cut invoice generation time from 6 hours to 20 minutes" in text
    assert "Notes: Remember to invite the security team" in text
    assert text.index("Slide 3") < text.index("Notes:")


def test_html_visible_text_only(texts: dict[str, Extraction]) -> None:
    text = texts["html"].text
    assert text.startswith("Growing Tomatoes in a Small Garden")
    assert "six to eight hours of direct sun" in text  # inline <b> does not break the sentence
    assert "blossom end rot" in text
    assert "\nRemove the lower leaves once fruit starts to ripen.\n" in text
    assert "Tomatoes need" in text.split("\n\n")[1]  # paragraphs become blocks
    for hidden in ("MUST_NOT_APPEAR", "font-family", "trackingPixel"):
        assert hidden not in text


def test_code_and_markdown_are_verbatim(texts: dict[str, Extraction], corpus: dict[str, Path]) -> None:
    assert texts["code"].text == PARSER_CODE.rstrip()
    compile(texts["code"].text, "parser.py", "exec")
    assert texts["markdown"].text == corpus["markdown"].read_text(encoding="utf-8").rstrip()


def test_csv_rows_kept(texts: dict[str, Extraction]) -> None:
    text = texts["csv"].text
    assert text.splitlines()[0] == "name,email,city,role,start_date"
    assert "Chloé Martin,chloe.martin@example.com,Lyon,UX designer,2022-01-10" in text


def test_epub_chapters_in_spine_order(texts: dict[str, Extraction]) -> None:
    text = texts["epub"].text
    assert text.startswith("The Lighthouse Keeper's Daughter")
    assert "ninety-one steps of the lighthouse" in text
    assert text.index("Chapter 1: The Storm") < text.index("Maren Holt") < text.index("Chapter 2: The Letter")
    assert text.count("Chapter 2: The Letter") == 1  # the navigation document is not indexed


def test_email_headers_body_and_attachments(texts: dict[str, Extraction]) -> None:
    text = texts["email"].text
    assert "From: Hugo Marchetti <billing@northwind-supplies.example>" in text
    assert "Subject: Invoice INV-2026-0117 for March consulting" in text
    assert "Date: " in text
    assert f"IBAN: {INVOICE_IBAN}" in text
    assert "Attachments: INV-2026-0117.pdf" in text
    assert "<p>" not in text
    assert text.count(INVOICE_IBAN) == 1  # the plain body only, not also its HTML twin


def test_cp1252_text_is_decoded(texts: dict[str, Extraction]) -> None:
    text = texts["latin1"].text
    assert text == unicodedata.normalize("NFC", LATIN1_NOTES).rstrip()
    for word in ("réunion", "Besançon", "Gaëlle", "crème brûlée", "450 €", "« Prévoyons", "Œillet…"):
        assert word in text


def test_decomposed_text_comes_out_nfc(texts: dict[str, Extraction], corpus: dict[str, Path]) -> None:
    raw = corpus["unicode_name"].read_text(encoding="utf-8")
    assert not unicodedata.is_normalized("NFC", raw)  # the corpus really wrote NFD
    assert texts["unicode_name"].text == unicodedata.normalize("NFC", CAFE_MENU).rstrip()
    assert "bœuf bourguignon" in texts["unicode_name"].text


def test_odd_folder_names_are_read(texts: dict[str, Extraction]) -> None:
    assert "Harbourside" in texts["percent_dir"].text
    assert "Siobhán O'Brien" in texts["apostrophe_dir"].text
    assert "Harbour Museum" in texts["docs_inside"].text
    assert "pest control" in texts["docs_evil"].text


def test_binary_file_gives_a_findable_descriptor(corpus: dict[str, Path]) -> None:
    extraction = extract(corpus["binary"])
    assert extraction.context_only
    assert extraction.doc_type == "context"
    assert "model.blend" in extraction.text
    assert "model blend" in extraction.text
    assert str(corpus["binary"].parent) in extraction.text
    assert ".blend" in extraction.text
    assert "KB" in extraction.text


# --------------------------------------------------------------------------
# Encodings and normalisation
# --------------------------------------------------------------------------

SAMPLE = "Grüße aus Köln – naïve café, 日本語のテキスト\r\nsecond line"


@pytest.mark.parametrize(
    "encoded",
    [
        b"\xff\xfe" + SAMPLE.encode("utf-16-le"),
        b"\xfe\xff" + SAMPLE.encode("utf-16-be"),
        b"\xef\xbb\xbf" + SAMPLE.encode("utf-8"),
        b"\xff\xfe\x00\x00" + SAMPLE.encode("utf-32-le"),
    ],
    ids=["utf-16-le", "utf-16-be", "utf-8-sig", "utf-32-le"],
)
def test_byte_order_marks(tmp_path: Path, encoded: bytes) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes(encoded)
    assert extract(path).text == SAMPLE.replace("\r\n", "\n")


def test_utf16_without_bom(tmp_path: Path) -> None:
    path = tmp_path / "export.txt"
    path.write_bytes(("Quarterly export written by a Windows tool without a BOM. " * 5).encode("utf-16-le"))
    extraction = extract(path)
    assert not extraction.context_only
    assert extraction.text.startswith("Quarterly export written by a Windows tool")


def test_short_western_text_prefers_cp1252(tmp_path: Path) -> None:
    # charset-normalizer alone calls this cp1250 and turns "crème" into "crčme".
    sentence = "Le café était délicieux, la crème brûlée parfaite, mais l'hôtel coûtait très cher. "
    path = tmp_path / "avis.txt"
    path.write_bytes((sentence * 3).encode("cp1252"))
    assert extract(path).text == (sentence * 3).strip()


def test_invalid_utf8_bytes_keep_the_valid_text(tmp_path: Path) -> None:
    path = tmp_path / "damaged.md"
    path.write_bytes("Résumé of the café meeting: crème brûlée. ".encode() * 3 + b"\xff\xfe tail \xc3")
    extraction = extract(path)
    assert extraction.doc_type == "markdown"
    assert "Résumé of the café meeting: crème brûlée." in extraction.text
    assert "tail" in extraction.text


def test_normalisation(tmp_path: Path) -> None:
    path = tmp_path / "messy.txt"
    path.write_bytes("line one\r\nline\x00 two\r\n\r\n\r\n\r\n\r\n\r\nafter the gap\rold mac line\n".encode())
    assert extract(path).text == "line one\nline two\n\n\nafter the gap\nold mac line"


@settings(max_examples=300, deadline=None)
@given(blocks=st.lists(st.text(alphabet=st.sampled_from("ae \t\n\r\x00\ufeff\u0301\u0308"), max_size=30), max_size=4))
def test_normalising_block_by_block_is_final(blocks: list[str]) -> None:
    """Extraction normalises each block, then joins them: the result needs no second pass."""
    joined = "\n\n".join(text for text in map(normalise, blocks) if text)
    assert normalise(joined) == joined
    assert unicodedata.is_normalized("NFC", joined) and "\r" not in joined and "\x00" not in joined


def test_json_is_pretty_printed_and_invalid_json_kept(tmp_path: Path) -> None:
    valid = tmp_path / "settings.json"
    valid.write_text('{"city":"Zürich","tags":["a","b"]}', encoding="utf-8")
    assert extract(valid).text == '{\n  "city": "Zürich",\n  "tags": [\n    "a",\n    "b"\n  ]\n}'
    invalid = tmp_path / "broken.json"
    invalid.write_text('{"city": "Zürich", oops', encoding="utf-8")
    assert extract(invalid).text == '{"city": "Zürich", oops'


def test_html_pre_and_line_breaks(tmp_path: Path) -> None:
    path = tmp_path / "snippet.htm"
    path.write_text(
        "<html><body><p>Call us<br>Mon–Fri</p><pre>def f():\n    return 1</pre>"
        "<table><tr><td>Name</td><td>Ada</td></tr><tr><td>Year</td><td>1843</td></tr></table></body></html>",
        encoding="utf-8",
    )
    assert extract(path).text == "Call us\nMon–Fri\n\ndef f():\n    return 1\n\nName Ada\nYear 1843"


def test_html_email_body_is_converted(tmp_path: Path) -> None:
    path = tmp_path / "newsletter.eml"
    path.write_bytes(
        b"From: news@example.com\r\nSubject: Spring sale\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
        b"<html><body><h1>Spring sale</h1><p>All seeds &amp; bulbs 20% off.</p><script>x()</script></body></html>"
    )
    text = extract(path).text
    assert "Subject: Spring sale" in text
    assert "All seeds & bulbs 20% off." in text
    assert "<p>" not in text and "x()" not in text


# --------------------------------------------------------------------------
# Sniffing unknown extensions
# --------------------------------------------------------------------------


def test_sniffing_by_content(tmp_path: Path, corpus: dict[str, Path]) -> None:
    cases = {
        "report": (corpus["pdf"], "pdf", "Hollowbrook Ltd"),
        "tender.bak": (corpus["docx"], "docx", "14 March 2026"),
        "sheet.dat": (corpus["xlsx"], "xlsx", "Sheet: Headcount"),
        "deck.tmp": (corpus["pptx"], "pptx", "Slide 3"),
        "book.download": (corpus["epub"], "epub", "Maren Holt"),
        "page.cache": (corpus["html"], "html", "blossom end rot"),
        "README": (corpus["markdown"], "text", "Weekly sync"),
    }
    for name, (source, doc_type, needle) in cases.items():
        target = tmp_path / name
        target.write_bytes(source.read_bytes())
        extraction = extract(target)
        assert extraction.doc_type == doc_type, name
        assert needle in extraction.text, name


def test_binary_with_text_extension_is_context_only(tmp_path: Path) -> None:
    path = tmp_path / "video.ts"
    path.write_bytes(random.Random(1).randbytes(8000))
    extraction = extract(path)
    assert extraction.context_only and extraction.doc_type == "context"
    assert "video.ts" in extraction.text


def test_plain_zip_archive_lists_its_members(tmp_path: Path) -> None:
    path = tmp_path / "photos.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("holiday.jpg", random.Random(2).randbytes(500))
    extraction = extract(path)
    assert (extraction.doc_type, extraction.context_only) == ("archive", False)
    assert extraction.text == "Archive photos.zip: 1 file\nholiday.jpg (500 bytes)"


# --------------------------------------------------------------------------
# Bounds and hostile files
# --------------------------------------------------------------------------


def _zeros_zip(member: str, megabytes: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open(member, "w", force_zip64=True) as file:
            chunk = bytes(1024 * 1024)
            for _ in range(megabytes):
                file.write(chunk)
    return buffer.getvalue()


def test_zip_bomb_disguised_as_docx_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cv.docx"
    path.write_bytes(_zeros_zip("word/document.xml", 300))
    assert path.stat().st_size < 1024 * 1024
    with pytest.raises(ExtractionError, match=r"^refusing DOCX: .*zip bomb"):
        extract(path)


def test_over_compressed_zip_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "numbers.xlsx"
    path.write_bytes(_zeros_zip("xl/worksheets/sheet1.xml", 20))  # 20 MB out of ~20 KB
    with pytest.raises(ExtractionError, match=r"^refusing XLSX: .*zip bomb"):
        extract(path)


def test_zip_member_declaring_less_than_it_holds_is_refused_before_inflating(tmp_path: Path) -> None:
    """`zipfile.read` inflates a member's whole stream before cutting it to the declared size,
    so a member that declares 2 KB over a larger stream could still inflate a bomb."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", random.Random(3).randbytes(200_000))
    path = tmp_path / "lying.docx"
    path.write_bytes(declare_member_size(buffer.getvalue(), "word/document.xml", 2048))
    with pytest.raises(ExtractionError, match=r"^corrupt DOCX: word/document.xml declares 2.0 KB but holds"):
        extract(path)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("letter.docx", b"this is not a zip", r"^corrupt DOCX: not a valid zip archive"),
        ("deck.pptx", b"PK\x03\x04 truncated", r"^corrupt PPTX: "),
        ("book.epub", b"", None),  # empty: context only, not an error
    ],
)
def test_corrupt_office_files(tmp_path: Path, name: str, content: bytes, message: str | None) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    if message is None:
        assert extract(path).context_only
    else:
        with pytest.raises(ExtractionError, match=message):
            extract(path)


def test_docx_with_garbage_xml(tmp_path: Path, corpus: dict[str, Path]) -> None:
    path = tmp_path / "damaged.docx"
    with zipfile.ZipFile(corpus["docx"]) as source, zipfile.ZipFile(path, "w") as target:
        for item in source.infolist():
            data = b"<w:document><unclosed" if item.filename == "word/document.xml" else source.read(item)
            target.writestr(item, data)
    with pytest.raises(ExtractionError, match=r"^corrupt DOCX: ") as caught:
        extract(path)
    assert "\n" not in str(caught.value)


def test_encrypted_pdfs(tmp_path: Path) -> None:
    from fpdf import FPDF

    def write(path: Path, **passwords: str) -> None:
        pdf = FPDF()
        pdf.set_encryption(**passwords)
        pdf.add_page()
        pdf.set_font("Helvetica")
        pdf.cell(text="Confidential salary review for the Hollowbrook board")
        pdf.output(str(path))

    locked, restricted = tmp_path / "locked.pdf", tmp_path / "restricted.pdf"
    write(locked, owner_password="owner", user_password="user")
    write(restricted, owner_password="owner")  # opens with the empty user password
    with pytest.raises(ExtractionError, match=r"^encrypted PDF"):
        extract(locked)
    assert "Confidential salary review" in extract(restricted).text


def test_pdf_without_text_layer(tmp_path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.rect(20, 20, 120, 80, style="F")  # like a scanned page: marks, no text
    path = tmp_path / "scan_0001.pdf"
    pdf.output(str(path))
    extraction = extract(path, ocr=None)  # with OCR, see tests/test_ocr.py
    assert extraction.context_only and extraction.doc_type == "pdf"
    assert "scan_0001.pdf" in extraction.text and "no text layer" in extraction.text


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "todo.txt"
    path.write_bytes(b"")
    extraction = extract(path)
    assert extraction.context_only and extraction.doc_type == "text"
    assert "todo.txt" in extraction.text and "empty" in extraction.text


def test_too_large_file_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "dump.log"
    path.write_text("x" * 5000)
    extraction = extract(path, max_bytes=1000)
    assert extraction.context_only
    assert "too large" in extraction.text and "xxx" not in extraction.text


def test_long_text_is_truncated_with_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_TEXT_CHARS", 1000)
    path = tmp_path / "long.txt"
    path.write_text("All work and no play makes Jack a dull boy.\n" * 200)
    text = extract(path).text
    assert text.startswith("All work and no play")
    assert len(text) < 1200
    assert text.endswith("characters were indexed]") and "truncated" in text


def test_huge_sheet_is_capped(corpus: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_SHEET_CHARS", 150)
    text = extract(corpus["xlsx"]).text
    assert "[… sheet truncated" in text
    assert "Department: Marketing" in text and "Training" not in text
    assert "Sheet: Headcount" in text  # a capped sheet does not hide the next one


def test_vanished_file(tmp_path: Path) -> None:
    path = tmp_path / "gone.pdf"
    path.write_bytes(b"%PDF-1.4")
    path.unlink()
    with pytest.raises(ExtractionError, match=r"^cannot read: .*gone\.pdf"):
        extract(path)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any file")
def test_permission_denied(tmp_path: Path) -> None:
    path = tmp_path / "private.txt"
    path.write_text("private")
    path.chmod(0)
    try:
        with pytest.raises(ExtractionError, match=r"^cannot read: "):
            extract(path)
    finally:
        path.chmod(0o600)


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    folder = tmp_path / "archive.txt"
    folder.mkdir()
    with pytest.raises(ExtractionError, match=r"^cannot read: .*not a regular file"):
        extract(folder)


# --------------------------------------------------------------------------
# Context descriptor
# --------------------------------------------------------------------------


def test_context_descriptor_lists_some_siblings(tmp_path: Path) -> None:
    for number in range(20):
        (tmp_path / f"render_{number:02}.png").write_bytes(b"\x89PNG")
    (tmp_path / ".DS_Store").write_bytes(b"\x00")
    target = tmp_path / "render_05.png"
    text = context_descriptor(target, "PNG image")
    assert "File: render_05.png" in text
    assert "Name: render 05 png" in text
    assert "Type: PNG image, .png extension" in text
    assert "Size: 4 bytes" in text
    siblings = text.split("Other files in this folder: ")[1].split(", ")
    assert len(siblings) == 15 and "render_05.png" not in siblings and ".DS_Store" not in siblings
    assert siblings[0] == "render_00.png"


def test_context_descriptor_of_a_missing_file(tmp_path: Path) -> None:
    text = context_descriptor(tmp_path / "nowhere" / "lost.bin", "binary file")
    assert "lost.bin" in text and "Size" not in text


# --------------------------------------------------------------------------
# Whatever the bytes, only Extraction or ExtractionError
# --------------------------------------------------------------------------

EXTENSIONS = ["", ".txt", ".pdf", ".docx", ".xlsx", ".pptx", ".epub", ".eml", ".html", ".json", ".csv", ".py"]
PREFIXES = [b"", b"%PDF-1.7\n", b"PK\x03\x04", b"<html>", b"\xff\xfe", b"From: a@b.c\r\n\r\n"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    extension=st.sampled_from(EXTENSIONS),
    prefix=st.sampled_from(PREFIXES),
    body=st.binary(max_size=400),
)
def test_arbitrary_bytes_never_crash(extension: str, prefix: bytes, body: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"fuzz{extension}"
        path.write_bytes(prefix + body)
        try:
            extraction = extract(path)
        except ExtractionError as err:
            assert str(err) and "\n" not in str(err)
        else:
            assert unicodedata.is_normalized("NFC", extraction.text)
            assert "\x00" not in extraction.text
