"""Past one machine: indexing throughput on a Ray cluster, and search latency on object storage.

    python bench/scale.py throughput [--docs 300] [--model e5]
    python bench/scale.py latency [--sizes 100000,1000000] [--keep /tmp/sensetree-scale-tables] [--queries 50]
    python bench/scale.py commits [--sizes 100000,1000000] [--keep /tmp/sensetree-scale-tables]

``throughput`` indexes the first N SciFact documents (one text file each) three times in fresh
data dirs, each embedding exactly the same chunks: in-process (the model on one thread), then
with ``--ray`` on a real cluster of one raylet with one worker, then of two raylets with one
worker each (one thread each); the clusters are started with ``ray start`` on this machine
before the clock starts. It prints chunks/s of the semantic phase (wall clock from its first
batch to the end of the run) and the whole run's seconds, then the ceiling: the bare model on the
same chunks in one process and in two at once (one thread each), the speed-up this machine gives
two workers before any cluster cost.

``latency`` builds the synthetic tables of ``search_latency.py`` (reused from ``--keep`` when
already there: the 1M table's vector index takes tens of minutes to build on 2 cores), copies
each into a real S3-compatible server on loopback (SeaweedFS), and times the same searches on
the local-disk table and on the bucket, the latter as a ``--read-only`` node reads it
(``storage.refresh_seconds`` between version checks). Query vectors are precomputed, so the
figures are the search machinery; one end-to-end figure through ``serve --read-only`` over
HTTP (query embedding included) follows.

``commits`` times what the one writer commits to the bucket at those sizes: a semantic batch
and a keyword batch, for the commit rate of a single writer.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ helpers: a Ray cluster, an S3 server

from index_throughput import write_docs  # noqa: E402
from search_latency import Corpus, build, timed  # noqa: E402

from sensetree import Engine  # noqa: E402
from sensetree.search.pipeline import Retriever  # noqa: E402
from sensetree.store.chunks import ChunkStore  # noqa: E402
from sensetree.store.location import S3Location  # noqa: E402
from sensetree.store.manifest import MANIFEST, Manifest  # noqa: E402
from sensetree.store.table import TABLE  # noqa: E402
from sensetree import AddRootParams, SetParams

SCIFACT = Path("/work/shared/eval/scifact")


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def stray_ray_processes() -> int:
    """Ray daemons already running (a cluster left by a killed run): their CPU time skews the ratios."""
    import psutil

    names = ("raylet", "gcs_server")
    return sum(1 for p in psutil.process_iter(["name"]) if any(n in (p.info["name"] or "") for n in names))


# throughput ---------------------------------------------------------------------------------
def index_once(work: Path, name: str, docs: Path, model: str, address: str | None) -> dict:
    with Engine(work / name) as engine:
        engine.run(SetParams("embedding.model", model))
        engine.run(SetParams("embedding.threads", 1))
        engine.run(SetParams("cluster.worker_threads", 1))
        engine.run(AddRootParams(str(docs)))
        if address:
            engine.distribute(address)
        marks: dict[str, float] = {}

        def seen(progress) -> None:
            if progress.phase == "semantic" and "semantic" not in marks:
                marks["semantic"] = time.perf_counter()

        started = time.perf_counter()
        progress = engine.index(on_update=seen)
        ended = time.perf_counter()
        chunks = progress.embedding.count
        semantic = ended - marks.get("semantic", started)
        return {"name": name, "chunks": chunks, "chunks_per_s": chunks / semantic, "semantic_s": semantic,
                "run_s": ended - started, "workers": engine.pool.workers, "load": load()}


def throughput(args: argparse.Namespace) -> None:
    import ray

    from tests.support.ray_cluster import RayCluster

    work = Path(tempfile.mkdtemp(prefix="sensetree-scale-"))
    try:
        count = write_docs(args.dataset / "corpus.jsonl", work / "docs", args.docs)
        print(f"{count} SciFact documents, model {args.model}, one thread per worker; load before {load()}")
        if stray := stray_ray_processes():
            print(f"  warning: {stray} Ray daemons of another cluster are running; stop them (ray stop) for "
                  "figures that mean something")
        results = [index_once(work, "in-process", work / "docs", args.model, None)]
        for nodes in (1, 2):
            with RayCluster(cpus=1) as cluster:
                cluster.start_head()
                for _ in range(nodes - 1):
                    cluster.add_node()
                results.append(index_once(work, f"ray, {nodes} worker{'s' * (nodes > 1)}", work / "docs", args.model,
                                          cluster.address))
                ray.shutdown()
        base, one = results[0]["chunks_per_s"], results[1]["chunks_per_s"]
        for r in results:
            print(f"  {r['name']:16s} {r['chunks']:5d} chunks  {r['chunks_per_s']:6.2f} chunks/s (semantic phase "
                  f"{r['semantic_s']:.1f} s, run {r['run_s']:.1f} s, workers {r['workers']})  load {r['load']}")
        print(f"  ray 1 worker / in-process: {one / base:.2f} (goal >= 0.90); "
              f"2 workers / 1 worker: {results[2]['chunks_per_s'] / one:.2f} (goal >= 1.80)")
        alone, pair = ceiling(args.model, work / "docs")
        print(f"  the model alone, 1 thread, no Ray: 1 process {alone:.2f} chunks/s, 2 at once {pair:.2f}: "
              f"{pair / alone:.2f}x, what 2 workers could reach on this machine (load {load()})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _model_rate(model: str, texts: list[str], results) -> None:
    """In a process of its own: chunks/s of the bare model on one thread."""
    from sensetree.models.embeddings import load_embedder

    embedder = load_embedder(model, threads=1)
    embedder.embed_passages(texts[:8])
    started = time.perf_counter()
    for start in range(0, len(texts), 16):
        embedder.embed_passages(texts[start:start + 16])
    results.put(len(texts) / (time.perf_counter() - started))


def ceiling(model: str, docs: Path) -> tuple[float, float]:
    """The model alone on the same chunks, one thread, in one process and then in two at once: the
    speed-up this machine itself gives two workers, with no cluster, head or commits."""
    import multiprocessing

    from sensetree.ingest.chunker import chunk_text

    texts = [chunk for file in sorted(docs.glob("*.txt")) for chunk in chunk_text(file.read_text(encoding="utf-8"))]
    spawn = multiprocessing.get_context("spawn")
    rates = []
    for count in (1, 2):
        results = spawn.Queue()
        processes = [spawn.Process(target=_model_rate, args=(model, texts, results)) for _ in range(count)]
        for process in processes:
            process.start()
        rates.append(sum(results.get() for _ in processes))
        for process in processes:
            process.join()
    return rates[0], rates[1]


# latency ----------------------------------------------------------------------------------------
def table_at(keep: Path, rows: int, corpus: Corpus) -> ChunkStore:
    """The synthetic table of ``rows`` chunks, built once and kept."""
    folder = keep / str(rows)
    if (folder / f"{TABLE}.lance").is_dir():
        store = ChunkStore(folder)
        if store.table.count() == rows and (rows < 50_000 or store.upkeep.has_vector_index()):
            print(f"  reusing {folder}")
            return store
        shutil.rmtree(folder)
    started = time.perf_counter()
    store = build(folder, rows, corpus)
    print(f"  built in {time.perf_counter() - started:.1f} s (load {load()})")
    return store


def upload(folder: Path, where: S3Location) -> None:
    started = time.perf_counter()
    files = [f for f in folder.rglob("*") if f.is_file()]
    for file in files:
        where.client.upload_file(str(file), where.bucket, f"{where.prefix}/{file.relative_to(folder)}")
    size = sum(f.stat().st_size for f in files) / 1e9
    print(f"  copied {len(files)} objects, {size:.2f} GB, into {where.uri} in {time.perf_counter() - started:.0f} s")


def searches(store: ChunkStore, corpus: Corpus, texts: list[str]) -> list[tuple[str, float, float]]:
    vectors = corpus.vectors(len(texts))
    by_text = dict(zip(texts, vectors))
    retriever = Retriever(store, lambda q: by_text[q], lambda: None, store.upkeep.build_fts_index, exists=lambda p: True)
    rows = [("dense leg (k=160)", lambda q: store.queries.dense(by_text[q], 160)),
            ("BM25 leg (k=160)", lambda q: store.queries.sparse(q, 160)),
            ("hybrid search, no rerank (limit 20)", lambda q: retriever.search(q, limit=20, rerank_on=False)),
            ("hybrid search scoped to 2 %", lambda q: retriever.search(q, "/data/proj07", limit=20, rerank_on=False))]
    return [(label, *timed(fn, texts)) for label, fn in rows]


@contextmanager
def s3_server() -> Iterator:
    """SeaweedFS's S3 gateway on loopback, the environment pointed at it for as long as the bench runs."""
    from tests.support.s3_server import S3Server, in_environment, restore

    server = S3Server()
    saved = in_environment(server)
    try:
        yield server
    finally:
        restore(saved)
        server.stop()


