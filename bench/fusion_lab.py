"""Fusion lab: dump both legs' candidates for every query once, then score fusions offline in seconds.

    # once per set x model x split (indexes through `sensetree eval`'s cache; --reanalyse redoes only
    # the keyword side: terms from the stored text, no re-embedding)
    python bench/fusion_lab.py dump /work/shared/eval/scifact --model minilm --split train
    # every fusion of search/fusion.py on the dumps, per set, model and split
    python bench/fusion_lab.py score /tmp/dumps/*.json

A dump holds, per query, the dense and BM25 pools exactly as the pipeline gets them (pool 160,
the product's legs), each hit as corpus id, chunk index, leg score and chunk language.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sensetree.config import default_data_dir  # noqa: E402
from sensetree.engine import Engine  # noqa: E402
from sensetree.eval.runner import eval_engine, load_split, score_ranking  # noqa: E402
from sensetree.search.legs import dense_leg, sparse_leg  # noqa: E402
from sensetree.store.terms import query_languages  # noqa: E402

POOL = 160  # the pipeline's pool at limit 100, as `sensetree eval` searches


def dump(dataset: Path, model: str, split: str, out: Path, reanalyse: bool) -> Path:
    dataset = dataset.resolve()
    queries, qrels = load_split(dataset, split)
    with Engine(default_data_dir()) as engine, eval_engine(engine, dataset, model, print) as (evaluator, mapping):
        store = evaluator.store
        if reanalyse:
            started = time.perf_counter()
            rows = store.reanalyse()
            store.build_fts_index()
            print(f"reanalysed {rows} chunks in {time.perf_counter() - started:.1f} s")
        retriever = evaluator.retriever()
        records = []
        for query in queries:
            text = query["text"]
            started = time.perf_counter()
            dense = dense_leg(store, retriever.embed_query(text), POOL, None)
            dense_ms = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            sparse = sparse_leg(store, text, POOL, None, store.build_fts_index)
            bm25_ms = (time.perf_counter() - started) * 1000
            records.append({
                "id": str(query["_id"]), "langs": query_languages(text), "dense_ms": dense_ms, "bm25_ms": bm25_ms,
                "dense": [[mapping.get(c.path, c.path), c.chunk_index, round(c.cosine, 6), c.lang] for c in dense],
                "bm25": [[mapping.get(c.path, c.path), c.chunk_index, round(c.bm25, 6), c.lang] for c in sparse]})
        name = f"{dataset.parent.name}-{dataset.name}" if dataset.parent.name == "xquad" else dataset.name
        target = out / f"{name}.{model}.{split}.json"
        out.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"set": name, "model": model, "identity": evaluator.embedder.identity,
                                      "split": split, "qrels": {r["id"]: qrels[r["id"]] for r in records},
                                      "queries": records}))
    print(f"{target}: {len(records)} queries, dense p50 {statistics.median(r['dense_ms'] for r in records):.1f} ms, "
          f"bm25 p50 {statistics.median(r['bm25_ms'] for r in records):.1f} ms")
    return target


def leg_ranking(hits: list[list]) -> list[str]:
    """Corpus ids in the order of their best chunk."""
    return list(dict.fromkeys(hit[0] for hit in hits))


def mean_metrics(rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for qid, ranking in rankings.items():
        for name, value in score_ranking(ranking, qrels[qid]).items():
            totals[name] = totals.get(name, 0.0) + value
    return {name: value / max(1, len(rankings)) for name, value in totals.items()}


def score(paths: list[Path]) -> None:
    for path in paths:
        data = json.loads(path.read_text())
        qrels = data["qrels"]
        rows = {"dense": {q["id"]: leg_ranking(q["dense"]) for q in data["queries"]},
                "bm25": {q["id"]: leg_ranking(q["bm25"]) for q in data["queries"]}}
        for mode, rankings in rows.items():
            m = mean_metrics(rankings, qrels)
            print(f"{data['set']:<14} {data['model']:<7} {data['split']:<6} {mode:<12} nDCG@10 {m['ndcg@10']:.4f} "
                  f"R@100 {m['recall@100']:.4f} MRR@10 {m['mrr@10']:.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    d = commands.add_parser("dump")
    d.add_argument("dataset", type=Path)
    d.add_argument("--model", default="e5")
    d.add_argument("--split", default="test")
    d.add_argument("--out", type=Path, default=Path("/tmp/sensetree-fusion-dumps"))
    d.add_argument("--reanalyse", action="store_true", help="recompute the keyword terms from the stored text first")
    s = commands.add_parser("score")
    s.add_argument("dumps", type=Path, nargs="+")
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.dataset, args.model, args.split, args.out, args.reanalyse)
    else:
        score(args.dumps)


if __name__ == "__main__":
    main()
