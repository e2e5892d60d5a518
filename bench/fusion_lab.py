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
import itertools
import json
import statistics
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sensetree.config import default_data_dir  # noqa: E402
from sensetree import Engine  # noqa: E402
from sensetree.eval.runner import eval_engine, load_split, score_ranking  # noqa: E402
import sensetree.search.fusion as fusion_module  # noqa: E402
from sensetree.search.fusion import FUSIONS, LegWeights, evidence_fusion, fuse, fuse_files, leg_weights  # noqa: E402
from sensetree.search.legs import dense_leg, sparse_leg  # noqa: E402
from sensetree.search.types import Candidate  # noqa: E402
from sensetree.store.terms import query_languages  # noqa: E402

POOL = 160  # the pipeline's pool at limit 100, as `sensetree eval` searches
EVAL = Path("/work/shared/eval")


def cross_queries(dataset: Path, source: Path, qrels: dict[str, dict[str, int]]) -> list[dict]:
    """``source``'s queries that ``dataset`` judges under the same id: a parallel set's questions in
    another language, asked of this language's corpus (XQuAD's question ids are shared)."""
    texts = {str(q["_id"]): q for q in map(json.loads, (source / "queries.jsonl").open(encoding="utf-8"))}
    return [texts[qid] for qid in qrels if qid in texts]


