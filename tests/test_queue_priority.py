"""What someone looks at goes first in the queue: a search's results, a previewed file, a scope, in one write."""

from __future__ import annotations

from pathlib import Path

from sensetree import fs_rules
from sensetree.store import catalog_states
from sensetree.store.catalog import Catalog


def _catalog(tmp_path: Path, files: list[str]) -> Catalog:
    catalog = Catalog(tmp_path / "catalog.db")
    catalog.roots.add(str(tmp_path / "root"))
    # mtimes rise with the name: without a priority the queue takes the last file first
    catalog.states.upsert_pending([(p, str(tmp_path / "root"), "file", 1, float(i), 0, None, None)
                                   for i, p in enumerate(files)])
    return catalog


def test_files_and_folders_brought_forward_together_go_first(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog_states, "FOLDERS_PER_WRITE", 7)  # several statements, as 700 results would need
    root = tmp_path / "root"
    files = [str(root / folder / f"note{i:03d}.txt") for folder in ("a", "ab", "b") for i in range(20)]
    catalog = _catalog(tmp_path, files)
    found = [files[3], files[5], *files[40:50], str(root / "ab"), str(root / "gone.txt")]
    assert catalog.states.prioritize(*found) == 2 + 10 + 20  # "ab" is not under "a"; a gone file changes nothing
    assert {row.path for row in catalog.files.pending(32)} == {files[3], files[5], *files[40:50], *files[20:40]}
    assert catalog.states.prioritize() == 0
    catalog.close()


def test_on_a_case_blind_disk_any_spelling_of_a_path_brings_it_forward(tmp_path, monkeypatch):
    monkeypatch.setattr(fs_rules, "case_sensitive", lambda folder: not folder.startswith(str(tmp_path)))
    root = tmp_path / "root"
    files = [str(root / "Docs" / f"Note{i}.txt") for i in range(5)] + [str(root / "DocsEvil" / "x.txt")]
    catalog = _catalog(tmp_path, files)
    assert catalog.states.prioritize(str(root / "docs" / "NOTE1.TXT"), str(root / "DOCSEVIL")) == 2
    assert {row.path for row in catalog.files.pending(2)} == {files[1], files[5]}
    catalog.close()
