"""Soak: many clients search a running ``sensetree serve`` while the files under its roots change.

    python bench/soak.py [--minutes 10] [--clients 8] [--docs 600] [--model minilm]

Builds a tree of real abstracts (SciFact, from ../shared/eval) in 30 folders, starts the real
server (indexing and watching in the same process), waits for the first index, then runs
``--clients`` threads for ``--minutes``: each loops over a mix of searches (70 %, a third of
them scoped to a folder), meaning trees (15 %), explorer listings (10 %) and previews (5 %).
Meanwhile a writer edits, adds and deletes a file every two seconds, so the server re-indexes
throughout. Prints throughput, p50/p99 latency per kind, errors (goal: none) and the server's
resident memory after warm-up and at the end (goal: growth under 300 MB).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.serve_process import Served  # noqa: E402  (the same launcher the tests use)

from sensetree import Engine  # noqa: E402
from sensetree import AddRootParams, SetParams

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval" / "scifact"
FOLDERS = 30
GROWTH_BOUND_MB = 300


def build_tree(root: Path, docs: int) -> tuple[list[Path], list[str]]:
    files, queries = [], []
    with open(EVAL / "corpus.jsonl", encoding="utf-8") as corpus:
        for n, line in enumerate(corpus):
            if n >= docs:
                break
            doc = json.loads(line)
            path = root / f"topic{n % FOLDERS:02d}" / f"{doc['_id']}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# {doc.get('title', '')}\n\n{doc['text']}\n", encoding="utf-8")
            files.append(path)
    with open(EVAL / "queries.jsonl", encoding="utf-8") as handle:
        queries = [json.loads(line)["text"] for line in handle][:300]
    return files, queries


class Recorder:
    def __init__(self):
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def add(self, kind: str, seconds: float, error: str | None) -> None:
        with self.lock:
            self.latencies[kind].append(seconds)
            if error:
                self.errors.append(f"{kind}: {error}")


def client(server: Served, root: Path, queries: list[str], files: list[Path], stop: threading.Event,
           record: Recorder, seed: int) -> None:
    rng = random.Random(seed)
    while not stop.is_set():
        roll, query = rng.random(), rng.choice(queries)
        folder = str(root / f"topic{rng.randrange(FOLDERS):02d}")
        if roll < 0.47:
            kind, endpoint, params = "search", "/api/search", {"q": query}
        elif roll < 0.70:
            kind, endpoint, params = "search scoped", "/api/search", {"q": query, "scope": folder}
        elif roll < 0.85:
            kind, endpoint, params = "tree", "/api/tree", {"q": query}
        elif roll < 0.95:
            kind, endpoint, params = "browse", "/api/browse", {"path": folder}
        else:
            kind, endpoint, params = "preview", "/api/preview", {"path": str(rng.choice(files))}
        started = time.perf_counter()
        error = None
        try:
            response = server.client.get(endpoint, params=params)
            if response.status_code != 200 and not (kind == "preview" and response.status_code == 404):
                error = f"{response.status_code} {response.text[:200]}"
        except Exception as exc:  # a dropped connection is an error to report, not to crash on
            error = f"{type(exc).__name__}: {exc}"
        record.add(kind, time.perf_counter() - started, error)


def writer(root: Path, files: list[Path], stop: threading.Event, counts: dict[str, int]) -> None:
    """Edit, add and delete files (the preview client tolerates 404 for the deleted ones)."""
    rng = random.Random(99)
    n = 0
    while not stop.wait(2.0):
        n += 1
        target = rng.choice(files)
        action = ("edit", "add", "delete")[n % 3]
        if action == "edit" and target.exists():
            with open(target, "a", encoding="utf-8") as handle:
                handle.write(f"\nEdited in soak round {n}: additional remarks about cell biology.\n")
        elif action == "add":
            fresh = root / f"topic{n % FOLDERS:02d}" / f"soak_{n}.md"
            fresh.write_text(f"# Soak note {n}\n\nA new note about protein folding, written in round {n}.\n")
        elif target.exists():
            target.unlink()
        counts[action] += 1


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--docs", type=int, default=600)
    parser.add_argument("--model", default="minilm")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="sensetree-soak-") as tmp:
        root, data = Path(tmp) / "tree", Path(tmp) / "data"
        files, queries = build_tree(root, args.docs)
        with Engine(data) as engine:
            engine.run(AddRootParams(str(root)))
            engine.run(SetParams("embedding.model", args.model))
        server = Served(data)
        try:
            started = time.perf_counter()
            server.wait_indexed(timeout=3600)
            print(f"indexed {len(files)} files in {time.perf_counter() - started:.1f} s")
            process = psutil.Process(server.process.pid)
            record, stop = Recorder(), threading.Event()
            for q in queries[:20]:  # warm-up: models loaded, caches filled
                server.client.get("/api/search", params={"q": q})
                server.client.get("/api/tree", params={"q": q})
            rss_start = process.memory_info().rss
            counts: dict[str, int] = defaultdict(int)
            threads = [threading.Thread(target=client, args=(server, root, queries, files, stop, record, seed))
                       for seed in range(args.clients)]
            threads.append(threading.Thread(target=writer, args=(root, files, stop, counts)))
            peak = rss_start
            began = time.perf_counter()
            for thread in threads:
                thread.start()
            while time.perf_counter() - began < args.minutes * 60:
                time.sleep(5)
                peak = max(peak, process.memory_info().rss)
            stop.set()
            for thread in threads:
                thread.join()
            elapsed = time.perf_counter() - began
            rss_end = process.memory_info().rss
            queue = server.get("/api/queue")
        finally:
            server.stop()

    total = sum(len(v) for v in record.latencies.values())
    print(f"\n{args.clients} clients, {elapsed / 60:.1f} min, file changes: {dict(counts)}")
    print(f"requests: {total} ({total / elapsed:.1f}/s), errors: {len(record.errors)}")
    print(f"{'kind':<15}{'n':>7}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for kind, values in sorted(record.latencies.items()):
        print(f"{kind:<15}{len(values):>7}{statistics.median(values) * 1000:>10.1f}"
              f"{percentile(values, 0.99) * 1000:>10.1f}{max(values) * 1000:>10.1f}")
    growth = (rss_end - rss_start) / 2**20
    print(f"server RSS after warm-up {rss_start / 2**20:.0f} MB, peak {peak / 2**20:.0f} MB, end "
          f"{rss_end / 2**20:.0f} MB: growth {growth:+.0f} MB (bound {GROWTH_BOUND_MB} MB) "
          f"{'OK' if growth < GROWTH_BOUND_MB else 'EXCEEDED'}")
    print(f"queue at the end: {queue['pending_count']} pending, {len(queue['failed'])} failed")
    for error in record.errors[:10]:
        print("  error:", error)
    sys.exit(1 if record.errors or growth >= GROWTH_BOUND_MB else 0)


if __name__ == "__main__":
    main()