def dump(dataset: Path, model: str, split: str, out: Path, reanalyse: bool, bm25_only: bool = False,
         tag: str = "", queries_from: list[Path] = (), sample: int = 1,
         vectors: dict[str, object] | None = None) -> list[Path]:
    """One dump per query source (the dataset's own queries, or each of ``queries_from``), one index.

    ``sample`` > 1 keeps the queries of two parts in ``sample`` (crc32 of the id: the tuning part
    and the next, see ``in_part``); ``vectors`` caches query vectors across corpora (same text, same vector).
    """
    dataset = dataset.resolve()
    queries, qrels = load_split(dataset, split)
    sources = [(f"q{source.name}", cross_queries(dataset, source.resolve(), qrels)) for source in queries_from] \
        or [("", queries)]
    if sample > 1:
        sources = [(suffix, [q for q in asked if zlib.crc32(str(q["_id"]).encode()) % sample < 2])
                   for suffix, asked in sources]
    vectors = {} if vectors is None else vectors
    targets = []
    with Engine(default_data_dir()) as engine, eval_engine(engine, dataset, model, print) as (evaluator, mapping):
        store = evaluator.store
        if reanalyse:
            started = time.perf_counter()
            rows = store.upkeep.reanalyse()
            store.upkeep.build_fts_index()
            print(f"reanalysed {rows} chunks in {time.perf_counter() - started:.1f} s")
        retriever = evaluator.retriever()
        for suffix, asked in sources:
            records = []
            for query in asked:
                text = query["text"]
                started = time.perf_counter()
                if not bm25_only and text not in vectors:
                    vectors[text] = retriever.embed_query(text)
                dense = [] if bm25_only else dense_leg(store, vectors[text], POOL, None)
                dense_ms = (time.perf_counter() - started) * 1000
                started = time.perf_counter()
                sparse = sparse_leg(store, text, POOL, None, store.upkeep.build_fts_index)
                bm25_ms = (time.perf_counter() - started) * 1000
                records.append({
                    "id": str(query["_id"]), "query": text, "langs": query_languages(text), "dense_ms": dense_ms,
                    "bm25_ms": bm25_ms,
                    "dense": [[mapping.get(c.path, c.path), c.chunk_index, round(c.cosine, 6), c.lang] for c in dense],
                    "bm25": [[mapping.get(c.path, c.path), c.chunk_index, round(c.bm25, 6), c.lang] for c in sparse]})
            name = f"{dataset.parent.name}-{dataset.name}" if dataset.parent.name == "xquad" else dataset.name
            name += f"-{suffix}" if suffix else ""
            target = out / f"{name}.{model}.{split}{tag}.json"
            out.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps({"set": name, "model": model, "identity": evaluator.embedder.identity,
                                          "split": split, "qrels": {r["id"]: qrels[r["id"]] for r in records},
                                          "queries": records}))
            print(f"{target}: {len(records)} queries, dense p50 "
                  f"{statistics.median(r['dense_ms'] for r in records):.1f} ms, "
                  f"bm25 p50 {statistics.median(r['bm25_ms'] for r in records):.1f} ms", flush=True)
            targets.append(target)
    return targets


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
    def rrf_files(record: dict, k: int = 60, gate: bool = True) -> dict[str, float]:
        dense, sparse = candidates(record)
        w = leg_weights(record["query"], model, dense, sparse) if gate else LegWeights(1, 1)
        scores: dict[str, float] = {}
        for ranking, weight in ((files_of(dense), 1.0 if w.dense > 0 else 0.0), (files_of(sparse), 1.0)):
            for rank, doc in enumerate(ranking, start=1):
                scores[doc] = scores.get(doc, 0.0) + weight / (k + rank)
        return scores

    def mix(record: dict, part: float) -> list[str]:
        dense, sparse = candidates(record)
        convex = {c.path: c.fused for c in fuse_files(dense, sparse, leg_weights(record["query"], model, dense, sparse))}
        ranks = rrf_files(record)
        top = max(ranks.values(), default=1.0) or 1.0
        fused = {doc: (1 - part) * convex.get(doc, 0.0) + part * ranks.get(doc, 0.0) / top for doc in convex | ranks}
        return sorted(fused, key=lambda d: -fused[d])

    def convex_chunks(record: dict, share: float = 0.5) -> list[str]:
        dense, sparse = candidates(record)
        w = leg_weights(record["query"], model, dense, sparse)
        wd = share if w.dense > 0 else 0.0
        fused: dict[tuple, float] = {}
        for leg, attr, weight, floor in ((dense, "cosine", wd, None), (sparse, "bm25", 1 - wd if wd else 1.0, 0.0)):
            if not leg:
                continue
            values = [getattr(c, attr) for c in leg]
            high = max(values); low = min(values) if floor is None else floor
            for c in leg:
                fused[c.key] = fused.get(c.key, 0.0) + weight * ((getattr(c, attr) - low) / ((high - low) or 1.0))
        return list(dict.fromkeys(key[0] for key in sorted(fused, key=lambda k: -fused[k])))

    for share in (0.4, 0.5, 0.6):
        out[f"convex-chunks-{share}"] = lambda r, share=share: convex_chunks(r, share)
    for k in (20, 60):
        out[f"rrf-files-k{k}"] = lambda r, k=k: sorted((s := rrf_files(r, k)), key=lambda d: -s[d])
    for part in (0.25, 0.5, 0.75):
        out[f"mix-{part}"] = lambda r, part=part: mix(r, part)
    for name, floors in {"minmax-both": {"cosine": None, "bm25": None}, "floor0-both": {"cosine": 0.0, "bm25": 0.0}}.items():
        out[name] = lambda r, floors=floors: with_floors(floors, weighted, r)

    def evidence(record: dict) -> list[str]:
        return files_of(evidence_fusion(record["query"], model, *candidates(record)).candidates)

    out["evidence"] = evidence
    for combination in itertools.product(*([(name, value) for value in values] for name, values in EVIDENCE_GRID.items())):
        label = ",".join(f"{''.join(word[0] for word in name.lower().split('_'))}={value}" for name, value in combination)
        out[f"evidence:{label}"] = lambda r, params=dict(combination): with_params(params, evidence, r)
    return out


# the evidence fusion's parameters and the values `grid --only evidence` tries: every combination
EVIDENCE_GRID: dict[str, tuple] = {"CROSS_BM25_SHARE": (0.0, 0.05, 0.1, 0.2, 0.3)}


def with_params(params: dict, rank, record: dict) -> list[str]:
    saved = {name: getattr(fusion_module, name) for name in params}
    for name, value in params.items():
        setattr(fusion_module, name, value)
    try:
        return rank(record)
    finally:
        for name, value in saved.items():
            setattr(fusion_module, name, value)


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
    print(f"{'variant':<24}" + "".join(f"{c:>18}" for c in columns) + f"{'min margin':>12}")
    best_leg = [max(table.get("dense", [0] * len(columns))[i], table["bm25"][i]) for i in range(len(columns))]
    for mode, values in table.items():
        margin = min(v - b for v, b in zip(values, best_leg))
        print(f"{mode:<24}" + "".join(f"{v:>18.4f}" for v in values) + f"{margin:>12.4f}")


