"""What one typo costs a search, and how much of it the spelling stage (search/spelling.py) wins back.

Each test query gets one typo in its rarest word (the word of five letters or more found in the
fewest documents of the corpus): a substitution, deletion, insertion or transposition inside the
word, chosen by a generator seeded with the query's id, so every run puts the same typos. The
hybrid search (no rerank) runs on the clean queries, on the typo'd ones with the correction off,
with it on for the BM25 leg (the product), and with it on for both legs; nDCG@10 and p50 latency
of each, the deltas to the clean queries, how many typos were corrected back to their word and
how many clean queries were changed at all.

    python bench/typos.py /work/shared/eval/scifact /work/shared/eval/nfcorpus --model minilm
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sensetree.config import default_data_dir  # noqa: E402
from sensetree import Engine  # noqa: E402
from sensetree.eval.metrics import ndcg_at  # noqa: E402
from sensetree.eval.runner import eval_engine, load_split  # noqa: E402

MIN_LETTERS = 5
_WORD = re.compile(r"[^\W\d_]+")
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def document_frequency(dataset: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    with (dataset / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            counts.update(set(_WORD.findall(f"{doc.get('title') or ''} {doc.get('text') or ''}".lower())))
    return counts


def typo(word: str, rng: random.Random) -> str:
    """One edit inside the word (its first letter kept): a substitution, deletion, insertion or transposition."""
    for _ in range(50):
        i = rng.randrange(1, len(word) - 1)
        kind = rng.choice(("substitute", "delete", "insert", "transpose"))
        if kind == "substitute":
            changed = word[:i] + rng.choice(LETTERS) + word[i + 1:]
        elif kind == "delete":
            changed = word[:i] + word[i + 1:]
        elif kind == "insert":
            changed = word[:i] + rng.choice(LETTERS) + word[i:]
        else:
            changed = word[:i] + word[i + 1] + word[i] + word[i + 2:]
        if changed.lower() != word.lower():
            return changed
    return word


def with_typo(qid: str, text: str, df: Counter[str]) -> tuple[str, str | None]:
    """The query with one typo in its rarest word of MIN_LETTERS or more, and that word (None: no such word)."""
    words = [w for w in _WORD.findall(text) if len(w) >= MIN_LETTERS and df[w.lower()] > 0]
    if not words:
        return text, None
    rarest = min(words, key=lambda w: (df[w.lower()], -len(w), w))
    changed = typo(rarest, random.Random(f"typos:{qid}"))
    return re.sub(rf"\b{re.escape(rarest)}\b", changed, text, count=1), rarest.lower()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", type=Path, nargs="+")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--split", default="test")
    parser.add_argument("--max-queries", type=int)
    args = parser.parse_args()
    with Engine(default_data_dir()) as engine:
        for dataset in args.datasets:
            measure(engine, dataset.resolve(), args)


def measure(engine: Engine, dataset: Path, args: argparse.Namespace) -> None:
    queries, qrels = load_split(dataset, args.split, args.max_queries)
    df = document_frequency(dataset)
    typod = {str(q["_id"]): with_typo(str(q["_id"]), q["text"], df) for q in queries}
    runs = (("clean, correction off", "off", False), ("clean, correction on", "bm25", False),
            ("typo, correction off", "off", True), ("typo, correction on (BM25)", "bm25", True),
            ("typo, correction on (both legs)", "both", True))
    with eval_engine(engine, dataset, args.model, print) as (evaluator, mapping):
        retriever = evaluator.retriever()
        forms = evaluator.store.queries.term_forms
        retriever.search("warm up", limit=10, rerank_on=False)
        figures: dict[str, tuple[float, float]] = {}
        corrected = changed_clean = 0
        for label, spelling, typos in runs:
            retriever.spelling = spelling
            scores, latencies = [], []
            for query in queries:
                qid = str(query["_id"])
                text = typod[qid][0] if typos else query["text"]
                started = time.perf_counter()
                response = retriever.search(text, limit=100, rerank_on=False)
                latencies.append((time.perf_counter() - started) * 1000)
                ranking = [mapping.get(p, p) for r in response.results for p in (r.path, *r.duplicates)]
                scores.append(ndcg_at(ranking, qrels[qid], 10))
                if spelling == "bm25" and response.spelled:
                    if not typos:
                        changed_clean += 1
                    elif set(forms(typod[qid][1] or "")) & {t for w in response.spelled.values() for t in forms(w)}:
                        corrected += 1
            figures[label] = (statistics.fmean(scores), statistics.median(latencies))
        n = len(queries)
        typoed = sum(1 for _, word in typod.values() if word)
        clean = figures["clean, correction on"][0]
        print(f"\n{dataset.name} {args.split} · {evaluator.embedder.identity} · {n} queries, {typoed} with a typo · "
              f"hybrid, no rerank")
        print(f"{'':34}{'nDCG@10':>9}{'vs clean':>10}{'p50 ms':>9}")
        for label, (ndcg, p50) in figures.items():
            print(f"{label:34}{ndcg:>9.4f}{ndcg - clean:>+10.4f}{p50:>9.1f}")
        print(f"typos spelled back to their word: {corrected}/{typoed}; clean queries changed: {changed_clean}/{n}")


if __name__ == "__main__":
    main()
