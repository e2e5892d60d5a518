"""Indexing throughput: the whole pipeline against the embedding model alone, on the same chunks.

    python bench/index_throughput.py [--docs 1000] [--model minilm] [--rescan-files 10000]

Writes the first N SciFact documents as one text file each (title, blank line, text),
indexes them through the product's pipeline in a fresh data dir, then embeds exactly the
texts the pipeline embedded with the model alone, in the same batch size. The ratio
pipeline/raw is what the pipeline costs on top of the model. It also times a no-change
re-scan of a tree of small files (stat and catalog diff only, which is what runs when
nothing changed), and reports the process's peak memory.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import tempfile
import time
from pathlib import Path

from sensetree import Engine
from sensetree.ingest.sense import embedded_text, embedding_context
from sensetree import AddRootParams, FileParams, SenseParams, SetParams

RAW_BATCH = 256  # chunks per call of the model alone

SHARED = Path(__file__).resolve().parents[2] / "shared" / "eval"


def write_docs(corpus: Path, folder: Path, limit: int) -> int:
    folder.mkdir(parents=True)
    count = 0
    with corpus.open(encoding="utf-8") as handle:
        for line in handle:
            if count >= limit:
                break
            doc = json.loads(line)
            (folder / f"{doc['_id']}.txt").write_text(f"{doc.get('title', '')}\n\n{doc['text']}\n", encoding="utf-8")
            count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--model", default="minilm", help="embedding model (minilm or e5)")
    parser.add_argument("--dataset", type=Path, default=SHARED / "scifact")
    parser.add_argument("--rescan-files", type=int, default=10_000)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="sensetree-bench-"))
    try:
        docs = write_docs(args.dataset / "corpus.jsonl", work / "docs", args.docs)
        with Engine(work / "data") as engine:
            engine.run(SetParams("embedding.model", args.model))
            engine.run(AddRootParams(str(work / "docs")))
            embedder = engine.embedder
            embedder.embed_passages(["warm-up"])
            started = time.perf_counter()
            progress = engine.index()
            pipeline_s = time.perf_counter() - started

            texts = [t for doc in sorted((work / "docs").iterdir()) for t in _embedded_texts(engine, str(doc))]
            started = time.perf_counter()
            for start in range(0, len(texts), RAW_BATCH):
                embedder.embed_passages(texts[start:start + RAW_BATCH])
            raw_s = time.perf_counter() - started

        rescan_s, rescan_files = _rescan(work / "rescan", args.rescan_files)
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        chunks, embed_s = progress.embedding.count, progress.embedding.seconds
        print(f"model                 {embedder.identity}")
        print(f"documents             {docs} files, {chunks} chunks")
        print(f"pipeline              {pipeline_s:8.1f} s  {docs / pipeline_s:7.2f} files/s  {chunks / pipeline_s:7.2f} chunks/s"
              f"  (extraction {progress.extraction.seconds:.1f} s in worker processes, embedding {embed_s:.1f} s)")
        print(f"embedding model alone {raw_s:8.1f} s  {len(texts) / raw_s:7.2f} chunks/s on the same {len(texts)} texts")
        print(f"pipeline / raw        {raw_s / pipeline_s * 100:7.1f} %")
        print(f"wall time in the model {embed_s / pipeline_s * 100:6.1f} %  (the rest is the pipeline's own cost; "
              "robust to other load, unlike the ratio above)")
        print(f"no-change re-scan     {rescan_s:8.3f} s for {rescan_files} files")
        print(f"peak memory (RSS)     {peak_mb:8.0f} MB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _embedded_texts(engine: Engine, path: str) -> list[str]:
    """The texts the pipeline embedded for a file: stored chunks (``sensetree file``), later ones behind the
    context prefix made from its sense."""
    sense = engine.run(SenseParams(path))
    context = embedding_context(sense.sense or "", Path(path).name)
    return [embedded_text(c["chunk_index"], c["text"], context, sense.source or "excerpt")
            for c in engine.run(FileParams(path)).chunks]


def _rescan(folder: Path, files: int) -> tuple[float, int]:
    """Queue a tree of small files once, then time a second scan that finds nothing to do."""
    for i in range(files):
        sub = folder / f"d{i // 500:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"note_{i:05d}.txt").write_text(f"note {i}\n", encoding="utf-8")
    with Engine(folder.parent / "rescan-data") as engine:
        engine.run(AddRootParams(str(folder)))
        first = engine.scan()
        assert first.new == files
        second = engine.scan()
        assert (second.new, second.changed, second.deleted) == (0, 0, 0)
        return second.seconds, files


if __name__ == "__main__":
    main()
