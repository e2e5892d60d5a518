"""The operations that were side doors before (issue 34): indexing (once and watching), reading a file as a
model does, a PDF page, opening a file, pulling a model and ``doctor``, each answered by its one handler
through ``engine.run``, and the one ``read_file`` and ``list_directory`` that MCP and the assistant share."""

from __future__ import annotations

import threading

import pytest

from sensetree.answers import Diagnosis, Download, FileContents, Indexed, Opened, PageImage, Pulled
from sensetree.chat.tools import OPERATIONS as ASSISTANT_TOOLS
from sensetree.chat.tools import Sources, Toolbox
from sensetree.engine import Engine
from sensetree.errors import NotFound, Unsupported
from sensetree.handlers import files as file_handlers
from sensetree.operations import (
    OPERATIONS,
    READ_CHARS,
    TOOLS,
    AddRootParams,
    DoctorParams,
    IndexParams,
    IndexProgress,
    OpenParams,
    PageParams,
    PullParams,
    ReadParams,
    SetParams,
)
from sensetree.reader import OutsideRoots
from tests.support.waiting import wait_for


@pytest.fixture
def library(tmp_path, write_tree):
    root = tmp_path / "docs"
    written = write_tree(root, {"notes/harbour.txt": "the harbour opens at nine",
                                "long/ledger.txt": "ledger line of figures\n" * 2000})
    (tmp_path / "secret.txt").write_text("the vault code is 1234", encoding="utf-8")
    engine = Engine(tmp_path / "data")
    engine.run(SetParams("embedding.model", "minilm"))
    engine.run(AddRootParams(str(root)))
    yield engine, root, written
    engine.close()


def test_index_runs_once_and_reports_what_it_did_as_it_goes(library):
    engine, root, _ = library
    heard: list[object] = []
    done = engine.run(IndexParams(), on_progress=heard.append)
    assert isinstance(done, Indexed) and done.files == 2 and done.keyword_ready == 2 and done.semantic == 2
    assert not done.stopped and done.failed == 0 and done.chunks_embedded > 0
    assert heard and all(isinstance(event, IndexProgress) for event in heard)  # live figures, no round under watch
    assert set(done.as_dict()) == {"files", "keyword_ready", "semantic", "chunks_embedded", "chunks_left", "failed",
                                   "stopped", "seconds"}  # what `sensetree index --json` prints


def test_index_with_watch_reports_each_round_until_stopped(library):
    engine, root, _ = library
    stop = threading.Event()
    rounds: list[Indexed] = []
    answer: list[Indexed] = []

    def heard(event: object) -> None:
        if isinstance(event, Indexed):
            rounds.append(event)

    worker = threading.Thread(target=lambda: answer.append(
        engine.run(IndexParams(watch=True), on_progress=heard, stop=stop)), daemon=True)
    worker.start()
    try:
        assert wait_for(lambda: len(rounds) >= 1, timeout=120)
        assert rounds[0].files == 2
        (root / "notes" / "tide.txt").write_text("tide tables for March", encoding="utf-8")
        assert wait_for(lambda: any(r.files == 3 and r.keyword_ready == 3 for r in rounds), timeout=120)
    finally:
        stop.set()
        worker.join(60)
    assert not worker.is_alive() and answer and answer[0].files == 3  # the last round's report


def test_index_is_local_to_the_process_that_asks(library):
    op = OPERATIONS["index"]
    assert op.local and op.progress and op.tool is None
    assert OPERATIONS["pull"].local


def test_read_gives_one_limit_to_every_model(library):
    engine, root, written = library
    short = engine.run(ReadParams(str(written["notes/harbour.txt"])))
    assert isinstance(short, FileContents) and short.text == "the harbour opens at nine"
    assert not short.truncated and short.note is None and short.name == "harbour.txt"
    long = engine.run(ReadParams(str(written["long/ledger.txt"])))
    assert long.truncated and len(long.text) == READ_CHARS < long.total_chars and str(READ_CHARS) in long.note
    with pytest.raises(OutsideRoots):
        engine.run(ReadParams(str(root.parent / "secret.txt")))
    with pytest.raises(NotFound):
        engine.run(ReadParams(str(root / "notes" / "gone.txt")))


