"""Search while the semantic phase fills in: nDCG@10 at 0, 10, 25, 50, 75 and 100 % of the files embedded.

    python bench/coverage.py /work/shared/eval/scifact [--model e5] [--queries 100] [--levels 0,10,25,50,75,100]
    python bench/coverage.py /work/shared/eval/xquad/ro --queries-from /work/shared/eval/xquad/vi

The set is indexed once through `sensetree eval`'s cache and copied; in the copy, the files that come last in
the indexer's own order (the queue: newest first) lose their vectors, from 100 % down, as if the semantic
phase had embedded only the first ones. At each level the same queries run through the product's retriever:

- keyword: BM25 alone (what a search gives before any vector);
- evidence: the hybrid before this benchmark's change (``retrieval.fusion = evidence``);
- both: every candidate judged by both signals, without meaning on demand (``retrieval.on_demand_seconds 0``);
- both+demand: the default, the keyword candidates without a vector embedded for the query within
  ``--seconds`` (kept for nothing here, so that the level stays what it is).

Latency p50/p95 of each hybrid (the queries of one level run mode after mode, the models warm).

With --queries-from, the questions come from a parallel set (same ids) in another language: a cross pair.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sensetree import Engine  # noqa: E402
from sensetree.eval.metrics import percentile  # noqa: E402
from sensetree.eval.runner import eval_engine, load_split, score_ranking  # noqa: E402
from sensetree.ingest.on_demand import MeaningOnDemand  # noqa: E402
from sensetree.store.table import ChunkRow, in_lists  # noqa: E402

MODES = ("keyword", "evidence", "both", "both+demand")


def queue_order(engine: Engine) -> list[str]:
    """The files in the order the semantic phase takes them: first asked for, then newest first."""
    rows = engine.catalog.files.all()
    return [r.path for r in sorted(rows, key=lambda r: (-r.mtime, r.path))]


def drop_vectors(engine: Engine, paths: list[str]) -> None:
    """Take the vectors of ``paths`` away, as if the semantic phase had not reached them yet."""
    if not paths:
        return
    store = engine.store
    rows = []
    for batch in in_lists(paths):
        found = store.table.read(lambda table, batch=batch: table.search().where(batch)
            .select(["path", "chunk_index", "text", "content_hash", "mtime", "location", "doc_type", "size", "lang",
                     "terms"]).limit(None).to_list(), [])
        rows += [ChunkRow(r["path"], r["chunk_index"], r["text"], None, r["content_hash"], r["mtime"], r["location"],
                          r["doc_type"] or "", r["size"] or 0, r["lang"], r["terms"]) for r in found]
    with engine.writer():
        store.writes.replace_files(paths, rows, engine.embedder.identity, store.table.dimension)
        engine.catalog.states.unmark_embedded(paths)


def cross_queries(source: Path, qrels: dict) -> list[dict]:
    texts = {str(q["_id"]): q for q in map(json.loads, (source / "queries.jsonl").open(encoding="utf-8"))}
    return [texts[qid] for qid in qrels if qid in texts]


def run(dataset: Path, model: str, queries_from: Path | None, sample: int, levels: list[int], seconds: float,
        data_dir: Path) -> None:
    dataset = dataset.resolve()
    queries, qrels = load_split(dataset, "test")
    if queries_from is not None:
        queries = cross_queries(queries_from.resolve(), qrels)
    if sample and len(queries) > sample:  # a fixed sample: the same queries at every level and every run
        queries = sorted(queries, key=lambda q: zlib.crc32(str(q["_id"]).encode()))[:sample]
    with Engine(data_dir) as engine, eval_engine(engine, dataset, model, print) as (evaluator, mapping):
        source = evaluator.data_dir
    name = dataset.name + (f" <- {queries_from.name} questions" if queries_from else "")
    with tempfile.TemporaryDirectory(prefix="coverage-") as scratch:
        copy = Path(scratch) / "data"
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns("writer.lock"))
        with Engine(copy) as engine:
            order = queue_order(engine)
            print(f"\n{name}, {model}: {len(order)} files, {len(queries)} queries; nDCG@10")
            print(f"{'embedded':>9} " + " ".join(f"{m:>12}" for m in MODES)
                  + "   p50/p95 ms: " + " ".join(f"{m:>12}" for m in MODES[1:]))
            kept = len(order)
            for level in sorted(levels, reverse=True):
                keep = round(len(order) * level / 100)
                drop_vectors(engine, order[keep:kept])
                kept = keep
                scores, latencies = measure(engine, queries, qrels, mapping, seconds)
                lat = " ".join(f"{percentile(latencies[m], 50):>5.0f}/{percentile(latencies[m], 95):<6.0f}"
                               for m in MODES[1:])
                print(f"{level:>8}% " + " ".join(f"{scores[m]:>12.3f}" for m in MODES) + "               " + lat,
                      flush=True)


def measure(engine: Engine, queries: list[dict], qrels: dict, mapping: dict[str, str],
            seconds: float) -> tuple[dict[str, float], dict[str, list[float]]]:
    retriever = engine.retriever()
    demand = MeaningOnDemand(lambda: engine.catalog, lambda: engine.store, lambda: engine.embedder, lambda: seconds,
                             lambda: None)
    totals = dict.fromkeys(MODES, 0.0)
    latencies: dict[str, list[float]] = {mode: [] for mode in MODES}
    for query in queries:
        qid, text = str(query["_id"]), query["text"]
        for mode in MODES:
            retriever.on_demand = demand.vectors if mode == "both+demand" else None
            started = time.perf_counter()
            if mode == "keyword":
                response = retriever.search(text, limit=100, rerank_on=False, dense=False)
            else:
                response = retriever.search(text, limit=100, rerank_on=False,
                                            fusion="evidence" if mode == "evidence" else "both")
            latencies[mode].append((time.perf_counter() - started) * 1000)
            ranking = [mapping.get(path, path) for r in response.results for path in (r.path, *r.duplicates)]
            totals[mode] += score_ranking(ranking, qrels[qid])["ndcg@10"]
    return {mode: total / max(1, len(queries)) for mode, total in totals.items()}, latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--model", default="e5")
    parser.add_argument("--queries-from", type=Path, help="a parallel set whose questions (same ids) to ask")
    parser.add_argument("--queries", type=int, default=100, help="a fixed sample of this many queries (0: all)")
    parser.add_argument("--levels", default="0,10,25,50,75,100")
    parser.add_argument("--seconds", type=float, default=0.8, help="meaning on demand's budget per query")
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "sensetree-bench",
                        help="where `sensetree eval` keeps the indexed set")
    args = parser.parse_args()
    started = time.perf_counter()
    run(args.dataset, args.model, args.queries_from, args.queries, [int(v) for v in args.levels.split(",")],
        args.seconds, args.data_dir)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
