"""The retrieval-quality table: every dev set x bundled model x mode, through `sensetree eval`.

    python bench/quality_tables.py --models minilm,e5 [--sets scifact,nfcorpus,...] [--baseline DIR] [--out FILE]

Modes: dense, bm25, hybrid-rrf (the seed's plain RRF on chunks) and hybrid (retrieval.fusion =
weighted). Each set is indexed once per model under the data dir's eval cache (SENSETREE_HOME),
so a rerun only pays for the queries. ``--baseline DIR`` reads earlier reports saved as
``base-<set>-<model>.json`` (the same figures from another build) and prints them beside.
Published nDCG@10 figures are from /work/shared/eval/README.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sensetree.config import default_data_dir  # noqa: E402
from sensetree import Engine  # noqa: E402
from sensetree.eval.runner import run_eval  # noqa: E402

EVAL = Path("/work/shared/eval")
SETS = ("scifact", "nfcorpus", "legalquad-de", "xquad/th", "xquad/ru", "xquad/ar", "xquad/hi", "xquad/vi")
MODES = ("dense", "bm25", "hybrid-rrf", "hybrid")
PUBLISHED = {  # nDCG@10, test split (shared/eval/README.md)
    "scifact": "BM25 0.665-0.687; mE5-small 0.676; bge-small 0.713",
    "nfcorpus": "BM25 0.321-0.325; mE5-small 0.311; bge-base 0.374",
    "legalquad-de": "BM25 0.768 (0.842 NFC); mE5-small 0.478",
    "xquad/th": "mE5-small 0.947", "xquad/hi": "mE5-small 0.954", "xquad/ru": "BM25 0.871",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="minilm,e5")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--split", default="test")
    parser.add_argument("--baseline", type=Path, help="folder of base-<set>-<model>.json reports to print beside")
    parser.add_argument("--out", type=Path, help="also write every report as JSON here")
    args = parser.parse_args()

    reports = []
    print("| set | model | mode | nDCG@10 | R@100 | MRR@10 | p50 ms | before: nDCG@10 | R@100 | MRR@10 | p50 ms | published |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model in args.models.split(","):
        for name in args.sets.split(","):
            with Engine(default_data_dir()) as engine:
                report = run_eval(engine, EVAL / name, list(MODES), split=args.split, model=model,
                                  log=lambda m: print(f"  [{name} {model}] {m}", file=sys.stderr))
            reports.append(report)
            before = {}
            if args.baseline:
                old = args.baseline / f"base-{name.replace('/', '-')}-{model}.json"
                before = json.loads(old.read_text()) if old.exists() else {}
            for mode in MODES:
                now = report[mode]
                was = before.get("hybrid" if mode == "hybrid-rrf" else mode, {}) if mode != "hybrid" else {}
                cells = [f"{now[k]:.3f}" for k in ("ndcg@10", "recall@100", "mrr@10")] + [f"{now['p50_ms']:.0f}"]
                old_cells = ([f"{was[k]:.3f}" for k in ("ndcg@10", "recall@100", "mrr@10")] + [f"{was['p50_ms']:.0f}"]
                             if was else ["—"] * 4)
                print(f"| {name} | {model} | {mode} | " + " | ".join(cells + old_cells)
                      + f" | {PUBLISHED.get(name, '—') if mode == 'dense' else ''} |", flush=True)
    if args.out:
        args.out.write_text(json.dumps(reports, indent=1))


if __name__ == "__main__":
    main()
