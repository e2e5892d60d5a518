"""How much the model is spared by embedding each distinct text once (indexing.reuse_vectors).

    python bench/reuse_vectors.py [FOLDER] [--subset-chunks 2000] [--model e5] [--no-whole] [--copyrights 150]

1. The whole FOLDER (default: this machine's /usr/share/doc), cheaply: its plain-text and gzip
   files are chunked by the indexer's chunker and each chunk's embedded text built as the semantic
   phase does without a sense model (``embedded_text``, the excerpt sense, the file name); the
   share of chunks whose text another chunk already has is what reuse spares the model. No
   extraction of other formats, no keyword analysis, no embedding: seconds, not hours (the real
   pipeline's keyword phase alone took over an hour on this loaded 2-core machine).
2. A subset of it, whole package folders picked at random (seed 7) until about --subset-chunks
   chunks: indexed from scratch with reuse off, then with reuse on (fresh data dirs, the same
   engine otherwise): texts sent to the model, the semantic phase's model time, the index run's
   wall time, and the least cosine between the two indexes' vectors chunk for chunk. Package
   folders picked at random share little with each other; the repeats are spread over thousands of
   packages. ``--copyrights N`` indexes N packages' ``copyright`` files instead: the licence texts
   that make most of the repeats, in the real pipeline.
"""

from __future__ import annotations

import argparse
import gzip
import random
import shutil
import tempfile
import time
import zlib
from collections import Counter
from pathlib import Path

import numpy as np

from sensetree import Engine
from sensetree.ingest.chunker import chunk_text
from sensetree.ingest.sense import embedded_text, embedding_context, excerpt_sense
from sensetree import AddRootParams, SetParams


def _cheap_embedded_texts(path: Path) -> list[str]:
    """What the semantic phase would embed for a plain-text or gzip file, without the pipeline:
    the indexer's chunker, the excerpt sense, the file name as context (``.gz`` without it)."""
    try:
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
            name = path.stem
        else:
            name = path.name
        if b"\0" in data[:4096]:
            return []
        text = data.decode("utf-8", errors="replace")
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error):
        return []
    chunks = chunk_text(text, 1000, 200)
    context = embedding_context(excerpt_sense(text), name)
    return [embedded_text(i, chunk, context, "excerpt") for i, chunk in enumerate(chunks)]


def whole_folder(folder: Path) -> dict[str, int]:
    """The share of repeated embedded texts over the whole folder, counted cheaply (no extraction
    beyond plain text and gzip, no keyword analysis, no embedding); chunks per package folder."""
    started = time.monotonic()
    counts: Counter[str] = Counter()
    per_package: Counter[str] = Counter()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            texts = _cheap_embedded_texts(path)
            counts.update(texts)
            per_package[path.relative_to(folder).parts[0]] += len(texts)
    total = sum(counts.values())
    print(f"whole {folder}, plain-text and gzip files chunked without the pipeline ({time.monotonic() - started:.0f} s): "
          f"{total} chunks, {len(counts)} distinct embedded texts: {1 - len(counts) / max(1, total):.1%} of the chunks "
          f"repeat another's embedded text", flush=True)
    return dict(per_package)


def _package_chunks(folder: Path, name: str) -> int:
    package = folder / name
    files = [package] if package.is_file() else [p for p in package.rglob("*") if p.is_file() and not p.is_symlink()]
    return sum(len(_cheap_embedded_texts(p)) for p in files)


