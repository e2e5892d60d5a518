"""Long files with known answers, assembled from a BEIR set: many abstracts joined into one file.

    python bench/long_files.py /work/shared/eval/scifact /tmp/fusion-data/scifact-long
    python bench/fusion_lab.py dump /tmp/fusion-data/scifact-long --model minilm --split train

Every abstract judged for a query of any split, and unjudged ones drawn to make ``--abstracts``,
are shuffled (fixed seed) and joined, ``--per-file`` to a file (40 SciFact abstracts: about 60k characters,
70-80 chunks), each as its title line, a blank line and its text. A query's judged files are the
files that hold its judged abstracts, with the best grade among them; the query splits stay the
source's. ``--per-file 1`` writes the same abstracts as they are, one a file: the short layout of the
same text. The result is a BEIR-layout folder that ``sensetree eval`` and the fusion lab read as it is.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from pathlib import Path


def build(source: Path, target: Path, per_file: int, abstracts: int, seed: int) -> None:
    corpus = {str(doc["_id"]): doc for doc in map(json.loads, (source / "corpus.jsonl").open(encoding="utf-8"))}
    splits = {path.stem: _qrels(path) for path in sorted((source / "qrels").glob("*.tsv"))}
    judged = sorted({doc for qrels in splits.values() for docs in qrels.values() for doc in docs if doc in corpus})
    rng = random.Random(seed)
    others = sorted(set(corpus) - set(judged))
    chosen = judged + rng.sample(others, min(len(others), max(0, abstracts - len(judged))))
    rng.shuffle(chosen)
    file_of: dict[str, str] = {}
    (target / "qrels").mkdir(parents=True, exist_ok=True)
    with (target / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for number, start in enumerate(range(0, len(chosen), per_file), start=1):
            part = chosen[start:start + per_file]
            if per_file == 1:  # the same abstracts as files of their own: the short layout to compare with
                file_id, record = part[0], corpus[part[0]]
            else:
                file_id = f"long-{number:03d}"
                text = "\n\n".join(f"{corpus[doc].get('title') or ''}\n\n{corpus[doc].get('text') or ''}".strip()
                                   for doc in part)
                record = {"_id": file_id, "title": f"Collected abstracts, part {number}", "text": text}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            file_of.update(dict.fromkeys(part, file_id))
    for split, qrels in splits.items():
        with (target / "qrels" / f"{split}.tsv").open("w", encoding="utf-8", newline="") as out:
            writer = csv.writer(out, delimiter="\t", lineterminator="\n")
            writer.writerow(["query-id", "corpus-id", "score"])
            for qid, docs in qrels.items():
                grades: dict[str, int] = {}
                for doc, grade in docs.items():
                    if doc in file_of:
                        grades[file_of[doc]] = max(grades.get(file_of[doc], 0), grade)
                writer.writerows([qid, file_id, grade] for file_id, grade in sorted(grades.items()))
    (target / "queries.jsonl").write_bytes((source / "queries.jsonl").read_bytes())
    print(f"{target}: {len(chosen)} abstracts ({len(judged)} judged) in {len(range(0, len(chosen), per_file))} files")


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(float(row["score"]))
    return qrels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, help="a BEIR-layout set of short documents (SciFact, NFCorpus)")
    parser.add_argument("target", type=Path, help="where to write the long-file set (outside the repository)")
    parser.add_argument("--per-file", type=int, default=40, help="abstracts per file")
    parser.add_argument("--abstracts", type=int, default=960,
                        help="abstracts in all: every judged one, then unjudged ones drawn to fill")
    parser.add_argument("--seed", type=int, default=28)
    args = parser.parse_args()
    build(args.source, args.target, args.per_file, args.abstracts, args.seed)


if __name__ == "__main__":
    main()
