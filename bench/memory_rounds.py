"""Memory over many small index rounds in one process, as a server that watches the disk runs.

    python bench/memory_rounds.py [--rounds 150] [--docs 600] [--model minilm]

Indexes N SciFact abstracts in 30 folders, then repeats rounds of: edit 3 files, index, 20
searches (half scoped to a folder) and a meaning tree. Every 10 rounds it prints the
process's resident memory, what Lance's index and metadata caches hold (bounded in
``store/table.py``), and the mean search latency of the round. A leak shows as resident
memory that keeps climbing after the caches have stopped growing.

Like ``sensetree serve``, it caps glibc's malloc arenas first (``--default-arenas`` does not,
to compare).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

from sensetree import Engine
from sensetree.interfaces.cli import fewer_malloc_arenas
from sensetree import SearchParams, TreeParams
from sensetree import AddRootParams, SetParams

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval" / "scifact"
FOLDERS = 30


def resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--docs", type=int, default=600)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--default-arenas", action="store_true", help="leave glibc's malloc arenas uncapped")
    args = parser.parse_args()
    if not args.default_arenas:
        fewer_malloc_arenas()

    work = Path(tempfile.mkdtemp(prefix="sensetree-memory-"))
    root = work / "tree"
    try:
        with open(EVAL / "corpus.jsonl", encoding="utf-8") as corpus:
            for n, line in zip(range(args.docs), corpus):
                doc = json.loads(line)
                path = root / f"topic{n % FOLDERS:02d}" / f"{doc['_id']}.md"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(f"# {doc.get('title', '')}\n\n{doc['text']}\n", encoding="utf-8")
        with open(EVAL / "queries.jsonl", encoding="utf-8") as handle:
            queries = [json.loads(line)["text"] for line in handle][:200]
        rng = random.Random(1)
        with Engine(work / "data") as engine:
            engine.run(SetParams("embedding.model", args.model))
            engine.run(AddRootParams(str(root)))
            engine.index()
            for query in queries[:20]:
                engine.run(SearchParams(query))
            start = resident_mb()
            print(f"after the first index and 20 searches: {start:.0f} MB resident")
            print(f"{'round':>6} {'resident MB':>12} {'Lance caches MB':>16} {'search ms':>10}")
            files = sorted(root.rglob("*.md"))
            for round_no in range(1, args.rounds + 1):
                for path in rng.sample(files, 3):
                    path.write_text(path.read_text(encoding="utf-8") + f"\nEdit {round_no}.\n", encoding="utf-8")
                engine.index()
                started = time.perf_counter()
                for query in rng.sample(queries, 10):
                    engine.run(SearchParams(query))
                    engine.run(SearchParams(query, scope=str(root / "topic03")))
                search_ms = (time.perf_counter() - started) / 20 * 1000
                engine.run(TreeParams(rng.choice(queries)))
                if round_no % 10 == 0:
                    print(f"{round_no:>6} {resident_mb():>12.0f} {engine.store.table.cache_bytes() / 2**20:>16.0f} "
                          f"{search_ms:>10.0f}", flush=True)
            print(f"growth over {args.rounds} rounds: {resident_mb() - start:+.0f} MB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
