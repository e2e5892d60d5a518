"""``sensetree eval``: measure the product's retrieval on a BEIR-layout dataset.

Documents go through the normal pipeline: each is written as one text file (title, blank
line, text) — or, when the dataset ships ``files/`` and ``file_map.tsv``, those real files
are used — and indexed by an engine of its own under ``<data dir>/eval``, cached per
dataset and embedding model so that every mode, and every later run, reuses one index.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import time
import urllib.parse
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from ..engine import Engine
from ..errors import BadInput
from ..operations import AddRootParams, SetParams
from ..search.fusion import FUSIONS
from .metrics import mrr_at, ndcg_at, percentile, recall_at

# hybrid: the configured fusion (retrieval.fusion); hybrid-<fusion>: that one (hybrid-rrf: the seed's plain RRF)
MODES = ("dense", "bm25", *(f"hybrid-{name}" for name in FUSIONS), "hybrid", "hybrid+rerank")
COPIED_SETTINGS = ("embedding.", "indexing.", "retrieval.", "sense.")


class EvalError(BadInput):
    """The dataset folder is not usable; the message says what is missing."""


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t")
        header = next(reader, None)
        if header and header[0] != "query-id":  # no header line: the first row is data
            qrels.setdefault(header[0], {})[header[1]] = int(float(header[2]))
        for row in reader:
            if len(row) >= 3:
                qrels.setdefault(row[0], {})[row[1]] = int(float(row[2]))
    return qrels


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60] or "x"


def _materialise(dataset: Path, docs_dir: Path, log: Callable[[str], None]) -> tuple[Path, dict[str, str]]:
    """(root to index, path -> corpus id). Writes one file per document unless the dataset brings files."""
    file_map = dataset / "file_map.tsv"
    if (dataset / "files").is_dir() and file_map.exists():
        mapping = {}
        with file_map.open(encoding="utf-8") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                mapping[str((dataset / row["path"]).resolve())] = row["corpus-id"]
        return (dataset / "files").resolve(), mapping
    corpus = dataset / "corpus.jsonl"
    if not corpus.exists():
        raise EvalError(f"{dataset} has no corpus.jsonl (nor files/ + file_map.tsv)")
    docs_dir.mkdir(parents=True, exist_ok=True)
    mapping = {}
    written = 0
    for doc in _read_jsonl(corpus):
        doc_id = str(doc["_id"])
        path = docs_dir / (urllib.parse.quote(doc_id, safe="") + ".txt")
        content = f"{doc.get('title') or ''}\n\n{doc.get('text') or ''}".strip() + "\n"
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
            written += 1
        mapping[str(path)] = doc_id
    if written:
        log(f"wrote {written} document files under {docs_dir}")
    return docs_dir, mapping


def load_split(
    dataset: Path, split: str = "test", max_queries: int | None = None
) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """The queries that have judgements in ``split``, and the judgements."""
    qrels_path = dataset / "qrels" / f"{split}.tsv"
    if not qrels_path.exists():
        raise EvalError(f"{dataset} has no qrels/{split}.tsv")
    if not (dataset / "queries.jsonl").exists():
        raise EvalError(f"{dataset} has no queries.jsonl")
    qrels = load_qrels(qrels_path)
    queries = [q for q in _read_jsonl(dataset / "queries.jsonl") if str(q["_id"]) in qrels]
    return (queries[:max_queries] if max_queries else queries), qrels


@contextmanager
def eval_engine(
    engine: Engine, dataset: Path, model: str | None = None, log: Callable[[str], None] = lambda message: None
) -> Iterator[tuple[Engine, dict[str, str]]]:
    """The dataset's own engine, indexed and ready, and its path -> corpus id map.

    Cached under ``<data dir>/eval/<set>-<hash>/<model>``, so every mode and every later run reuse one index.
    """
    model = model or engine.settings["embedding.model"]
    key = hashlib.sha256(str(dataset).encode()).hexdigest()[:8]
    base = engine.data_dir.resolve() / "eval" / f"{_slug(dataset.name)}-{key}"
    root, mapping = _materialise(dataset, base / "docs", log)
    with Engine(base / _slug(model)) as evaluator:
        evaluator.settings.set_many(
            {
                name: value
                for name, value in engine.settings.as_dict().items()  # checked together
                if name.startswith(COPIED_SETTINGS) and evaluator.settings.get(name) != value
            }
        )
        if evaluator.settings["embedding.model"] != model:
            evaluator.run(SetParams("embedding.model", model))
        if str(root) not in evaluator.roots():
            evaluator.run(AddRootParams(str(root)))
        started = time.perf_counter()
        progress = evaluator.index(
            on_update=_every(
                30.0,
                lambda p: log(
                    f"indexing: keyword-ready {p.keyword}/{p.files}, semantic {p.semantic}/{p.files}, "
                    f"{p.embed_rate:.1f} chunks/s"
                ),
            )
        )
        log(
            f"index ready: {progress.files_done} files (re)indexed, {progress.embedding.count} chunks embedded in "
            f"{time.perf_counter() - started:.0f} s"
        )
        yield evaluator, mapping


def run_eval(
    engine: Engine,
    dataset: Path,
    modes: list[str],
    *,
    split: str = "test",
    max_queries: int | None = None,
    ignore_identical_ids: bool = False,
    model: str | None = None,
    log: Callable[[str], None] = lambda message: None,
) -> dict[str, Any]:
    dataset = dataset.expanduser().resolve()
    queries, qrels = load_split(dataset, split, max_queries)
    with eval_engine(engine, dataset, model, log) as (evaluator, mapping):
        report: dict[str, Any] = {
            "dataset": dataset.name,
            "split": split,
            "model": evaluator.embedder.identity,
            "documents": len(mapping),
            "chunks": evaluator.store.table.count(),
            "queries": len(queries),
        }
        for mode in modes:
            if mode == "hybrid+rerank" and evaluator.models.reranker() is None:
                report[mode] = {"skipped": f"no reranker: {evaluator.models.reranker_problem}"}
                continue
            report[mode] = _run_mode(evaluator, mode, queries, qrels, mapping, ignore_identical_ids)
            log(f"{mode}: nDCG@10 {report[mode]['ndcg@10']:.4f}")
    return report


def score_ranking(ranking: list[str], judged: dict[str, int]) -> dict[str, float]:
    """The per-query metrics of one ranked list of corpus ids."""
    return {
        "ndcg@10": ndcg_at(ranking, judged, 10),
        "recall@10": recall_at(ranking, judged, 10),
        "recall@100": recall_at(ranking, judged, 100),
        "mrr@10": mrr_at(ranking, judged, 10),
    }


def _run_mode(
    engine: Engine,
    mode: str,
    queries: list[dict],
    qrels: dict[str, dict[str, int]],
    mapping: dict[str, str],
    ignore_identical_ids: bool,
) -> dict[str, float]:
    retriever = engine.retriever()
    totals = dict.fromkeys(("ndcg@10", "recall@10", "recall@100", "mrr@10"), 0.0)
    latencies = []
    for query in queries:
        qid, text = str(query["_id"]), query["text"]
        started = time.perf_counter()
        if mode == "bm25":
            response = retriever.search(text, limit=100, hybrid=True, rerank_on=False, dense=False)
        else:
            fusion = mode.removeprefix("hybrid-")
            response = retriever.search(
                text,
                limit=100,
                hybrid=mode != "dense",
                rerank_on=mode == "hybrid+rerank",
                fusion=fusion if fusion in FUSIONS else None,
            )
        latencies.append((time.perf_counter() - started) * 1000)
        # a result's identical copies are shown with it ("also in N other places"): they rank right after it
        ranking = [mapping.get(path, path) for r in response.results for path in (r.path, *r.duplicates)]
        if ignore_identical_ids:
            ranking = [doc for doc in ranking if doc != qid]
        for name, value in score_ranking(ranking, qrels[qid]).items():
            totals[name] += value
    n = max(1, len(queries))
    result = {name: value / n for name, value in totals.items()}
    result.update(p50_ms=percentile(latencies, 50), p95_ms=percentile(latencies, 95))
    return result


def _every(seconds: float, callback: Callable[[Any], None]) -> Callable[[Any], None]:
    """Rate-limit a progress callback."""
    last = [0.0]

    def call(value: Any) -> None:
        now = time.monotonic()
        if now - last[0] >= seconds:
            last[0] = now
            callback(value)

    return call
