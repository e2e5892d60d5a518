"""What gets indexed: ignore files, hidden entries, block heuristics, manual choices, pinned senses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sensetree.ingest.prepare import prepare
from sensetree.ingest.walker import block_reason, walk
from sensetree import FolderModeParams, PinParams, Sense, SenseParams
from tests.support.index import detail, entry, failed, status, status_counts, texts


def _touch(path, text="some text for the index"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_ignore_files_hidden_entries_and_blocks(tmp_path):
    _touch(tmp_path / "keep.md")
    _touch(tmp_path / ".gitignore", "*.log\nbuild_tmp/\n")
    _touch(tmp_path / "debug.log")
    _touch(tmp_path / "build_tmp" / "x.txt")
    _touch(tmp_path / "sub" / ".sensetreeignore", "secret*.txt\n")
    _touch(tmp_path / "sub" / "secret_plan.txt")
    _touch(tmp_path / "sub" / "public.txt")
    _touch(tmp_path / ".git" / "config")
    _touch(tmp_path / ".DS_Store")
    _touch(tmp_path / "venv" / "pyvenv.cfg")
    _touch(tmp_path / "venv" / "lib" / "site.py")
    _touch(tmp_path / "project" / "target" / "CACHEDIR.TAG")
    for i in range(6):
        _touch(tmp_path / "plugins" / f"lib{i}.dll")
    entries = {os.path.relpath(e.path, tmp_path): e.kind for e in walk(str(tmp_path))}
    assert entries == {"keep.md": "file", os.path.join("sub", "public.txt"): "file", "venv": "block",
                       os.path.join("project", "target"): "block", "plugins": "block"}


def test_block_reasons():
    from pathlib import Path

    assert block_reason(Path("/x/node_modules"), ["a.js"]) == "node_modules folder"
    assert block_reason(Path("/x/Logic.app"), ["Contents"]) == "application or library bundle"
    assert block_reason(Path("/x/photos"), [f"img{i}.jpg" for i in range(10)]) is None
    assert block_reason(Path("/x/build"), ["a.o", "b.o", "c.o", "readme.md"]) == "build output"


def test_manual_block_and_unblock_win_and_sense_pinning(tmp_path, make_engine):
    tree = tmp_path / "tree"
    for i in range(3):
        _touch(tree / "archive" / f"letter{i}.txt", f"Letter number {i} about the orchard lease.")
    _touch(tree / "node_modules" / "pkg" / "index.js", "module.exports = function leftpad() {}")
    with make_engine(tmp_path / "data", tree) as engine:
        archive, modules = str(tree / "archive"), str(tree / "node_modules")
        assert detail(engine, modules).kind == "block"
        engine.run(FolderModeParams(archive, "block"))
        engine.run(FolderModeParams(modules, "recursive"))
        engine.index()
        assert detail(engine, archive).kind == "block" and entry(engine, archive).members == 3
        assert status(engine, tree / "archive" / "letter0.txt") is None
        assert status(engine, tree / "node_modules" / "pkg" / "index.js") == "indexed"
        assert status(engine, modules) is None

        js = str(tree / "node_modules" / "pkg" / "index.js")
        engine.run(PinParams(js, "The leftpad package entry point, pinned by hand."))
        engine.index()
        assert texts(engine, js)[0].startswith("[code] The leftpad package entry point, pinned by hand.")
        (tree / "node_modules" / "pkg" / "index.js").write_text("module.exports = function rightpad() {}")
        engine.index()
        assert engine.run(SenseParams(js)) == Sense(js, "The leftpad package entry point, pinned by hand.", "pinned", True)
        assert "rightpad" in texts(engine, js)[0]


def prepare_failing_on_flaky(job):
    """What a worker runs in the test below: an OS error on flaky.txt, every time (module level: workers import it)."""
    if job.path.endswith("flaky.txt"):
        with open(job.path + ".calls", "a") as calls:
            calls.write("x")
        raise OSError(5, "Input/output error")
    return prepare(job)


@pytest.mark.slow  # fault injection: three attempts in the worker processes
def test_an_unexpected_error_is_retried_then_failed_and_the_queue_goes_on(tmp_path, monkeypatch, make_engine):
    """Fault injection: reading one file raises an OS error every time; the others are indexed."""
    import sensetree.ingest.keyword as keyword

    tree = tmp_path / "tree"
    for name in ("a.txt", "b.txt", "flaky.txt"):
        _touch(tree / name, f"Contents of {name} for the retry test.")
    monkeypatch.setattr(keyword, "prepare", prepare_failing_on_flaky)
    with make_engine(tmp_path / "data", tree, index=False) as engine:
        (tree / ".sensetreeignore").write_text("*.calls\n", encoding="utf-8")
        progress = engine.index()
        assert len((tree / "flaky.txt.calls").read_text()) == keyword.MAX_ATTEMPTS == 3
        row = detail(engine, tree / "flaky.txt")
        assert row.status == "failed" and row.attempts == 3 and "Input/output error" in row.error
        assert progress.failed == 1 and status_counts(engine)["indexed"] == 2
        assert failed(engine) == [row.path]


def test_links_to_files_outside_the_root_are_not_indexed(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("the vault code")
    (root / "real.txt").write_text("inside")
    os.symlink(outside / "secret.txt", root / "link_out.txt")
    os.symlink(root / "real.txt", root / "link_in.txt")
    names = {Path(e.path).name for e in walk(str(root))}
    assert names == {"real.txt", "link_in.txt"}
