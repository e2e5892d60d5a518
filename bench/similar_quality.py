"""How well ``similar`` finds the files that belong together, on a BEIR set (NFCorpus).

For each query with at least two relevant documents, one of them is the seed (the highest graded,
then the lowest id): the others are what the seed's similar files should rank first. Reported for
``sensetree similar`` (versions and copies, shown first, then the results) and, beside it, for
the plain hybrid search of the seed's title: recall@10 and nDCG@10 of the other relevant
documents, the seed left out of both. ``similar`` has no parameter tuned on these figures.

    python bench/similar_quality.py /work/shared/eval/nfcorpus --model minilm --split test
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
from sensetree import Engine  # noqa: E402
from sensetree.eval.metrics import ndcg_at, recall_at  # noqa: E402
from sensetree.eval.runner import eval_engine, load_split  # noqa: E402
from sensetree import SimilarParams  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--split", default="test")
    parser.add_argument("--max-queries", type=int)
    args = parser.parse_args()
    dataset = args.dataset.resolve()
    queries, qrels = load_split(dataset, args.split, args.max_queries)
    titles = {str(d["_id"]): d.get("title") or d.get("text", "")[:200]
              for d in map(json.loads, (dataset / "corpus.jsonl").open(encoding="utf-8"))}
    with Engine(default_data_dir()) as engine, eval_engine(engine, dataset, args.model, print) as (evaluator, mapping):
        path_of = {doc: path for path, doc in mapping.items()}
        retriever = evaluator.retriever()
        figures: dict[str, list[float]] = {key: [] for key in ("similar_recall", "similar_ndcg", "title_recall",
                                                              "title_ndcg", "similar_ms", "title_ms")}
        for query in queries:
            relevant = sorted(((doc, grade) for doc, grade in qrels[str(query["_id"])].items()
                               if grade > 0 and doc in path_of), key=lambda item: (-item[1], item[0]))
            if len(relevant) < 2:
                continue
            seed, others = relevant[0][0], dict(relevant[1:])
            started = time.perf_counter()
            found = evaluator.run(SimilarParams(path_of[seed], limit=100))
            figures["similar_ms"].append((time.perf_counter() - started) * 1000)
            ranking = [mapping.get(p, p) for p in (*(v.path for v in found.versions), *found.copies,
                                                   *(p for r in found.results for p in (r.path, *r.duplicates)))]
            started = time.perf_counter()
            titled = retriever.search(titles[seed], limit=100, rerank_on=False)
            figures["title_ms"].append((time.perf_counter() - started) * 1000)
            by_title = [mapping.get(p, p) for r in titled.results for p in (r.path, *r.duplicates)]
            for name, ranked in (("similar", ranking), ("title", by_title)):
                ranked = [doc for doc in ranked if doc != seed]
                figures[f"{name}_recall"].append(recall_at(ranked, others, 10))
                figures[f"{name}_ndcg"].append(ndcg_at(ranked, others, 10))
        n = len(figures["similar_recall"])
        print(f"\n{dataset.name} {args.split} · {evaluator.embedder.identity} · {n} queries with 2+ relevant documents")
        print(f"{'':18}{'recall@10':>10}{'nDCG@10':>10}{'p50 ms':>9}")
        for name, label in (("similar", "similar(seed)"), ("title", "search(title)")):
            print(f"{label:18}{statistics.fmean(figures[f'{name}_recall']):>10.4f}"
                  f"{statistics.fmean(figures[f'{name}_ndcg']):>10.4f}{statistics.median(figures[f'{name}_ms']):>9.1f}")


if __name__ == "__main__":
    main()
