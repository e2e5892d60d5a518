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
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sensetree.config import default_data_dir  # noqa: E402
from sensetree.engine import Engine  # noqa: E402
from sensetree.eval.runner import eval_engine, load_split, score_ranking  # noqa: E402
import sensetree.search.fusion as fusion_module  # noqa: E402
from sensetree.search.fusion import LegWeights, fuse, fuse_files, leg_weights  # noqa: E402
from sensetree.search.legs import dense_leg, sparse_leg  # noqa: E402
from sensetree.search.types import Candidate  # noqa: E402
from sensetree.store.terms import query_languages  # noqa: E402

POOL = 160  # the pipeline's pool at limit 100, as `sensetree eval` searches
EVAL = Path("/work/shared/eval")


def dump(dataset: Path, model: str, split: str, out: Path, reanalyse: bool, bm25_only: bool = False,
         tag: str = "") -> Path:
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
            dense = [] if bm25_only else dense_leg(store, retriever.embed_query(text), POOL, None)
            dense_ms = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            sparse = sparse_leg(store, text, POOL, None, store.build_fts_index)
            bm25_ms = (time.perf_counter() - started) * 1000
            records.append({
                "id": str(query["_id"]), "query": text, "langs": query_languages(text), "dense_ms": dense_ms, "bm25_ms": bm25_ms,
                "dense": [[mapping.get(c.path, c.path), c.chunk_index, round(c.cosine, 6), c.lang] for c in dense],
                "bm25": [[mapping.get(c.path, c.path), c.chunk_index, round(c.bm25, 6), c.lang] for c in sparse]})
        name = f"{dataset.parent.name}-{dataset.name}" if dataset.parent.name == "xquad" else dataset.name
        target = out / f"{name}.{model}.{split}{tag}.json"
        out.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"set": name, "model": model, "identity": evaluator.embedder.identity,
                                      "split": split, "qrels": {r["id"]: qrels[r["id"]] for r in records},
                                      "queries": records}))
    print(f"{target}: {len(records)} queries, dense p50 {statistics.median(r['dense_ms'] for r in records):.1f} ms, "
          f"bm25 p50 {statistics.median(r['bm25_ms'] for r in records):.1f} ms")
    return target


def candidates(record: dict) -> tuple[list[Candidate], list[Candidate]]:
    dense = [Candidate(doc, chunk, "", lang, dense_rank=rank, cosine=cos)
             for rank, (doc, chunk, cos, lang) in enumerate(record["dense"], start=1)]
    sparse = [Candidate(doc, chunk, "", lang, bm25_rank=rank, bm25=score)
              for rank, (doc, chunk, score, lang) in enumerate(record["bm25"], start=1)]
    return dense, sparse


def files_of(fused: list[Candidate]) -> list[str]:
    return list(dict.fromkeys(c.path for c in fused))


def variants(data: dict) -> dict:
    """name -> record -> ranking of corpus ids: the legs alone, the seed's RRF, the product's
    weighted fusion, and that fusion with other dense shares (the product's language gate kept)."""
    model = data["identity"]

    def weighted(record: dict, share: float | None = None) -> list[str]:
        dense, sparse = candidates(record)
        weights = leg_weights(record["query"], model, dense, sparse)
        if share is not None and weights.dense > 0:
            weights = LegWeights(share, 1.0 - share)
        return files_of(fuse_files(dense, sparse, weights))

    out = {
        **({} if not data["queries"][0]["dense"] else {"dense": lambda r: files_of(candidates(r)[0])}),
        "bm25": lambda r: files_of(candidates(r)[1]),
        "rrf-chunks": lambda r: files_of(fuse(*candidates(r))),
        "weighted": weighted,
    }
    for share in (0.3, 0.4, 0.5, 0.6, 0.7):
        out[f"weighted-{share}"] = lambda r, share=share: weighted(r, share)
    for name, floors in {"minmax-both": {"cosine": None, "bm25": None}, "floor0-both": {"cosine": 0.0, "bm25": 0.0}}.items():
        out[name] = lambda r, floors=floors: with_floors(floors, weighted, r)
    return out


