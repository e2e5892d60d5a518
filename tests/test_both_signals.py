"""The default fusion judges every candidate by both signals (design §2.4): how each one gets the signal its leg
did not give. Real files, the real MiniLM and LanceDB; the retriever's two look-ups are watched, not replaced."""

from __future__ import annotations

from pathlib import Path

from sensetree.search.pipeline import Retriever

TOPICS = ["harbour ledger tides cargo", "orchard apples pruning frost", "violin strings bow rosin",
          "glacier ice moraine valley", "bread dough yeast oven", "comet orbit telescope night"]


def _watch(monkeypatch) -> dict[str, list]:
    """What ``Retriever._complete`` was given and what its keyword look-up among the dense hits returned."""
    seen: dict[str, list] = {"among": [], "sparse": [], "dense": []}
    complete, among = Retriever._complete, Retriever._bm25_among

    def watched_complete(self, query_vector, keywords, dense, sparse, where, pool):
        seen["dense"], seen["sparse"] = dense, sparse
        return complete(self, query_vector, keywords, dense, sparse, where, pool)

    def watched_among(self, keywords, hits, where):
        found = among(self, keywords, hits, where)
        seen["among"].append(found)
        return found

    monkeypatch.setattr(Retriever, "_complete", watched_complete)
    monkeypatch.setattr(Retriever, "_bm25_among", watched_among)
    return seen


def test_a_keyword_leg_that_found_every_match_needs_no_second_look_up(tmp_path, monkeypatch, make_engine):
    """Six files, a few chunks hold the words: the keyword leg returned all of them, so a dense hit it lacks
    holds none (BM25 0) and is not looked up again; each keyword hit brought its stored vector along."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for i, topic in enumerate(TOPICS):
        (tree / f"notes{i}.txt").write_text(f"Notes about {topic}.\n\n" + " ".join(topic.split() * 20), encoding="utf-8")
    seen = _watch(monkeypatch)
    with make_engine(tmp_path / "data", tree, settings={"retrieval.rerank": False}) as engine:
        engine.retriever().search("what does a glacier leave in the valley", limit=5)
    assert seen["sparse"] and len(seen["sparse"]) < 30 and seen["among"] == []
    assert all(c.cosine is not None and c.meaning in ("stored", "") for c in seen["sparse"])
    keyword_keys = {c.key for c in seen["sparse"]}
    lacking = [c for c in seen["dense"] if c.key not in keyword_keys]
    assert lacking and all(c.bm25 == 0.0 for c in lacking)


def test_a_full_keyword_leg_scores_the_dense_hits_it_left_out(tmp_path, monkeypatch, make_engine):
    """Forty logbooks say "harbour" many times, a longer page about ports says it once: past the keyword leg's
    30 hits (limit 5), the page is still scored for its one "harbour" when the dense leg brings it."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(40):
        (tree / f"log{i:02d}.txt").write_text(f"Harbour log {i}. harbour harbour harbour entry {i} harbour.",
                                              encoding="utf-8")
    page = tree / "ports.txt"
    page.write_text("A sheltered harbour with quays, piers and cranes; vessels moor there to load freight and "
                    "passengers behind a breakwater.", encoding="utf-8")
    seen = _watch(monkeypatch)
    with make_engine(tmp_path / "data", tree, settings={"retrieval.rerank": False}) as engine:
        engine.retriever().search("a harbour for ships to dock", limit=5)
    assert len(seen["sparse"]) == 30 and len(seen["among"]) == 1
    keyword_keys = {c.key for c in seen["sparse"]}
    assert (str(page), 0) not in keyword_keys  # one "harbour" in a longer text: not among the keyword leg's 30
    scored = {key: score for key, score in seen["among"][0].items()}
    assert scored.get((str(page), 0), 0.0) > 0
    page_hit = next(c for c in seen["dense"] if c.path == str(page))
    assert page_hit.bm25 == scored[(str(page), 0)]
    assert all(c.cosine is not None for c in seen["sparse"])  # every logbook by its stored vector
    assert any(c.meaning == "stored" for c in seen["sparse"] if c.key not in {d.key for d in seen["dense"]})
