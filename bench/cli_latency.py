"""How long `sensetree search` takes from the command line: the engine in the command, or the service.

    python bench/cli_latency.py [--docs 200] [--runs 5] [--model minilm|default]

Writes ``--docs`` SciFact abstracts (one text file each, from /work/shared/eval/scifact), indexes
them, then times the whole command as a user runs it (a new process each time: start-up, models,
search, printing) for a few queries: first with ``SENSETREE_IN_PROCESS=1`` (the engine loads in the
command, as without the service), then with ``sensetree serve`` running and answering. Reports the
median and the range of the wall time, and the CPU time the command itself used.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.serve_process import Served  # noqa: E402  (the same launcher the tests use)

HERE = Path(__file__).resolve().parent
SHARED = next((p / "shared" / "eval" for p in HERE.parents if (p / "shared" / "eval").is_dir()),
              HERE.parents[1] / "shared" / "eval")
QUERIES = ["vitamin D deficiency and bone fractures", "gene expression in tumour cells",
           "antibiotic resistance in hospitals"]


def write_docs(folder: Path, count: int) -> None:
    folder.mkdir(parents=True)
    with open(SHARED / "scifact" / "corpus.jsonl", encoding="utf-8") as corpus:
        for n, line in zip(range(count), corpus):
            doc = json.loads(line)
            (folder / f"{doc['_id']}.txt").write_text(f"{doc.get('title', '')}\n\n{doc['text']}", encoding="utf-8")


def timed(data: Path, query: str, in_process: bool) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command) for one `sensetree search QUERY --json`."""
    env = {**os.environ, "SENSETREE_HOME": str(data), "SENSETREE_IN_PROCESS": "1" if in_process else "0"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "sensetree.interfaces.cli", "search", query, "--json"],
                          capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or not json.loads(done.stdout)["results"]:
        raise RuntimeError(f"search failed: {done.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def report(name: str, samples: list[tuple[float, float]]) -> None:
    walls, cpus = [s[0] for s in samples], [s[1] for s in samples]
    print(f"{name:<22} wall median {statistics.median(walls):5.2f} s (min {min(walls):.2f}, max {max(walls):.2f})"
          f" · CPU median {statistics.median(cpus):5.2f} s · {len(samples)} runs", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5, help="searches per way (cycling over 3 queries)")
    parser.add_argument("--model", default="minilm", help="minilm (bundled, small) or default (multilingual E5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        write_docs(base / "docs", args.docs)
        env = {**os.environ, "SENSETREE_HOME": str(base / "data"), "SENSETREE_IN_PROCESS": "1"}
        cli = [sys.executable, "-m", "sensetree.interfaces.cli"]
        if args.model != "default":
            subprocess.run([*cli, "config", "set", "embedding.model", args.model], env=env, check=True,
                           capture_output=True)
        subprocess.run([*cli, "add", str(base / "docs")], env=env, check=True, capture_output=True)
        started = time.perf_counter()
        subprocess.run([*cli, "index", "--quiet"], env=env, check=True, capture_output=True)
        print(f"{args.docs} files indexed in {time.perf_counter() - started:.1f} s ({args.model}); "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}", flush=True)
        queries = [QUERIES[n % len(QUERIES)] for n in range(args.runs)]
        report("in-process (no service)", [timed(base / "data", q, True) for q in queries])
        server = Served(base / "data")
        try:
            server.wait_indexed()
            timed(base / "data", QUERIES[0], False)  # the server's first search loads its models: not the CLI's cost
            report("served (service running)", [timed(base / "data", q, False) for q in queries])
        finally:
            server.stop()


if __name__ == "__main__":
    main()
