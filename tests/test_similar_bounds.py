"""``similar`` does bounded work however long the file is (issue 33: every operation on user files is bounded)."""

from __future__ import annotations

import pytest

from sensetree.operations import SimilarParams
from tests.support.index import stores
from sensetree.search import pipeline
from sensetree.search.legs import pool_size


@pytest.mark.slow  # embeds a long file
def test_the_pool_and_the_text_read_do_not_grow_with_the_file(tmp_path, monkeypatch, make_engine):
    tree = tmp_path / "tree"
    tree.mkdir()
    paragraph = "The harbour ledger lists the tides, the cargo and the ships that came in at dawn. "
    (tree / "long.txt").write_text("\n\n".join(f"{paragraph * 8} Entry {i}." for i in range(40)), encoding="utf-8")
    for name, text in {"tides.txt": "Tide tables and cargo ships in the harbour at dawn.",
                       "baking.txt": "Bread dough rises with yeast before the oven."}.items():
        (tree / name).write_text(text, encoding="utf-8")
    with make_engine(tmp_path / "data", tree, settings={"retrieval.rerank": False}) as engine:
        with stores(engine.data_dir) as stored:  # many more chunks than results
            assert len(stored.chunks.queries.vectors_of(str(tree / "long.txt"))) > 30
        pools, reads = [], []
        dense_leg, chunks_of = pipeline.dense_leg, engine.store.queries.chunks_of
        monkeypatch.setattr(pipeline, "dense_leg", lambda store, vector, k, where: pools.append(k) or
                            dense_leg(store, vector, k, where))
        monkeypatch.setattr(engine.store.queries, "chunks_of", lambda path, first=None: reads.append(first) or
                            chunks_of(path, first))
        found = engine.run(SimilarParams(str(tree / "long.txt"), limit=5))
        assert [r.name for r in found.results][:1] == ["tides.txt"]  # its own chunks are not among them
        assert all(r.path != str(tree / "long.txt") for r in found.results)
        assert pools == [pool_size(5 + pipeline.VERSIONS_CHECKED)]
        assert reads and all(first == pipeline.VERSION_CHUNKS for first in reads)
