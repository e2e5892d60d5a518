"""Each bundled ONNX embedder on each device this machine has, on the same SciFact chunks.

    python bench/accelerator.py [--docs 100] [--models e5,minilm] [--folder-files 40] [--threads 2]

For every model and every device onnxruntime offers here (the CPU always; cuda, directml,
coreml, openvino where installed): where ``compute.device`` really put the model and why, load
time and chunks/s over the chunks (embed_passages, after a short warm-up), each in a fresh
interpreter. Then the least and mean cosine of each device's vectors to the CPU's (the model
identity is kept only where they agree, cosine >= 0.999), and the semantic phase's time
(``Progress.embedding``) for a folder of the first --folder-files documents written as files and
indexed by a real engine on each device. On a machine without an accelerator the table has the
CPU rows alone, and says so.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from embed_rate import SHARED, load_average, scifact_chunks  # noqa: E402

MEASURE = """
import json, sys, time
import numpy as np
from sensetree.models.embeddings import load_embedder

chunks = json.load(open(sys.argv[4], encoding="utf-8"))
started = time.perf_counter()
model = load_embedder(sys.argv[1], threads=int(sys.argv[3]), device=sys.argv[2])
load_s = time.perf_counter() - started
model.embed_passages(chunks[:4])
wall = time.perf_counter()
vectors = model.embed_passages(chunks)
wall = time.perf_counter() - wall
np.save(sys.argv[5], vectors)
p = model.placement
print(json.dumps({"device": p.device, "reason": p.reason, "load_s": load_s, "per_s": len(chunks) / wall}))
"""

SEMANTIC = """
import json, sys
from sensetree import Engine
from sensetree import AddRootParams, SetParams

data, tree, model, device, threads = sys.argv[1:6]
with Engine(data) as engine:
    engine.run(SetParams("embedding.model", model))
    engine.run(SetParams("compute.device", device))
    engine.run(SetParams("embedding.threads", int(threads)))
    engine.run(SetParams("indexing.on_battery", "run"))
    engine.run(SetParams("indexing.low_priority", False))
    engine.run(AddRootParams(tree))
with Engine(data) as engine:
    progress = engine.index()
print(json.dumps({"chunks": progress.embedding.count, "seconds": progress.embedding.seconds}))
"""


def devices_here() -> list[str]:
    from sensetree.models.devices import PROVIDERS, available_providers

    available = available_providers()
    return ["cpu", *(device for device, provider in PROVIDERS.items() if provider in available)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100, help="SciFact documents (100 give about 220 chunks)")
    parser.add_argument("--models", default="e5,minilm")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--folder-files", type=int, default=40, help="documents in the folder the semantic phase indexes")
    parser.add_argument("--dataset", type=Path, default=SHARED / "scifact")
    args = parser.parse_args()

    chunks = scifact_chunks(args.dataset, args.docs)
    devices = devices_here()
    print(f"{len(chunks)} chunks from {args.docs} SciFact documents, {args.threads} threads, devices here: "
          f"{', '.join(devices)}, load average {load_average()} at start")
    if devices == ["cpu"]:
        print("no accelerator on this machine: the CPU rows alone (compute.device = auto runs on the CPU)")
    with tempfile.TemporaryDirectory() as scratch:
        scratch_dir = Path(scratch)
        chunks_file = scratch_dir / "chunks.json"
        chunks_file.write_text(json.dumps(chunks), encoding="utf-8")
        tree = scratch_dir / "tree"
        tree.mkdir()
        with (args.dataset / "corpus.jsonl").open(encoding="utf-8") as handle:
            for number, line in zip(range(args.folder_files), handle):
                doc = json.loads(line)
                (tree / f"{number:03d}.txt").write_text(f"{doc.get('title') or ''}\n\n{doc.get('text') or ''}",
                                                       encoding="utf-8")

        print(f"\n{'model':<7} {'device':<9} {'runs on':<8} {'load s':>7} {'chunks/s':>9} {'cos min':>8} "
              f"{'cos mean':>9} {'semantic s':>11}  why")
        for model in args.models.split(","):
            cpu_vectors = None
            for device in devices:
                vectors_file = scratch_dir / f"{model}-{device}.npy"
                run = subprocess.run([sys.executable, "-c", MEASURE, model, device, str(args.threads),
                                      str(chunks_file), str(vectors_file)], capture_output=True, text=True, check=True)
                result = json.loads(run.stdout.strip().splitlines()[-1])
                vectors = np.load(vectors_file)
                cpu_vectors = vectors if cpu_vectors is None else cpu_vectors
                cosine = (vectors * cpu_vectors).sum(axis=1)
                data = scratch_dir / f"data-{model}-{device}"
                indexed = subprocess.run([sys.executable, "-c", SEMANTIC, str(data), str(tree), model, device,
                                          str(args.threads)],
                                         capture_output=True, text=True, check=True)
                semantic = json.loads(indexed.stdout.strip().splitlines()[-1])
                print(f"{model:<7} {device:<9} {result['device']:<8} {result['load_s']:>7.1f} {result['per_s']:>9.2f} "
                      f"{cosine.min():>8.5f} {cosine.mean():>9.5f} {semantic['seconds']:>8.1f} s  "
                      f"{result['reason']} ({semantic['chunks']} chunks)", flush=True)
    print(f"\nload average {load_average()} at end")


if __name__ == "__main__":
    main()