def with_floors(floors: dict, rank, record: dict) -> list[str]:
    saved = dict(fusion_module.FLOORS)
    fusion_module.FLOORS.update(floors)
    try:
        return rank(record)
    finally:
        fusion_module.FLOORS.update(saved)


def mean_metrics(rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for qid, ranking in rankings.items():
        for name, value in score_ranking(ranking, qrels[qid]).items():
            totals[name] = totals.get(name, 0.0) + value
    return {name: value / max(1, len(rankings)) for name, value in totals.items()}


def load_dump(path: Path) -> dict:
    """A dump, with each query's text (dumps from before it was stored get it from the dataset)."""
    data = json.loads(path.read_text())
    if "query" not in data["queries"][0]:
        folder = EVAL / data["set"].replace("xquad-", "xquad/")
        texts = {str(q["_id"]): q["text"] for q in map(json.loads, (folder / "queries.jsonl").open(encoding="utf-8"))}
        for record in data["queries"]:
            record["query"] = texts[record["id"]]
    return data


def in_part(qid: str, part: str) -> bool:
    """Sets with only a test split are cut in two by query id: a quarter to tune on, the rest to report."""
    tune = zlib.crc32(qid.encode()) % 4 == 0
    return part == "all" or (part == "tune") == tune


def grid(paths: list[Path], only: str | None, part: str) -> None:
    """nDCG@10 of every variant on every dump, and its worst margin over the better single leg."""
    columns, table = [], {}
    for path in paths:
        data = load_dump(path)
        split_part = part if data["split"] == "test" and data["set"] not in ("scifact", "nfcorpus") else "all"
        records = [q for q in data["queries"] if in_part(q["id"], split_part)]
        columns.append(f"{data['set'].replace('xquad-', '')}/{data['model']}/{data['split'][:2]}")
        for mode, rank in variants(data).items():
            if only and only not in mode and mode not in ("dense", "bm25"):
                continue
            table.setdefault(mode, []).append(mean_metrics({q["id"]: rank(q) for q in records}, data["qrels"])["ndcg@10"])
    print(f"{'variant':<16}" + "".join(f"{c:>18}" for c in columns) + f"{'min margin':>12}")
    best_leg = [max(table.get("dense", [0] * len(columns))[i], table["bm25"][i]) for i in range(len(columns))]
    for mode, values in table.items():
        margin = min(v - b for v, b in zip(values, best_leg))
        print(f"{mode:<16}" + "".join(f"{v:>18.4f}" for v in values) + f"{margin:>12.4f}")


def score(paths: list[Path], only: str | None = None) -> None:
    for path in paths:
        data = load_dump(path)
        qrels = data["qrels"]
        for mode, rank in variants(data).items():
            if only and only not in mode:
                continue
            m = mean_metrics({q["id"]: rank(q) for q in data["queries"]}, qrels)
            print(f"{data['set']:<14} {data['model']:<7} {data['split']:<6} {mode:<16} nDCG@10 {m['ndcg@10']:.4f} "
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
    d.add_argument("--bm25-only", action="store_true", help="skip the dense leg (to compare text analyses)")
    d.add_argument("--tag", default="", help="added to the dump's file name")
    s = commands.add_parser("score")
    s.add_argument("dumps", type=Path, nargs="+")
    s.add_argument("--only", help="variants whose name holds this")
    g = commands.add_parser("grid")
    g.add_argument("dumps", type=Path, nargs="+")
    g.add_argument("--only", help="variants whose name holds this")
    g.add_argument("--part", default="tune", choices=("tune", "rest", "all"),
                   help="for sets with only a test split: the quarter of queries to tune on, or the rest")
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.dataset, args.model, args.split, args.out, args.reanalyse, args.bm25_only, args.tag)
    elif args.command == "grid":
        grid(args.dumps, args.only, args.part)
    else:
        score(args.dumps, args.only)


if __name__ == "__main__":
    main()