def table(paths: list[Path], part: str = "rest") -> None:
    """Markdown rows: nDCG@10 / Recall@100 of the legs and of every fusion, per dump; test splits of
    sets without another split keep only ``part`` of their queries (see ``in_part``)."""
    modes = ("dense", "bm25", "rrf-chunks", "weighted", "evidence")
    print("| set | model | split | queries | " + " | ".join(modes) + " | evidence - better leg |")
    print("|---|---|---|---|" + "---|" * (len(modes) + 1))
    for path in paths:
        data = load_dump(path)
        split_part = part if data["split"] == "test" and data["set"] not in ("scifact", "nfcorpus") else "all"
        records = [q for q in data["queries"] if in_part(q["id"], split_part)]
        ranks = variants(data)
        cells, ndcg = [], {}
        for mode in modes:
            if mode not in ranks:
                cells.append("—")
                continue
            m = mean_metrics({q["id"]: ranks[mode](q) for q in records}, data["qrels"])
            ndcg[mode] = m["ndcg@10"]
            cells.append(f"{m['ndcg@10']:.3f} / {m['recall@100']:.3f}")
        margin = ndcg["evidence"] - max(ndcg.get("dense", 0.0), ndcg["bm25"])
        print(f"| {data['set']} | {data['model']} | {data['split']} | {len(records)} | " + " | ".join(cells)
              + f" | {margin:+.3f} |")


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


def cost(paths: list[Path], rounds: int = 3) -> None:
    """CPU time of each fusion per query on the dumps' legs (process time, so other processes' load
    counts less than in wall time), the fusions interleaved round by round."""
    records = [(data["identity"], record) for data in map(load_dump, paths) for record in data["queries"]]
    times: dict[str, list[float]] = {name: [] for name in FUSIONS}
    for _ in range(rounds):
        for name, method in FUSIONS.items():
            for model, record in records:
                dense, sparse = candidates(record)
                started = time.process_time()
                method(record["query"], model, dense, sparse)
                times[name].append((time.process_time() - started) * 1000)
    for name, values in times.items():
        print(f"{name:<10} per query: mean {statistics.mean(values):.3f} ms, p50 {statistics.median(values):.3f} ms "
              f"({len(values)} fusions)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    d = commands.add_parser("dump")
    d.add_argument("datasets", type=Path, nargs="+", help="one or more sets (query vectors are shared)")
    d.add_argument("--model", default="e5")
    d.add_argument("--split", default="test")
    d.add_argument("--out", type=Path, default=Path("/tmp/sensetree-fusion-dumps"))
    d.add_argument("--reanalyse", action="store_true", help="recompute the keyword terms from the stored text first")
    d.add_argument("--bm25-only", action="store_true", help="skip the dense leg (to compare text analyses)")
    d.add_argument("--tag", default="", help="added to the dump's file name")
    d.add_argument("--queries-from", type=Path, nargs="+", default=[],
                   help="parallel sets whose queries (same ids) to ask of this corpus instead of its own: "
                        "cross-lingual pairs, e.g. .../xquad/ar .../xquad/ru")
    d.add_argument("--sample", type=int, default=1,
                   help="keep 2 queries in N by id (the tuning part and the next: see in_part)")
    s = commands.add_parser("score")
    s.add_argument("dumps", type=Path, nargs="+")
    s.add_argument("--only", help="variants whose name holds this")
    t = commands.add_parser("table")
    t.add_argument("dumps", type=Path, nargs="+")
    t.add_argument("--part", default="rest", choices=("tune", "rest", "all"))
    c = commands.add_parser("cost")
    c.add_argument("dumps", type=Path, nargs="+")
    g = commands.add_parser("grid")
    g.add_argument("dumps", type=Path, nargs="+")
    g.add_argument("--only", help="variants whose name holds this")
    g.add_argument("--part", default="tune", choices=("tune", "rest", "all"),
                   help="for sets with only a test split: the quarter of queries to tune on, or the rest")
    args = parser.parse_args()
    if args.command == "dump":
        vectors: dict[str, object] = {}
        for dataset in args.datasets:
            dump(dataset, args.model, args.split, args.out, args.reanalyse, args.bm25_only, args.tag,
                 args.queries_from, args.sample, vectors)
    elif args.command == "table":
        table(args.dumps, args.part)
    elif args.command == "cost":
        cost(args.dumps)
    elif args.command == "grid":
        grid(args.dumps, args.only, args.part)
    else:
        score(args.dumps, args.only)


if __name__ == "__main__":
    main()
