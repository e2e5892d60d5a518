"""End to end: a real tree of real files, the real default models, the real LanceDB."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from sensetree.engine import Engine, SenseTreeError, WriterBusy
from tests.support.corpus import build_corpus
from sensetree.operations import FolderModeParams, SearchParams
from sensetree.operations import AddRootParams, SetParams
from tests.support.index import (catalog_row, chunk_count, detail, entry, failed, status, status_counts, stored_chunks,
                                 stores, texts)

pytestmark = pytest.mark.slow  # the default E5 model indexes the whole corpus


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, make_engine):
    """The corpus indexed once with the default settings (multilingual E5, no sense model)."""
    base = tmp_path_factory.mktemp("e2e")
    files = build_corpus(base / "tree")
    engine = make_engine(base / "data", base / "tree", model=None, index=False)
    progress = engine.index()
    yield engine, files, progress
    engine.close()


def test_every_readable_file_is_indexed_with_its_chunks(indexed):
    engine, files, progress = indexed
    assert engine.embedder.identity.startswith("intfloat/multilingual-e5-small")
    for label in ("pdf", "docx", "xlsx", "pptx", "html", "markdown", "code", "csv", "epub", "email", "latin1",
                  "percent_dir", "apostrophe_dir", "unicode_name", "docs_inside", "docs_evil"):
        row = detail(engine, files[label])
        assert row.status == "indexed", (label, row.status)
        stored = row.chunks
        assert len(stored) == row.chunks_count >= 1
        assert [c["chunk_index"] for c in stored] == list(range(row.chunks_count))
        assert stored[0]["text"].startswith(f"[{row.doc_type}] ")  # chunk 0 carries the sense
    assert progress.failed == 1
    with stores(engine.data_dir) as catalogued:  # the catalog's sum over the files it counts indexed
        total = catalogued.catalog.files.total_chunks()
    assert chunk_count(engine) == total + detail(engine, files["corrupt_pdf"]).chunks_count


def test_corrupt_file_fails_clearly_but_stays_findable_by_name(indexed):
    engine, files, _ = indexed
    row = detail(engine, files["corrupt_pdf"])
    assert row.status == "failed"
    assert "pdf" in row.error.lower()
    assert failed(engine) == [row.path]
    stored = row.chunks
    assert stored and "broken.pdf" in stored[0]["text"]


def test_unreadable_binary_gets_a_context_entry(indexed):
    engine, files, _ = indexed
    row = detail(engine, files["binary"])
    assert row.status == "indexed" and row.doc_type == "context"
    assert "model.blend" in row.chunks[0]["text"]


def test_blocks_hidden_and_ignored(indexed):
    engine, files, _ = indexed
    block = detail(engine, files["node_modules_js"].parents[1])
    assert block.kind == "block" and block.status == "indexed"
    assert entry(engine, block.path).members == 4
    assert catalog_row(engine, files["node_modules_js"]) is None
    assert catalog_row(engine, files["hidden"]) is None
    counts = status_counts(engine)
    assert counts["block member"] == 4 and counts["pending"] == 0


def test_search_finds_content_across_formats(indexed):
    engine, files, _ = indexed
    cases = {
        "submission deadline for the public tender": "docx",
        "FR7630006000011234567890189": "email",
        "how to grow tomatoes": "html",
    }
    for query, label in cases.items():
        response = engine.run(SearchParams(query, limit=5, rerank=False))
        assert response.results, query
        assert response.results[0].path == os.path.normpath(str(files[label])), (query, response.results[0].path)


def test_no_change_rescan_does_no_work(indexed):
    engine, _, _ = indexed
    with stores(engine.data_dir) as stored:
        before = stored.chunks.table.handle.version
    report = engine.scan()
    assert (report.new, report.changed, report.deleted) == (0, 0, 0)
    assert engine.index().files_done == 0
    with stores(engine.data_dir) as stored:
        assert stored.chunks.table.handle.version >= before


def test_second_writer_is_refused(indexed):
    engine, _, _ = indexed
    other = Engine(engine.data_dir)
    try:
        with engine.writer():
            with pytest.raises(WriterBusy):
                other.index()
    finally:
        other.close()


def test_modify_rename_delete_and_model_change(tmp_path):
    tree = tmp_path / "tree"
    files = build_corpus(tree)
    with Engine(tmp_path / "data") as engine:
        engine.run(AddRootParams(str(tree)))
        engine.index()
        markdown = os.path.normpath(str(files["markdown"]))
        old_hash = catalog_row(engine, markdown).content_hash

        # modify: new content replaces the old rows, no duplicates
        Path(markdown).write_text("# Minutes\n\nThe committee approved the zeppelin hangar budget.", encoding="utf-8")
        progress = engine.index()
        assert progress.files_done == 1
        row = catalog_row(engine, markdown)
        assert row.content_hash != old_hash and row.status == "indexed"
        chunks = texts(engine, markdown)
        assert len(chunks) == row.chunks and "zeppelin" in chunks[0]
        assert engine.run(SearchParams("zeppelin hangar", limit=3, rerank=False)).results[0].path == markdown

        # touch without change: the content hash skips the work
        os.utime(markdown, (time.time() + 5, time.time() + 5))
        progress = engine.index()
        assert (progress.files_done, progress.embedding.count) == (1, 0)  # looked at, nothing re-embedded or rewritten
        assert status(engine, markdown) == "indexed"

        # rename: the old path leaves the index, the new one enters it
        renamed = os.path.join(os.path.dirname(markdown), "renamed_minutes.md")
        os.rename(markdown, renamed)
        engine.index()
        assert catalog_row(engine, markdown) is None and not stored_chunks(engine, markdown)
        assert status(engine, renamed) == "indexed"

        # delete a folder: its files leave the index and the search
        shutil.rmtree(tree / "Docs")
        engine.index()
        inside = os.path.normpath(str(files["docs_inside"]))
        with stores(engine.data_dir) as stored:
            assert stored.catalog.files.get(inside) is None
            assert stored.chunks.table.count(f"path = '{inside}'") == 0
            rows = stored.chunks.table.handle.search().select(["path", "chunk_index"]).limit(100_000).to_list()
        keys = [(r["path"], r["chunk_index"]) for r in rows]
        assert len(keys) == len(set(keys))

        # the embedding model changes: everything is wiped and re-indexed with the new one
        indexed_before = status_counts(engine)["indexed"]
        message = engine.run(SetParams("embedding.model", "minilm", confirm=True)).notice
        assert message and "re-indexed" in message
        assert chunk_count(engine) == 0 and status_counts(engine)["indexed"] == 0
        engine.index()
        assert status_counts(engine)["indexed"] == indexed_before
        with stores(engine.data_dir) as stored:
            models = {r["embed_model"]
                      for r in stored.chunks.table.handle.search().select(["embed_model"]).limit(100_000).to_list()}
        assert models == {engine.embedder.identity} and "MiniLM" in engine.embedder.identity


def test_roots_are_checked(tmp_path):
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    with Engine(tmp_path / "data") as engine:
        with pytest.raises(SenseTreeError):
            engine.run(AddRootParams(str(tmp_path / "missing")))
        engine.run(AddRootParams(str(tmp_path / "a" / "b")))
        engine.run(AddRootParams(str(tmp_path / "a" / "b")))  # adding a root twice is harmless
        assert len(engine.roots()) == 1
        with pytest.raises(SenseTreeError, match="already indexed as part of"):
            engine.run(AddRootParams(str(tmp_path / "a" / "b" / "c")))
        engine.run(AddRootParams(str(tmp_path / "a")))  # a wider root absorbs the narrower one
        assert engine.roots() == [os.path.normpath(str(tmp_path / "a"))]
        with pytest.raises(SenseTreeError):
            engine.run(FolderModeParams(str(tmp_path / "a"), "block"))
