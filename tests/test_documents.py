"""Documents as people have them, end to end: scans read by OCR, places in a file, archives, more
formats, filters and duplicates, on real files that real libraries write, with the real OCR engine,
the bundled embedder and LanceDB."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from sensetree.engine import Engine
from tests.support.corpus import Labelled
from tests.support.pages import render_page, scanned
from tests.support.zips import docx_bytes, zip_bytes
from sensetree.operations import SearchParams, TreeParams
from sensetree.operations import SetParams
from sensetree.handlers.files import explorer as explorer_of
from tests.support.index import catalog_row, chunk_count, status, stored_chunks, stores

pytestmark = pytest.mark.slow

LETTER = ["Dear Ms Okafor, thank you for the visit to the harbour office last week.",
          "The Quetzalcoatl shipment 4471 arrives in Rotterdam on the ninth of May, "
          "and the customs papers are ready at the front desk."]
RECEIPT = "Café Müller, Zürich. Reçu n° 8812 pour deux croissants et un café crème."


def _text_pdf(path: Path, pages: list[str]) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 8, text)
    pdf.output(str(path))


def _odt(path: Path, text: str) -> None:
    from odf.opendocument import OpenDocumentText
    from odf.text import P

    document = OpenDocumentText()
    document.text.addElement(P(text=text))
    document.save(str(path))


def _build(root: Path) -> dict[str, Path]:
    place = Labelled(root)
    files = place.files

    first, _ = render_page(LETTER[0], dpi=200)
    second, _ = render_page(LETTER[1], dpi=200)
    scanned(first, seed=1).convert("RGB").save(place("scan", "scans/letter.pdf"), "PDF", resolution=200,
                                               save_all=True, append_images=[scanned(second, seed=2).convert("RGB")])
    receipt, _ = render_page(RECEIPT, dpi=200, height_in=3)
    scanned(receipt, seed=3).save(place("receipt_jpg", "scans/receipt.jpg"), "JPEG", quality=70)
    receipt.save(place("receipt_png", "scans/receipt.png"))
    _text_pdf(place("report", "docs/report.pdf"), ["Chapter one: the lighthouse budget.",
                                                   "Chapter two: the lighthouse keeper Anselm Varga retires.",
                                                   "Chapter three: the new lamp."])
    _odt(place("odt", "docs/minutes.odt"), "Minutes: the Brûlé committee approved the Vesterhavn ferry timetable.")
    place("rtf", "docs/memo.rtf").write_text(r"{\rtf1\ansi The memo about the Kestrel drone licence.\par}",
                                            encoding="utf-8")
    place("ipynb", "docs/analysis.ipynb").write_text(json.dumps({
        "cells": [{"cell_type": "markdown", "source": ["# Salinity of the Wadden estuary"]},
                  {"cell_type": "code", "source": ["salinity = load('wadden.csv')"],
                   "outputs": [{"output_type": "stream", "text": ["OUTPUTSHOULDNOTBEINDEXED"]}]}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    nested = zip_bytes({"notes.txt": b"Nested notes: the Ptarmigan survey of 2019."})
    place("zip", "archives/projects-2019.zip").write_bytes(zip_bytes({
        "report/final.docx": docx_bytes("Final report on the Albatross crane refit."), "old/nested.zip": nested}))
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("fine.txt", "A fine note about the Osprey tide gauge.")
        archive.writestr("zeros.bin", b"\0" * (120 * 1024 * 1024))
    place("bomb", "archives/mixed.zip").write_bytes(bomb.getvalue())
    import gzip
    import tarfile

    place("gz", "archives/readme.txt.gz").write_bytes(gzip.compress(b"The Capybara release notes, version 3."))
    with tarfile.open(place("tgz", "archives/site.tar.gz"), "w:gz") as archive:
        data = b"The Heron site map of the marina."
        info = tarfile.TarInfo("site/map.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    for folder in ("a", "b", "c"):
        place(f"copy_{folder}", f"copies/{folder}/itinerary.txt").write_text(
            "Itinerary for the Kittiwake expedition: depart Bergen at dawn.", encoding="utf-8")
    place("old", "dated/old.txt").write_text("Budget of the Marmot project, first draft.", encoding="utf-8")
    place("new", "dated/new.txt").write_text("Budget of the Marmot project, final version.", encoding="utf-8")
    os.utime(files["old"], (1_577_836_800, 1_577_836_800))  # 2020-01-01
    return files


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, make_engine):
    base = tmp_path_factory.mktemp("documents")
    files = _build(base / "tree")
    engine = make_engine(base / "data", base / "tree", settings={"retrieval.rerank": False}, index=False)
    progress = engine.index()
    yield engine, files, progress
    engine.close()


def _top(engine: Engine, query: str, **kw):
    results = engine.run(SearchParams(query, **kw)).results
    assert results, query
    return results[0]


def test_scans_and_photos_are_read_by_ocr_and_located_by_page(indexed):
    engine, files, progress = indexed
    assert progress.ocr.count >= 4 and progress.ocr.per_s > 0  # two scanned pages, two images
    hit = _top(engine, "Quetzalcoatl shipment 4471")
    assert hit.path == str(files["scan"]) and hit.location == {"page": 2} and hit.location_label == "p. 2"
    receipt = {r.path for r in engine.run(SearchParams("Müller Zürich reçu 8812")).results[:2]}
    assert receipt == {str(files["receipt_jpg"]), str(files["receipt_png"])} or \
        len(receipt & {str(files["receipt_jpg"]), str(files["receipt_png"])}) == 1  # identical text may collapse
    assert status(engine, files["scan"]) == "indexed"
    preview = explorer_of(engine).preview(str(files["scan"]), hit.chunk_index)
    assert "Quetzalcoatl" in preview["text"] and preview["location_label"] == "p. 2"


def test_text_pdfs_and_office_formats_know_where_each_chunk_is(indexed):
    engine, files, _ = indexed
    hit = _top(engine, "lighthouse keeper Anselm Varga retires")
    assert hit.path == str(files["report"]) and hit.location_label.startswith(("p. ", "pp. "))
    for query, label in (("Brûlé committee Vesterhavn ferry", "odt"), ("Kestrel drone licence", "rtf"),
                         ("salinity Wadden estuary", "ipynb")):
        assert _top(engine, query).path == str(files[label]), query
    assert not engine.run(SearchParams("OUTPUTSHOULDNOTBEINDEXED", hybrid=True)).results or \
        _top(engine, "OUTPUTSHOULDNOTBEINDEXED").path != str(files["ipynb"])


def test_archive_members_are_files_of_their_own_previewable_and_scoped(indexed):
    engine, files, _ = indexed
    member = f"{files['zip']}/report/final.docx"
    hit = _top(engine, "Albatross crane refit")
    assert hit.path == member
    assert _top(engine, "Ptarmigan survey").path == f"{files['zip']}/old/nested.zip/notes.txt"  # two levels
    assert _top(engine, "Capybara release notes").path.startswith(str(files["gz"]) + "/")
    assert _top(engine, "Heron site map marina").path == f"{files['tgz']}/site/map.txt"
    scoped = engine.run(SearchParams("Albatross crane", scope=str(files["zip"].parent))).results
    assert member in [r.path for r in scoped]
    assert "Albatross" in explorer_of(engine).preview(member)["text"]
    assert engine.reader().read_text(member, 1000).text.startswith("Final report")
    row = catalog_row(engine, member)  # an archive's member: not a path on disk, that `file` could show
    assert row.kind == "member" and row.status == "indexed"


def test_a_bomb_inside_an_archive_is_refused_and_its_siblings_are_indexed(indexed):
    engine, files, _ = indexed
    assert _top(engine, "Osprey tide gauge").path == f"{files['bomb']}/fine.txt"
    bomb = catalog_row(engine, f"{files['bomb']}/zeros.bin")
    assert bomb is not None and bomb.status == "failed" and bomb.error


def test_filters_by_type_and_date(indexed):
    engine, files, _ = indexed
    pdfs = engine.run(SearchParams("lighthouse shipment budget", types="pdf")).results
    assert pdfs and {Path(r.path).suffix for r in pdfs} == {".pdf"}
    marmot = engine.run(SearchParams("Marmot project budget", modified_after="2025-01-01")).results
    assert str(files["new"]) in [r.path for r in marmot] and str(files["old"]) not in [r.path for r in marmot]
    early = engine.run(SearchParams("Marmot project budget", modified_before="2020-12-31")).results
    assert [r.path for r in early] == [str(files["old"])]
    tree = engine.run(TreeParams("Marmot budget", modified_before="2020-12-31"))
    node, _ = tree.tree, tree.notices
    assert node is not None


def test_identical_files_show_once_with_their_other_places(indexed):
    engine, files, _ = indexed
    results = engine.run(SearchParams("Kittiwake expedition itinerary Bergen")).results
    copies = {str(files[f"copy_{x}"]) for x in "abc"}
    shown = [r for r in results if r.path in copies]
    assert len(shown) == 1 and set(shown[0].duplicates) == copies - {shown[0].path}
    engine.run(SetParams("retrieval.collapse_duplicates", False))
    try:
        assert len([r for r in engine.run(SearchParams("Kittiwake expedition itinerary Bergen")).results if r.path in copies]) == 3
    finally:
        engine.run(SetParams("retrieval.collapse_duplicates", True))


def test_a_deleted_archive_takes_its_members_with_it(tmp_path, make_engine):
    root = tmp_path / "tree"
    root.mkdir()
    archive = root / "box.zip"
    archive.write_bytes(zip_bytes({"inside/note.txt": b"The Wombat inventory of the shed."}))
    with make_engine(tmp_path / "data", root) as engine:
        member = f"{archive}/inside/note.txt"
        # an archive's members are no paths on disk: the stores themselves say what they hold of them
        assert catalog_row(engine, member) is not None and stored_chunks(engine, member)
        archive.write_bytes(zip_bytes({"inside/other.txt": b"The Quokka list."}))  # changed: the old member goes
        engine.index()
        assert catalog_row(engine, member) is None and not stored_chunks(engine, member)
        assert catalog_row(engine, f"{archive}/inside/other.txt").status == "indexed"
        archive.unlink()
        engine.index()
        with stores(engine.data_dir) as stored:
            assert [r.path for r in stored.catalog.files.all()] == [] and chunk_count(engine) == 0
