"""`sensetree eval` on small BEIR-layout datasets built here: metrics, modes, caching, real files."""

from __future__ import annotations

import json

import pytest

from sensetree.engine import Engine
from sensetree.eval.runner import EvalError, run_eval

DOCS = {
    "d1": ("Sourdough starter", "Feed the starter with rye flour and water every twelve hours."),
    "d2": ("Bread baking", "Bake the loaf at 230 degrees with steam for the first twenty minutes."),
    "d3": ("Tax deadline", "The income tax return is due on the 31st of January with payment."),
    "d4": ("Tax deductions", "Charity donations and pension contributions reduce the taxable income."),
    "d5": ("Marathon training", "Long runs build endurance; taper in the final two weeks before the race."),
    "d6": ("Running shoes", "Replace running shoes every 700 kilometres to protect the knees."),
}
QUERIES = {"q1": "how often to feed a sourdough starter", "q2": "when is the income tax return due",
           "q3": "marathon taper weeks", "q4": "bread oven temperature"}
QRELS = [("q1", "d1", 2), ("q1", "d2", 1), ("q2", "d3", 1), ("q3", "d5", 1), ("q4", "d2", 1)]


def _dataset(folder, with_files=False):
    folder.mkdir(parents=True)
    (folder / "qrels").mkdir()
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in QUERIES.items()))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in QRELS))
    if with_files:
        (folder / "files" / "sub").mkdir(parents=True)
        lines = ["corpus-id\tpath"]
        for doc_id, (title, text) in DOCS.items():
            (folder / "files" / "sub" / f"{title}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
            lines.append(f"{doc_id}\tfiles/sub/{title}.md")
        (folder / "file_map.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": t, "text": x}) + "\n"
                                                     for k, (t, x) in DOCS.items()))
    return folder


def test_eval_reports_every_mode_and_reuses_its_index(tmp_path):
    dataset = _dataset(tmp_path / "tiny")
    messages: list[str] = []
    with Engine(tmp_path / "data") as engine:
        report = run_eval(engine, dataset, ["dense", "bm25", "hybrid", "hybrid+rerank"], model="minilm", log=messages.append)
        assert report["documents"] == 6 and report["queries"] == 4 and "MiniLM" in report["model"]
        for mode in ("dense", "bm25", "hybrid"):
            metrics = report[mode]
            assert set(metrics) == {"ndcg@10", "recall@10", "recall@100", "mrr@10", "p50_ms", "p95_ms"}
            assert 0.5 < metrics["ndcg@10"] <= 1.0
            # BM25 finds only documents sharing a word with the query; the dense leg sees all six.
            assert metrics["recall@100"] == (0.875 if mode == "bm25" else 1.0)
        assert "skipped" in report["hybrid+rerank"]
        messages.clear()
        again = run_eval(engine, dataset, ["hybrid"], model="minilm", log=messages.append)
        assert again["hybrid"]["ndcg@10"] == report["hybrid"]["ndcg@10"]
        assert any("index ready: 0 files" in m for m in messages)
        assert engine.roots() == []  # the user's own roots are untouched


@pytest.mark.slow  # a second eval index; the one above covers the stage
def test_eval_indexes_real_files_from_a_file_map(tmp_path):
    dataset = _dataset(tmp_path / "withfiles", with_files=True)
    with Engine(tmp_path / "data") as engine:
        report = run_eval(engine, dataset, ["hybrid"], model="minilm")
        assert report["documents"] == 6 and report["hybrid"]["recall@100"] == 1.0
        assert report["hybrid"]["mrr@10"] > 0.5


def test_eval_explains_a_bad_folder(tmp_path):
    with Engine(tmp_path / "data") as engine, pytest.raises(EvalError, match="qrels"):
        run_eval(engine, tmp_path, ["dense"])


def test_identical_documents_each_count_where_the_result_lists_its_copies(tmp_path):
    """Search shows identical files once, with their other places; the eval ranks every copy, right
    after the one shown, so two judged copies of one text are both found."""
    folder = tmp_path / "copies"
    folder.mkdir()
    (folder / "qrels").mkdir()
    title, text = DOCS["d3"]
    corpus = {**DOCS, "d3copy": (title, text)}
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": t, "text": x}) + "\n"
                                                 for k, (t, x) in corpus.items()))
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q2", "text": QUERIES["q2"]}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq2\td3\t1\nq2\td3copy\t1\n")
    with Engine(tmp_path / "data") as engine:
        report = run_eval(engine, folder, ["bm25"], model="minilm")
        assert report["bm25"]["recall@10"] == 1.0 and report["bm25"]["ndcg@10"] == 1.0
