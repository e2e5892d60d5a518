"""What the user decides about files and folders (ingest/choices.py): two bugs found while thinning the engine."""

from __future__ import annotations

import json
import os

import pytest

from sensetree.operations import QueueParams, RetryParams
from tests.support.index import failed


def test_retrying_a_folder_does_not_requeue_a_sibling_that_shares_its_prefix(tmp_path, make_engine):
    """``retry /x/Docs`` used to match ``/x/DocsEvil/...`` too (a ``startswith`` on the raw string)."""
    root = tmp_path / "root"
    for folder in ("Docs", "DocsEvil"):
        (root / folder).mkdir(parents=True)
        (root / folder / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage")
    with make_engine(tmp_path / "data", root) as engine:
        assert {os.path.basename(os.path.dirname(path)) for path in failed(engine)} == {"Docs", "DocsEvil"}
        assert engine.run(RetryParams(str(root / "Docs"))).requeued == 1
        assert [r.path for r in engine.run(QueueParams()).pending] == [str(root / "Docs" / "broken.pdf")]
        assert engine.run(RetryParams(str(root / "Docs" / "broken.pdf"))).requeued == 0  # already queued
        assert engine.run(RetryParams()).requeued == 1  # the sibling's, still failed


@pytest.mark.slow  # five sensetree processes
def test_a_sense_pinned_under_a_linked_folder_reads_back_under_the_same_path(tmp_path, cli):
    """``sensetree sense`` read under the resolved path while pinning under the normalised one: behind a
    linked folder the two differ, and the pinned sense seemed lost."""
    real = tmp_path / "real" / "Docs"
    real.mkdir(parents=True)
    (real / "minutes.txt").write_text("Minutes of the harbour committee, 3 March: the quay opens in May.",
                                      encoding="utf-8")
    os.symlink(tmp_path / "real", tmp_path / "linked")
    note = tmp_path / "linked" / "Docs" / "minutes.txt"
    data = tmp_path / "data"
    cli.run(data, "config", "set", "embedding.model", "minilm")
    cli.run(data, "add", str(tmp_path / "linked" / "Docs"))
    cli.run(data, "index", "--quiet")
    cli.run(data, "sense", str(note), "--set", "Harbour committee minutes, March.")
    shown = json.loads(cli.run(data, "sense", str(note), "--json").stdout)
    assert shown == {"path": str(note), "sense": "Harbour committee minutes, March.", "source": "pinned",
                     "pinned": True}
