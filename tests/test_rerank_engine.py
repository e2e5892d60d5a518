"""The rerank stage inside the engine: on with a real cross-encoder folder, skipped cleanly without one."""

from __future__ import annotations

import math

import pytest

from tests.support.crossencoder_fixture import build_test_cross_encoder
from sensetree.operations import SearchParams
from sensetree.operations import SetParams, StatusParams
from tests.support.index import texts

TEXTS = {
    "kiln.txt": "Firing schedule for the pottery kiln: bisque at 950 degrees, glaze at 1240 degrees.",
    "tax.txt": "Tax return checklist: payslips, bank interest statements, charity receipts.",
    "bike.txt": "Bicycle maintenance: chain lubrication, brake pad wear, tyre pressure for commuting.",
    "choir.txt": "Choir rehearsal plan: warm-ups, the Bach chorale, then the new pottery-themed song.",
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory, write_tree, make_engine):
    base = tmp_path_factory.mktemp("rerank")
    write_tree(base / "tree", TEXTS)
    engine = make_engine(base / "data", base / "tree")
    yield engine, base
    engine.close()


def test_rerank_orders_by_logit_and_shows_sigmoid(engine):
    engine, base = engine
    folder = build_test_cross_encoder(base / "ce")
    engine.run(SetParams("retrieval.reranker_model", str(folder)))
    response = engine.run(SearchParams("pottery kiln temperatures", limit=4))
    assert not response.notices
    assert all(r.rerank is not None and r.score == r.rerank for r in response.results)
    scores = [r.score for r in response.results]
    assert scores == sorted(scores, reverse=True)
    scorer = engine.models.reranker()
    for r in response.results:
        stored = texts(engine, r.path)[r.chunk_index]
        logit = float(scorer.logits("pottery kiln temperatures", [stored[:800]])[0])
        assert math.isclose(r.score, 1 / (1 + math.exp(-logit)), rel_tol=1e-4)
    off = engine.run(SearchParams("pottery kiln temperatures", limit=4, rerank=False))
    assert all(r.rerank is None for r in off.results)


def test_a_reranker_that_cannot_load_keeps_the_fused_order(engine):
    engine, base = engine
    broken = base / "broken-ce"
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not an onnx model")
    (broken / "tokenizer.json").write_text("{}", encoding="utf-8")
    engine.run(SetParams("retrieval.reranker_model", str(broken)))  # a new name: its problem is told once more
    response = engine.run(SearchParams("bicycle brakes", limit=3))
    assert response.results and response.results[0].name == "bike.txt"
    assert all(r.rerank is None for r in response.results)
    assert any("reranking skipped" in n for n in response.notices)
    assert "failed to load" in engine.run(StatusParams()).as_dict()["reranker"]
    again = engine.run(SearchParams("bicycle brakes", limit=3))
    assert not any("reranking skipped" in n for n in again.notices)  # once per data dir, not before every search
