"""Signals lab: every chunk's cosine and BM25 score per query, dumped once; then the product's fusions scored
offline at any coverage, with or without meaning on demand, in seconds.

    # once per set and model (indexes through `sensetree eval`'s cache); --queries-from for cross pairs
    python bench/signals_lab.py dump /work/shared/eval/xquad/ro --queries-from /work/shared/eval/xquad/vi
    python bench/signals_lab.py dump /work/shared/eval/scifact --sample 0
    # nDCG@10 of the legs and of each fusion at full coverage, on the queries not used for tuning
    python bench/signals_lab.py table /tmp/sensetree-signals/*.e5.json
    # at 0-100 % of the files embedded (a fixed order: the files' ids hashed), on-demand off and on
    python bench/signals_lab.py coverage /tmp/sensetree-signals/scifact.e5.json --on-demand 24

A dump holds each query's cosine to every chunk (float16) and its BM25 top 1,000. A level of coverage keeps
the vectors of a share of the files: the dense leg ranks only those, a keyword hit without one has no cosine
unless it is among the keyword leg's first ``--on-demand`` chunks (meaning on demand). The fusions are the
product's own (``search/fusion.FUSIONS``), on candidates completed as ``Retriever._complete`` completes them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sensetree import Engine  # noqa: E402
from sensetree.eval.runner import eval_engine, load_split, score_ranking  # noqa: E402
from sensetree.search.fusion import FUSIONS, JUDGES_BOTH  # noqa: E402
from sensetree.search.legs import sparse_leg  # noqa: E402
from sensetree.search.types import Candidate  # noqa: E402

POOL = 160  # the pipeline's pool at limit 100, as `sensetree eval` searches
BM25_DEPTH = 1000  # BM25 scores kept per query: a dense hit below them holds no query term, or scores 0 here


def in_part(qid: str, part: str) -> bool:
    """A quarter of the queries (crc32 of the id) to tune on, the rest to report (as bench/fusion_lab.py)."""
    return part == "all" or (zlib.crc32(qid.encode()) % 4 == 0) == (part == "tune")


def dump(dataset: Path, model: str, out: Path, sources: list[Path], sample: int, data_dir: Path) -> None:
    dataset = dataset.resolve()
    queries, qrels = load_split(dataset, "test")
    asked = [("", queries)]
    if sources:
        asked = []
        for source in sources:
            texts = {str(q["_id"]): q for q in map(json.loads, (source / "queries.jsonl").open(encoding="utf-8"))}
            asked.append((source.name, [texts[qid] for qid in qrels if qid in texts]))
    vectors: dict[str, np.ndarray] = {}
    with Engine(data_dir) as engine, eval_engine(engine, dataset, model, print) as (evaluator, mapping):
        store = evaluator.store
        table = store.table.handle.to_arrow()
        paths, chunks = table["path"].to_pylist(), table["chunk_index"].to_pylist()
        matrix = np.asarray(table["vector"].to_pylist(), np.float32)
        index_of = {(p, int(c)): i for i, (p, c) in enumerate(zip(paths, chunks))}
        retriever = evaluator.retriever()
        for suffix, questions in asked:
            if sample > 1:
                questions = [q for q in questions if zlib.crc32(str(q["_id"]).encode()) % sample < 2]
            cosines = np.zeros((len(questions), len(paths)), np.float16)
            bm25 = []
            for row, query in enumerate(questions):
                text = query["text"]
                if text not in vectors:
                    vectors[text] = retriever.embed_query(text)
                cosines[row] = matrix @ vectors[text]
                hits = sparse_leg(store, text, BM25_DEPTH, None, store.upkeep.build_fts_index)
                bm25.append([[index_of[(h.path, h.chunk_index)], h.bm25] for h in hits])
            name = (f"xquad-{dataset.name}" if dataset.parent.name == "xquad" else dataset.name) + (f"-q{suffix}" if suffix else "")
            target = out / f"{name}.{model}"
            out.mkdir(parents=True, exist_ok=True)
            np.savez_compressed(f"{target}.npz", cosines=cosines)
            Path(f"{target}.json").write_text(json.dumps({
                "set": name, "model": model, "identity": evaluator.embedder.identity,
                "keys": [[mapping.get(p, p), int(c)] for p, c in zip(paths, chunks)], "langs": table["lang"].to_pylist(),
                "ids": [str(q["_id"]) for q in questions], "texts": [q["text"] for q in questions], "bm25": bm25,
                "qrels": {str(q["_id"]): qrels[str(q["_id"])] for q in questions}}))
            print(f"{target}.json: {len(questions)} queries", flush=True)


class Dump:
    def __init__(self, path: Path):
        self.data = json.loads(path.read_text())
        self.name, self.model, self.identity = self.data["set"], self.data["model"], self.data["identity"]
        self.cosines = np.load(str(path).removesuffix(".json") + ".npz")["cosines"].astype(np.float32)
        self.keys = [tuple(k) for k in self.data["keys"]]
        files = sorted({k[0] for k in self.keys}, key=lambda f: zlib.crc32(f.encode()))
        self.order = {f: i / len(files) for i, f in enumerate(files)}

    def rankings(self, mode: str, coverage: float = 1.0, on_demand: int = 0, part: str = "rest") -> dict[str, list[str]]:
        """query id -> the files ``mode`` ranks (dense, bm25, or a fusion's name) at ``coverage``."""
        embedded = np.array([self.order[k[0]] < coverage for k in self.keys])
        langs = self.data["langs"]
        out = {}
        for row, qid in enumerate(self.data["ids"]):
            if not in_part(qid, part):
                continue
            cosines = self.cosines[row]
            top = np.argsort(-np.where(embedded, cosines, -9.0))[:POOL]
            dense_ids = [int(i) for i in top if embedded[i]]
            bm25 = {int(i): s for i, s in self.data["bm25"][row]}
            sparse_ids = list(bm25)[:POOL]
            known = embedded.copy()
            known[sparse_ids[:on_demand]] = True
            complete = mode in JUDGES_BOTH
            dense = [Candidate(*self.keys[i], "", langs[i], dense_rank=rank, cosine=float(cosines[i]),
                               bm25=bm25.get(i, 0.0) if complete else None) for rank, i in enumerate(dense_ids, 1)]
            sparse = [Candidate(*self.keys[i], "", langs[i], bm25_rank=rank, bm25=bm25[i],
                                cosine=float(cosines[i]) if complete and known[i] else None)
                      for rank, i in enumerate(sparse_ids, 1)]
            ranked = dense if mode == "dense" else sparse if mode == "bm25" else \
                FUSIONS[mode](self.data["texts"][row], self.identity, dense, sparse).candidates
            out[qid] = list(dict.fromkeys(c.path for c in ranked))
        return out

    def ndcg(self, mode: str, **how) -> float:
        ranked = self.rankings(mode, **how)
        return sum(score_ranking(r, self.data["qrels"][q])["ndcg@10"] for q, r in ranked.items()) / max(1, len(ranked))


def table(paths: list[Path], part: str) -> None:
    modes = ("dense", "bm25", "rrf", "weighted", "evidence", "both")
    print("| set | model | " + " | ".join(modes) + " | both − better leg |\n|---|---|" + "---|" * (len(modes) + 1))
    worst = 1.0
    for path in paths:
        dump_ = Dump(path)
        scores = {mode: dump_.ndcg(mode, part=part) for mode in modes}
        margin = scores["both"] - max(scores["dense"], scores["bm25"])
        worst = min(worst, margin)
        print(f"| {dump_.name} | {dump_.model} | " + " | ".join(f"{scores[m]:.3f}" for m in modes) + f" | {margin:+.3f} |",
              flush=True)
    print(f"\nworst margin of both over the better leg: {worst:+.3f}")


def coverage(paths: list[Path], levels: list[float], on_demand: int, part: str) -> None:
    print(f"| set | model | embedded | bm25 | evidence | both | both, first {on_demand} keyword hits embedded |\n"
          "|---|---|---|---|---|---|---|")
    for path in paths:
        dump_ = Dump(path)
        for level in levels:
            bm25 = dump_.ndcg("bm25", coverage=level, part=part)
            cells = [dump_.ndcg("evidence", coverage=level, part=part), dump_.ndcg("both", coverage=level, part=part),
                     dump_.ndcg("both", coverage=level, on_demand=on_demand, part=part)]
            print(f"| {dump_.name} | {dump_.model} | {level:.0%} | {bm25:.3f} | "
                  + " | ".join(f"{c:.3f} ({c - bm25:+.3f})" for c in cells) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    d = commands.add_parser("dump")
    d.add_argument("dataset", type=Path)
    d.add_argument("--model", default="e5")
    d.add_argument("--queries-from", type=Path, nargs="+", default=[])
    d.add_argument("--sample", type=int, default=4, help="keep 2 queries in N by id (0: all)")
    d.add_argument("--out", type=Path, default=Path("/tmp/sensetree-signals"))
    d.add_argument("--data-dir", type=Path, default=Path("/tmp/sensetree-bench"))
    t = commands.add_parser("table")
    t.add_argument("dumps", type=Path, nargs="+")
    t.add_argument("--part", default="rest", choices=("tune", "rest", "all"))
    c = commands.add_parser("coverage")
    c.add_argument("dumps", type=Path, nargs="+")
    c.add_argument("--levels", default="0,0.1,0.25,0.5,0.75,1")
    c.add_argument("--on-demand", type=int, default=24)
    c.add_argument("--part", default="all", choices=("tune", "rest", "all"))
    args = parser.parse_args()
    started = time.perf_counter()
    if args.command == "dump":
        dump(args.dataset, args.model, args.out, args.queries_from, args.sample, args.data_dir)
    elif args.command == "table":
        table(args.dumps, args.part)
    else:
        coverage(args.dumps, [float(v) for v in args.levels.split(",")], args.on_demand, args.part)
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
