"""Time to searchable on a real folder that nobody wrote for this project.

    python bench/time_to_search.py [FOLDER] [--model e5] [--semantic-minutes N] [--samples 60]

Copies FOLDER (default: this machine's /usr/share/doc) to a temporary folder, starts a real
`sensetree index` process on it with a fresh data dir and the default model, and prints:
- the seconds until every readable file is keyword-searchable: the keyword phase done, then
  checked by searching exact words taken from the files that came last in its order;
- the keyword phase's files/s and the semantic phase's chunks/s, beside the raw rate of the
  same model on the same chunks (embedded outside the pipeline afterwards);
- the seconds until every file has a vector (the semantic phase embeds each file's first chunk, with its
  sense, before the rest of any file);
- the seconds until every chunk has its vector, or, with --semantic-minutes, the ETA at the
  rate reached by then (the default model needs hours for a folder this size on 2 cores);
- peak memory of the indexer and its worker processes.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sensetree import Engine
from sensetree.ingest.sense import embedded_text, embedding_context
from sensetree import AddRootParams, SetParams

RARE = 5  # files a probe word may be in
WORD = re.compile(r"[^\W\d_]{6,}|\w*\d\w*[^\W\d_]\w*")  # long words, or names mixing letters and digits


def _copy(folder: Path, into: Path) -> Path:
    target = into / folder.name
    shutil.copytree(folder, target, symlinks=True, ignore_dangling_symlinks=True,
                    copy_function=_copy_readable)
    return target


def _copy_readable(source: str, target: str) -> None:
    try:
        shutil.copy2(source, target)
    except OSError:
        pass  # an unreadable file stays out of the copy, as it would stay out of the index


def _peak_kb(pid: int) -> int:
    """VmHWM of a process and its children (the keyword phase's workers)."""
    total = 0
    for proc in [pid, *_children(pid)]:
        try:
            for line in Path(f"/proc/{proc}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def _children(pid: int) -> list[int]:
    try:
        found = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
    return found + [g for c in found for g in _children(c)]


def _probes(engine: Engine, samples: int, rng: random.Random) -> list[tuple[str, str, str | None]]:
    """(query, path, content hash) for files that came last in the keyword phase's order (the oldest): two exact
    words of the file that at most ``RARE`` files hold, so that it should be among the first results.
    A file with no such words is not sampled."""
    table = engine.store.table.handle.search().select(["path", "text"]).limit(10_000_000).to_arrow().to_pylist()
    holders: dict[str, set[str]] = {}
    words_of: dict[str, set[str]] = {}
    for row in table:
        words = set(WORD.findall(row["text"]))
        words_of.setdefault(row["path"], set()).update(words)
        for word in words:
            holders.setdefault(word.lower(), set()).add(row["path"])
    rows = [r for r in engine.catalog.files.all() if r.status in ("keyword", "indexed") and r.doc_type != "context"]
    rows.sort(key=lambda r: r.mtime)
    probes = []
    for row in rows:
        rare = sorted(w for w in words_of.get(row.path, ()) if len(holders[w.lower()]) <= RARE)
        if len(rare) >= 2:
            probes.append((" ".join(rng.sample(rare, 2)), row.path, row.content_hash))
        if len(probes) >= samples:
            break
    return probes


def _found(retriever, query: str, path: str, content_hash: str | None) -> bool:
    """The file is among the first 10 by keywords, itself or by its content (identical licence
    files collapse into their best-ranked copy)."""
    results = retriever.search(query, limit=10, hybrid=True, rerank_on=False, dense=False).results
    return any(path == r.path or (content_hash and r.content_hash == content_hash) for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--model", default=None, help="embedding model (default: the product's default)")
    parser.add_argument("--semantic-minutes", type=float, default=None,
                        help="stop the semantic phase after this long and report its ETA instead")
    parser.add_argument("--samples", type=int, default=60, help="files checked for keyword search")
    parser.add_argument("--raw-chunks", type=int, default=400, help="chunks embedded by the model alone")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="sensetree-tts-"))
    rng = random.Random(7)
    try:
        tree = _copy(args.folder, work)
        data = work / "data"
        with Engine(data) as engine:
            if args.model:
                engine.run(SetParams("embedding.model", args.model))
            engine.run(AddRootParams(str(tree)))
        files = sum(1 for p in tree.rglob("*") if p.is_file() and not p.is_symlink())
        print(f"folder                {args.folder} ({files} files) copied to {tree}")
        started = time.monotonic()
        process = subprocess.Popen([sys.executable, "-m", "sensetree.interfaces.cli", "index", "--quiet",
                                    "--data-dir", str(data)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        peak = 0
        keyword_s = semantic_s = stored_s = openings_s = None
        keyword_files = 0
        probes: list[tuple[str, str, str | None]] | None = None
        with Engine(data) as reader:
            retriever = reader.retriever()
            while process.poll() is None:
                time.sleep(1.0)
                peak = max(peak, _peak_kb(process.pid))
                counts = reader.catalog.files.counts()
                if keyword_s is None and counts["pending"] == 0 and sum(counts.values()) > 0:
                    stored_s = stored_s or time.monotonic() - started
                    if probes is None:  # once: it reads every stored chunk
                        probes = _probes(reader, args.samples, rng)
                    found = sum(_found(retriever, *probe) for probe in probes)
                    # all found, or a file that stays unfound after 30 s is the search's miss, not time
                    if found == len(probes) or time.monotonic() - started > stored_s + 30:
                        keyword_s = time.monotonic() - started if found == len(probes) else stored_s
                        keyword_files = reader.catalog.files.phase_counts()[0]
                        print(f"keyword phase stored  {stored_s:8.1f} s  ({keyword_files} files, {counts['failed']} failed)")
                        print(f"keyword-searchable    {keyword_s:8.1f} s  ({found}/{len(probes)} sampled files found "
                              f"by two of their exact words that at most {RARE} files hold; the check itself takes seconds)", flush=True)
                if openings_s is None and keyword_s is not None and not reader.store.queries.unembedded_openings(1):
                    openings_s = time.monotonic() - started  # the semantic phase takes every file's first chunk first
                    print(f"every file a vector   {openings_s:8.1f} s  ({reader.store.queries.count_embedded()} chunks "
                          "embedded: each file's first, with its sense)", flush=True)
                elapsed = time.monotonic() - started
                if args.semantic_minutes is not None and keyword_s is not None and elapsed > keyword_s + 60 * args.semantic_minutes:
                    process.terminate()
            stopped_at = time.monotonic()
            process.wait()
            stop_s = time.monotonic() - stopped_at
            if process.returncode != 0 and args.semantic_minutes is None:
                print(process.stderr.read().decode(errors="replace")[-2000:])
            total, keyword, semantic = reader.catalog.files.phase_counts()
            embedded = reader.store.queries.count_embedded()
            chunks = reader.store.table.count()
            if semantic == total:
                semantic_s = stopped_at - started
            rate_s = (stopped_at - started) - (keyword_s or 0)
            print(f"keyword phase         {keyword_files / keyword_s if keyword_s else 0:8.1f} files/s")
            pipeline_rate = embedded / rate_s if rate_s > 0 else 0.0
            print(f"semantic phase        {pipeline_rate:8.2f} chunks/s  ({embedded} of {chunks} chunks embedded)")
            if semantic_s is not None:
                print(f"fully embedded        {semantic_s:8.1f} s")
            else:
                eta = (chunks - embedded) / pipeline_rate if pipeline_rate else float("inf")
                print(f"fully embedded        ETA {eta / 3600:.1f} h more at that rate (stopped after "
                      f"{args.semantic_minutes} min; the stop took {stop_s:.1f} s)")
            raw = _raw_rate(reader, args.raw_chunks)
            print(f"model alone           {raw:8.2f} chunks/s on {args.raw_chunks} of the same chunks "
                  f"(pipeline / raw {pipeline_rate / raw * 100 if raw else 0:.0f} %)")
            print(f"peak memory           {peak / 1024:8.0f} MB (indexer and its worker processes)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _raw_rate(engine: Engine, count: int) -> float:
    """The model alone on texts the pipeline embeds (stored chunks behind their context)."""
    texts = []
    for row in engine.catalog.files.all():
        sense = engine.catalog.senses.of(row.path)
        context = embedding_context(sense.text if sense else "", Path(row.path).name)
        texts += [embedded_text(c["chunk_index"], c["text"], context, sense.source if sense else "excerpt")
                  for c in engine.store.queries.chunks_of(row.path)]
        if len(texts) >= count:
            break
    texts = texts[:count]
    embedder = engine.embedder
    embedder.embed_passages(texts[:4])  # warm-up
    started = time.perf_counter()
    for start in range(0, len(texts), 64):
        embedder.embed_passages(texts[start:start + 64])
    return len(texts) / (time.perf_counter() - started)


if __name__ == "__main__":
    main()