def subset(folder: Path, work: Path, chunks_per_package: dict[str, int] | None, target: int) -> Path:
    """Whole package folders, at random, until about ``target`` chunks."""
    rng = random.Random(7)
    names = sorted(p.name for p in folder.iterdir())
    rng.shuffle(names)
    if chunks_per_package is None:
        chunks_per_package = {}
        for name in names:
            chunks_per_package[name] = _package_chunks(folder, name)
            if sum(c for c in chunks_per_package.values() if 0 < c <= target // 4) >= target:
                break
    tree = work / "subset" / folder.name
    tree.mkdir(parents=True)
    total = 0
    for name in names:
        if total >= target:
            break
        if not 0 < chunks_per_package.get(name, 0) <= target // 4:
            continue
        source = folder / name
        if source.is_dir():
            shutil.copytree(source, tree / name, symlinks=True, ignore_dangling_symlinks=True,
                            copy_function=_copy_quietly)
        else:
            _copy_quietly(str(source), str(tree / name))
        total += chunks_per_package[name]
    return tree


def _copy_quietly(source: str, target: str) -> None:
    try:
        shutil.copy2(source, target)
    except OSError:
        pass


def index_with(tree: Path, data: Path, model: str | None, reuse: bool, threads: int) -> tuple[dict, dict]:
    with Engine(data) as engine:
        if model:
            engine.run(SetParams("embedding.model", model))
        engine.run(SetParams("indexing.ocr", False))
        engine.run(SetParams("indexing.on_battery", "run"))
        engine.run(SetParams("indexing.low_priority", False))  # a shared machine would starve a niced run
        engine.run(SetParams("indexing.reuse_vectors", reuse))
        engine.run(SetParams("embedding.threads", threads))
        engine.run(AddRootParams(str(tree)))
    with Engine(data) as engine:  # its worker pool made with the settings above
        started = time.monotonic()
        progress = engine.index()
        wall = time.monotonic() - started
        rows = engine.store.table.handle.to_arrow().select(["path", "chunk_index", "vector"]).to_pylist()
    vectors = {(r["path"].replace(str(data.parent), ""), r["chunk_index"]): np.asarray(r["vector"], np.float32)
               for r in rows if r["vector"] is not None}
    figures = {"chunks": progress.embedding.count, "sent": progress.sent_to_model,
               "semantic_s": progress.embedding.seconds, "wall_s": wall}
    return figures, vectors


def copyright_files(folder: Path, work: Path, count: int) -> Path:
    """``count`` packages' ``copyright`` files, picked at random (seed 7), each in its package's folder."""
    packages = sorted(p for p in folder.iterdir() if (p / "copyright").is_file())
    random.Random(7).shuffle(packages)
    tree = work / "copyrights"
    for package in packages[:count]:
        (tree / package.name).mkdir(parents=True)
        shutil.copy(package / "copyright", tree / package.name / "copyright")
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--subset-chunks", type=int, default=2000)
    parser.add_argument("--model", default=None, help="embedding model (default: the product's default)")
    parser.add_argument("--threads", type=int, default=2, help="embedding.threads (1 on a crowded machine: "
                        "two threads that wait for each other at every step crawl when others take the cores)")
    parser.add_argument("--no-whole", dest="whole", action="store_false", help="skip the whole folder's count")
    parser.add_argument("--copyrights", type=int, default=0, metavar="N",
                        help="index N packages' copyright files (seed 7) instead of whole package folders: "
                             "the licence texts that repeat across the folder, where reuse shows")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="sensetree-reuse-"))
    try:
        per_package = whole_folder(args.folder) if args.whole and not args.copyrights else None
        tree = (copyright_files(args.folder, work, args.copyrights) if args.copyrights
                else subset(args.folder, work, per_package, args.subset_chunks))
        results = {}
        for reuse in (False, True):
            # Both runs index the same path, so that the file names (and so the texts) are the same.
            moved = work / "run" / tree.name
            moved.parent.mkdir(exist_ok=True)
            shutil.copytree(tree, moved, symlinks=True)
            results[reuse] = index_with(moved, work / "run" / f"data-{reuse}", args.model, reuse, args.threads)
            shutil.rmtree(moved)
        print(f"subset: {len(list(tree.iterdir()))} package folders of {args.folder}")
        print(f"{'reuse':<6} {'chunks':>7} {'sent to model':>14} {'semantic s':>11} {'index wall s':>13}")
        for reuse, (figures, _) in results.items():
            print(f"{'on' if reuse else 'off':<6} {figures['chunks']:>7} {figures['sent']:>14} "
                  f"{figures['semantic_s']:>11.1f} {figures['wall_s']:>13.1f}")
        off, on = results[False], results[True]
        print(f"the model was asked for {1 - on[0]['sent'] / max(1, off[0]['sent']):.1%} fewer texts; the semantic "
              f"phase took {on[0]['semantic_s'] / max(1e-9, off[0]['semantic_s']):.2f}x the time")
        common = off[1].keys() & on[1].keys()
        cosines = [float(off[1][k] @ on[1][k]) for k in common]
        identical = sum(np.array_equal(off[1][k], on[1][k]) for k in common)
        print(f"vectors: {len(common)} chunks in both indexes, {identical} identical byte for byte, "
              f"least cosine {min(cosines) if cosines else float('nan'):.6f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
