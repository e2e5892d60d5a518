"""Embedding batch size: speed and peak memory of the bundled MiniLM per token budget.

    python bench/embed_batching.py [--texts 256] [--budgets 256,512,1024,2048,8192]

MiniLMOnnx groups chunks of similar length into calls of at most TOKENS_PER_BATCH tokens
(rows x longest row). For each budget this embeds the same texts in a fresh process (peak
memory is per process) and prints chunks/s and the peak resident memory above the loaded
model. Texts are SciFact abstracts cut to three lengths: short (~40 words), medium (~150)
and full chunks (~256 tokens, the model's limit). 8192 is the old fixed 32-row batch.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "eval"

# Runs in a fresh interpreter: argv = budget, words per text, texts file.
MEASURE = """
import json, sys, time
import sensetree.models.embeddings as embeddings

def peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024

embeddings.TOKENS_PER_BATCH = int(sys.argv[1])
words = int(sys.argv[2])
texts = [" ".join(t.split()[:words]) for t in json.load(open(sys.argv[3]))]
model = embeddings.MiniLMOnnx()
model.embed_passages(texts[:4])
loaded = peak_mb()
started = time.perf_counter()
model.embed_passages(texts)
print(json.dumps({"per_s": len(texts) / (time.perf_counter() - started), "peak": peak_mb() - loaded}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--budgets", default="256,512,1024,2048,8192")
    parser.add_argument("--dataset", type=Path, default=SHARED / "scifact")
    args = parser.parse_args()

    texts = []
    with (args.dataset / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            if len(doc["text"].split()) >= 200:
                texts.append(doc["text"])
            if len(texts) == args.texts:
                break
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as handle:
        json.dump(texts, handle)
    texts_file = Path(handle.name)
    try:
        print(f"{len(texts)} SciFact abstracts per run; peak = resident memory above the loaded model")
        print(f"{'budget':>7} {'words':>6} {'chunks/s':>9} {'peak MB':>8}")
        for words in (40, 150, 400):
            for budget in (int(b) for b in args.budgets.split(",")):
                run = subprocess.run([sys.executable, "-c", MEASURE, str(budget), str(words), str(texts_file)],
                                     capture_output=True, text=True, check=True)
                result = json.loads(run.stdout)
                print(f"{budget:>7} {words:>6} {result['per_s']:>9.1f} {result['peak']:>8.0f}")
    finally:
        texts_file.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