def test_mcp_and_the_assistant_offer_the_same_read_file_and_list_directory():
    assert TOOLS["read_file"] is OPERATIONS["read"] and TOOLS["list_directory"] is OPERATIONS["browse"]
    assert {"read_file", "list_directory"} <= set(ASSISTANT_TOOLS)


def test_the_assistant_reads_and_lists_through_the_operations(library):
    engine, root, written = library
    engine.run(IndexParams())
    tools = Toolbox(engine, None, Sources())
    read = tools.run("read_file", {"path": str(written["long/ledger.txt"])})
    assert read.step == f"reading: {written['long/ledger.txt']}" and read.new_sources
    assert f"first {READ_CHARS} of" in read.text  # the limit MCP's read_file has; the budget cuts more
    listed = tools.run("list_directory", {"path": str(root)})
    assert listed.text.splitlines()[0] == str(root) and "[D] notes" in listed.text and "[D] long" in listed.text
    roots = tools.run("list_directory", {})  # one meaning: without a path, the roots, as over MCP
    assert str(root) in roots.text
    scoped = Toolbox(engine, str(root / "notes"), Sources()).run("list_directory", {})
    assert "[F] harbour.txt" in scoped.text and "[D] long" not in scoped.text  # a scoped chat: its folder
    assert tools.run("list_directory", {"path": str(root.parent)}).text.startswith("refused")


def test_a_pdf_page_comes_as_a_png(library, tmp_path):
    engine, root, _ = library
    from fpdf import FPDF

    pdf = FPDF()
    for text in ("first page", "second page"):
        pdf.add_page()
        pdf.set_font("Helvetica", size=12)
        pdf.cell(0, 10, text)
    path = root / "two.pdf"
    pdf.output(str(path))
    image = engine.run(PageParams(str(path), 2))
    assert isinstance(image, PageImage) and image.data.startswith(b"\x89PNG")
    assert PageImage.from_dict(image.as_dict()) == image
    assert OPERATIONS["page"].media == "image/png"


def test_open_asks_the_desktop_inside_the_roots_only(library, monkeypatch):
    engine, root, written = library
    opened: list[tuple[str, int | None]] = []
    monkeypatch.setattr(file_handlers, "open_with_system", lambda path, page: opened.append((path, page)) or page)
    done = engine.run(OpenParams(str(written["notes/harbour.txt"]), page=3))
    assert isinstance(done, Opened) and done == Opened(str(written["notes/harbour.txt"]), 3)
    with pytest.raises(OutsideRoots):
        engine.run(OpenParams(str(root.parent / "secret.txt")))
    with pytest.raises(NotFound):
        engine.run(OpenParams(str(root / "gone.txt")))
    assert len(opened) == 1

    def no_desktop(path: str, page: int | None) -> int | None:
        raise OSError("no xdg-open")

    monkeypatch.setattr(file_handlers, "open_with_system", no_desktop)
    with pytest.raises(Unsupported) as refused:
        engine.run(OpenParams(str(written["notes/harbour.txt"])))
    assert refused.value.status == 501


def test_pull_reports_each_file_as_it_downloads(library, monkeypatch, tmp_path):
    engine, _, _ = library

    def fake_pull(name, progress):
        progress("model.onnx", 5, 10)
        progress("model.onnx", 10, 10)
        return tmp_path / "data" / "models" / name

    monkeypatch.setattr(engine.models, "pull_reranker", fake_pull)
    heard: list[Download] = []
    pulled = engine.run(PullParams("some/reranker"), on_progress=heard.append)
    assert pulled == Pulled("some/reranker", str(tmp_path / "data" / "models" / "some/reranker"))
    assert heard == [Download("model.onnx", 5, 10), Download("model.onnx", 10, 10)]


def test_doctor_is_an_operation_that_reads_the_data_dir_settings(library, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nothing outside this test's folder
    engine, _, _ = library
    report = engine.run(DoctorParams())
    assert isinstance(report, Diagnosis) and report.folders["data"] == str(tmp_path / "data")
    assert {m["role"] for m in report.models} == {"embedding", "chat", "reranker", "ocr"}
    assert "MiniLM" in next(m["name"] for m in report.models if m["role"] == "embedding")
    assert Diagnosis.from_dict(report.as_dict()) == report