def tables_in_bucket(server, args: argparse.Namespace, corpus: Corpus, name: str) -> Iterator[tuple[int, ChunkStore, S3Location]]:
    """Per size in ``--sizes``: the local table and where its copy lies in a fresh bucket."""
    for rows in (int(s) for s in args.sizes.split(",")):
        print(f"\n{rows:,} chunks (load {load()})")
        local = table_at(args.keep, rows, corpus)
        where = S3Location.parse(f"s3://{server.bucket(f'{name}-{rows}')}/index")
        upload(args.keep / str(rows), where)
        yield rows, local, where


def latency(args: argparse.Namespace) -> None:
    from tests.support.serve_process import Served

    corpus = Corpus()
    with s3_server() as server:
        for _, local, where in tables_in_bucket(server, args, corpus, "scale"):
            where.write(MANIFEST, Manifest(["/data"], {"embedding.model": "minilm"}, "synthetic").encode())
            remote = ChunkStore(where, refresh_seconds=args.refresh)
            texts = corpus.queries(args.queries)
            for label, store in (("local disk", local), (f"bucket, refresh {args.refresh:g} s", remote)):
                for row, p50, p95 in searches(store, corpus, texts):
                    print(f"  {label:20s} {row:38s} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms")
            node = Served(Path(tempfile.mkdtemp(prefix="sensetree-node-")), "--read-only", "--index", where.uri,
                          env=server.env)
            try:
                p50, p95 = timed(lambda q: node.get("/api/search", q=q, rerank="false"), texts)
                print(f"  serve --read-only over HTTP, query embedded (minilm), hybrid: p50 {p50:.1f} ms, "
                      f"p95 {p95:.1f} ms (load {load()})")
            finally:
                node.stop()


