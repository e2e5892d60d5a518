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


def _row(engine: Engine, path: Path):
    return engine.catalog.files.get(os.path.normpath(str(path)))


def test_every_readable_file_is_indexed_with_its_chunks(indexed):
    engine, files, progress = indexed
    assert engine.embedder.identity.startswith("intfloat/multilingual-e5-small")
    for label in ("pdf", "docx", "xlsx", "pptx", "html", "markdown", "code", "csv", "epub", "email", "latin1",
                  "percent_dir", "apostrophe_dir", "unicode_name", "docs_inside", "docs_evil"):
        row = _row(engine, files[label])
        assert row is not None and row.status == "indexed", (label, row)
        stored = engine.store.queries.chunks_of(row.path)
        assert len(stored) == row.chunks >= 1
        assert [c["chunk_index"] for c in stored] == list(range(row.chunks))
        assert stored[0]["text"].startswith(f"[{row.doc_type}] ")  # chunk 0 carries the sense
    assert progress.failed == 1
    assert engine.store.table.count() == engine.catalog.files.total_chunks() + _row(engine, files["corrupt_pdf"]).chunks


def test_corrupt_file_fails_clearly_but_stays_findable_by_name(indexed):
    engine, files, _ = indexed
    row = _row(engine, files["corrupt_pdf"])
    assert row.status == "failed"
    assert "pdf" in row.error.lower()
    assert [r.path for r in engine.catalog.files.failed()] == [row.path]
    stored = engine.store.queries.chunks_of(row.path)
    assert stored and "broken.pdf" in stored[0]["text"]


def test_unreadable_binary_gets_a_context_entry(indexed):
    engine, files, _ = indexed
    row = _row(engine, files["binary"])
    assert row.status == "indexed" and row.doc_type == "context"
    assert "model.blend" in engine.store.queries.chunks_of(row.path)[0]["text"]


def test_blocks_hidden_and_ignored(indexed):
    engine, files, _ = indexed
    block = engine.catalog.files.get(os.path.normpath(str(files["node_modules_js"].parents[1])))
    assert block is not None and block.kind == "block" and block.status == "indexed"
    assert block.members == 4
    assert _row(engine, files["node_modules_js"]) is None
    assert _row(engine, files["hidden"]) is None
    counts = engine.catalog.files.counts()
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
    before = engine.store.table.handle.version
    report = engine.scan()
    assert (report.new, report.changed, report.deleted) == (0, 0, 0)
    assert engine.index().files_done == 0
    assert engine.store.table.handle.version >= before


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
        old_hash = engine.catalog.files.get(markdown).content_hash

        # modify: new content replaces the old rows, no duplicates
        Path(markdown).write_text("# Minutes\n\nThe committee approved the zeppelin hangar budget.", encoding="utf-8")
        progress = engine.index()
        assert progress.files_done == 1
        row = engine.catalog.files.get(markdown)
        assert row.content_hash != old_hash and row.status == "indexed"
        texts = [c["text"] for c in engine.store.queries.chunks_of(markdown)]
        assert len(texts) == row.chunks and "zeppelin" in texts[0]
        assert engine.run(SearchParams("zeppelin hangar", limit=3, rerank=False)).results[0].path == markdown

        # touch without change: the content hash skips the work
        os.utime(markdown, (time.time() + 5, time.time() + 5))
        progress = engine.index()
        assert (progress.files_done, progress.embedding.count) == (1, 0)  # looked at, nothing re-embedded or rewritten
        assert engine.catalog.files.get(markdown).status == "indexed"

        # rename: the old path leaves the index, the new one enters it
        renamed = os.path.join(os.path.dirname(markdown), "renamed_minutes.md")
        os.rename(markdown, renamed)
        engine.index()
        assert engine.catalog.files.get(markdown) is None and not engine.store.queries.chunks_of(markdown)
        assert engine.catalog.files.get(renamed).status == "indexed"

        # delete a folder: its files leave the index and the search
        shutil.rmtree(tree / "Docs")
        engine.index()
        inside = os.path.normpath(str(files["docs_inside"]))
        assert engine.catalog.files.get(inside) is None
        assert engine.store.table.count(f"path = '{inside}'") == 0

        rows = engine.store.table.handle.search().select(["path", "chunk_index"]).limit(100_000).to_list()
        keys = [(r["path"], r["chunk_index"]) for r in rows]
        assert len(keys) == len(set(keys))

        # the embedding model changes: everything is wiped and re-indexed with the new one
        indexed_before = engine.catalog.files.counts()["indexed"]
        message = engine.run(SetParams("embedding.model", "minilm", confirm=True)).notice
        assert message and "re-indexed" in message
        assert engine.store.table.count() == 0 and engine.catalog.files.counts()["indexed"] == 0
        engine.index()
        assert engine.catalog.files.counts()["indexed"] == indexed_before
        models = {r["embed_model"] for r in engine.store.table.handle.search().select(["embed_model"]).limit(100_000).to_list()}
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
