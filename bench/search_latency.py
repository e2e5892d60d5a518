"""Search latency on synthetic tables of 10k, 100k and 1M chunks (384-d vectors, realistic text).

    python bench/search_latency.py [--sizes 10000,100000,1000000] [--queries 50] [--fusions weighted,evidence]

Each table is built through the product's ChunkStore (same schema, BTREE on path, native
full-text index, the vector index the store creates past its size threshold). Chunks sit
in 50 top folders of 20 sub-folders, 8 chunks per file, so one top folder holds 2 % of the
rows. Vectors look like embeddings (a random 48-dimensional structure plus noise); text is
drawn from a Zipf vocabulary. Query vectors are precomputed, so the figures are the search
machinery; the cost of embedding a query with each bundled model is printed separately.
Where the store uses a vector index, its recall@10 and recall@160 against exact search are
measured on the same queries.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from sensetree.models.embeddings import load_embedder
from sensetree.search.pipeline import Retriever
import sensetree.store.upkeep as upkeep_module
from sensetree.store.chunks import ChunkStore
from sensetree.store.table import schema
from sensetree.store.upkeep import analysed_columns

DIM = 384
FOLDERS, SUBFOLDERS, CHUNKS_PER_FILE = 50, 20, 8


class Corpus:
    """Deterministic synthetic chunks: embedding-like vectors and Zipf-distributed words."""

    def __init__(self, seed: int = 7):
        self.rng = np.random.default_rng(seed)
        syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qui", "dor", "fen", "gal", "hor"]
        words = {"".join(self.rng.choice(syllables, size=int(self.rng.integers(2, 5)))) for _ in range(12_000)}
        self.vocab = np.array(sorted(words))
        ranks = np.arange(1, len(self.vocab) + 1)
        self.word_p = (1 / ranks) / (1 / ranks).sum()
        self.basis = self.rng.normal(size=(48, DIM)).astype(np.float32)

    def vectors(self, n: int) -> np.ndarray:
        latent = self.rng.normal(size=(n, 48)).astype(np.float32)
        v = latent @ self.basis + 0.8 * self.rng.normal(size=(n, DIM)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def texts(self, n: int) -> list[str]:
        lengths = self.rng.integers(60, 150, size=n)
        tokens = self.rng.choice(self.vocab, size=int(lengths.sum()), p=self.word_p)
        out, start = [], 0
        for length in lengths:
            out.append(" ".join(tokens[start:start + length]))
            start += length
        return out

    def queries(self, n: int) -> list[str]:
        middle = self.vocab[200:4000]
        return [" ".join(self.rng.choice(middle, size=int(self.rng.integers(2, 5)))) for _ in range(n)]


def path_of(row: int, rows: int) -> str:
    file_id = row // CHUNKS_PER_FILE
    files = max(1, rows // CHUNKS_PER_FILE)
    folder = file_id * FOLDERS // files
    sub = (file_id * FOLDERS * SUBFOLDERS // files) % SUBFOLDERS
    return f"/data/proj{folder:02d}/sub{sub:02d}/file{file_id:07d}.txt"


def build(store_dir: Path, rows: int, corpus: Corpus) -> ChunkStore:
    store = ChunkStore(store_dir)
    batch = 100_000
    for start in range(0, rows, batch):
        n = min(batch, rows - start)
        ids = np.arange(start, start + n)
        texts = corpus.texts(n)
        paths = [path_of(int(i), rows) for i in ids]
        data = pa.table({
            "path": pa.array(paths, pa.string()),
            "chunk_index": pa.array(ids % CHUNKS_PER_FILE, pa.int32()),
            "text": pa.array(texts, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(corpus.vectors(n).ravel()), DIM),
            "content_hash": pa.array(["h"] * n, pa.string()),
            "mtime": pa.array(np.zeros(n), pa.float64()),
            "embed_model": pa.array(["synthetic"] * n, pa.string()),
            "location": pa.nulls(n, pa.string()),
            "doc_type": pa.array(["text"] * n, pa.string()),
            "size": pa.array(np.full(n, 4096), pa.int64()),
            **analysed_columns(paths, (ids % CHUNKS_PER_FILE).tolist(), texts),
        }, schema=schema(DIM))
        if store.table.handle is None:
            store.upkeep.create_indexes(store.table.create(data, DIM))
        else:
            store.table.handle.add(data)
    started = time.perf_counter()
    store.upkeep.optimize()  # folds rows into the indexes and builds the vector index past the threshold
    print(f"  optimize + indexes: {time.perf_counter() - started:.1f} s; vector index: {store.upkeep.has_vector_index()}")
    return store


def timed(fn, inputs) -> tuple[float, float]:
    fn(inputs[0])  # warm-up
    samples = []
    for item in inputs:
        started = time.perf_counter()
        fn(item)
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def recall(store: ChunkStore, vectors: np.ndarray, k: int, pool: int = 160) -> float:
    """Share of the exact top ``k`` that the dense leg's ``pool``-sized answer ranks in its own top ``k``."""
    table = store.table.handle
    hits = 0
    for v in vectors:
        approx = {(r["path"], r["chunk_index"]) for r in store.queries.dense(v, pool)[:k]}
        exact = {(r["path"], r["chunk_index"]) for r in table.search(v).distance_type("cosine").bypass_vector_index()
                 .limit(k).select(["path", "chunk_index", "_distance"]).to_list()}
        hits += len(approx & exact)
    return hits / (k * len(vectors))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--exact", action="store_true",
                        help="never build the vector index (its one-off build takes ~25 min at 1M rows on 2 cores)")
    parser.add_argument("--fusions", default="",
                        help="also time hybrid search with each of these fusions (retrieval.fusion), interleaved")
    parser.add_argument("--no-models", action="store_true", help="skip timing the query embedding of each model")
    args = parser.parse_args()
    if args.exact:
        upkeep_module.VECTOR_INDEX_MIN_ROWS = 10**12

    for name in () if args.no_models else ("minilm", "e5"):
        embedder = load_embedder(name)
        p50, p95 = timed(embedder.embed_query, ["submission cut-off for the public tender"] * 30)
        print(f"query embedding {embedder.identity}: p50 {p50:.1f} ms, p95 {p95:.1f} ms")

    corpus = Corpus()
    for rows in (int(s) for s in args.sizes.split(",")):
        work = Path(tempfile.mkdtemp(prefix="sensetree-latency-"))
        try:
            print(f"\n{rows:,} chunks")
            started = time.perf_counter()
            store = build(work, rows, corpus)
            print(f"  built in {time.perf_counter() - started:.1f} s")
            texts = corpus.queries(args.queries)
            vectors = corpus.vectors(args.queries)
            by_text = dict(zip(texts, vectors))
            retriever = Retriever(store, lambda q: by_text[q], lambda: None, store.upkeep.build_fts_index,
                                  exists=lambda p: True)
            scope = "/data/proj07"
            k = 160
            rows_out = [
                ("dense leg (k=160)", lambda q: store.queries.dense(by_text[q], k)),
                ("BM25 leg (k=160)", lambda q: store.queries.sparse(q, k)),
                ("hybrid search, no rerank (limit 20)", lambda q: retriever.search(q, limit=20, rerank_on=False)),
                ("hybrid search scoped to 2 %", lambda q: retriever.search(q, scope, limit=20, rerank_on=False)),
                ("meaning tree (400 chunks)", lambda q: retriever.tree(q, None, ["/data"], 400)),
            ]
            for label, fn in rows_out:
                p50, p95 = timed(fn, texts)
                print(f"  {label:38s} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms")
            fusions = [name for name in args.fusions.split(",") if name]
            for round_ in range(3 if fusions else 0):  # interleaved rounds: load drifts between them
                for name in fusions:
                    p50, p95 = timed(lambda q: retriever.search(q, limit=20, rerank_on=False, fusion=name), texts)
                    print(f"  hybrid, fusion {name:<12} round {round_ + 1}   p50 {p50:7.1f} ms   p95 {p95:7.1f} ms")
            if store.upkeep.has_vector_index():
                print(f"  dense leg recall@10 {recall(store, vectors[:20], 10):.3f}, "
                      f"recall@160 {recall(store, vectors[:20], 160):.3f} (HNSW, ef = 4 x 160, against exact search)")
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