def commits(args: argparse.Namespace) -> None:
    """What one writer's commits cost on a large table in the bucket: a semantic batch (one merge_insert
    of 1,024 vectors) and a keyword batch (delete + append of 256 files, 2,048 chunks)."""
    import numpy as np

    from sensetree.store.table import ChunkRow

    corpus = Corpus()
    with s3_server() as server:
        for _, _, where in tables_in_bucket(server, args, corpus, "commit"):
            store = ChunkStore(where)
            keys = store.table.handle.search().select(["path", "chunk_index", "text"]).limit(4096).to_arrow().to_pylist()
            semantic, keyword = [], []
            for attempt in range(args.repeat):
                batch = keys[(attempt * 1024) % 3072:][:1024]
                vectors = corpus.vectors(len(batch))
                # analysed already, as the workers' rows are: the figures are the commits alone
                rows_in = [ChunkRow(k["path"], k["chunk_index"], k["text"], v, "h", 0.0, None, "text", 4096, "en",
                                    k["text"]) for k, v in zip(batch, vectors)]
                started = time.perf_counter()
                store.writes.set_vectors(rows_in, "synthetic", len(vectors[0]))
                semantic.append(time.perf_counter() - started)
                paths = [f"/data/new/run{attempt}/file{n:04d}.txt" for n in range(256)]
                fresh = [ChunkRow(p, i, t, None, "h", 0.0, None, "text", 4096, "en", t)
                         for p in paths for i, t in enumerate(corpus.texts(8))]
                started = time.perf_counter()
                store.writes.replace_files(paths, fresh, "", len(vectors[0]))
                keyword.append(time.perf_counter() - started)
            print(f"  semantic batch (merge_insert of 1,024 vectors): median {np.median(semantic):.2f} s, "
                  f"max {max(semantic):.2f} s")
            print(f"  keyword batch (delete + append, 256 files, 2,048 chunks): median {np.median(keyword):.2f} s, "
                  f"max {max(keyword):.2f} s  (load {load()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("throughput")
    one.add_argument("--docs", type=int, default=300)
    one.add_argument("--model", default="e5")
    one.add_argument("--dataset", type=Path, default=SCIFACT)
    tables = argparse.ArgumentParser(add_help=False)  # the synthetic tables both bucket benches use
    tables.add_argument("--sizes", default="100000,1000000")
    tables.add_argument("--keep", type=Path, default=Path(tempfile.gettempdir()) / "sensetree-scale-tables")
    two = commands.add_parser("latency", parents=[tables])
    two.add_argument("--queries", type=int, default=50)
    two.add_argument("--refresh", type=float, default=2.0)
    commands.add_parser("commits", parents=[tables]).add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    {"throughput": throughput, "latency": latency, "commits": commits}[args.command](args)


if __name__ == "__main__":
    main()
