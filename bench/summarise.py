"""The time to summarise a 20-page PDF, on the embedded model and on an OpenAI-compatible server.

    python bench/summarise.py [--model smollm2-135m-instruct] [--pages 20] [--context 4096] [--threads 2]

The PDF is the tests' generated report (``tests/support/report.py``: one topic per page, about
1,400 characters a page). Two runs of the summarise handler (``engine.run(SummariseParams(...))``), as ``sensetree ask --file`` runs it:

- embedded: ``chat.model`` names the model, the engine starts it itself (its start-up is counted);
- endpoint: a llama.cpp server started here with the product's ``LocalServer`` (as a user would run
  Ollama, LM Studio or llama-server), ``chat.base_url`` pointing at it, as a user configures one.

Printed per run: seconds in all, parts, seconds per part, model calls, the summary's length and
how many of its notes it cites. One run each: the figures move with the machine's load.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sensetree import Engine  # noqa: E402
from sensetree.models.local_llm import LocalServer, model_file, pick_runtime  # noqa: E402
from sensetree import SummariseParams  # noqa: E402
from tests.support.report import write_report  # noqa: E402
from sensetree import AddRootParams, SetParams


def run(engine: Engine, pdf: Path, label: str) -> dict:
    steps = []
    began = time.perf_counter()
    summary = engine.run(SummariseParams(str(pdf)), on_progress=steps.append)
    seconds = time.perf_counter() - began
    cited = len({int(n) for n in re.findall(r"\[(\d+)\]", summary.summary)})
    row = {"run": label, "model": summary.model, "seconds": round(seconds, 1), "parts": summary.parts,
           "s_per_part": round(seconds / max(summary.parts, 1), 1), "notes": len(summary.notes), "cited": cited,
           "summary_chars": len(summary.summary), "pages": [n.where for n in summary.notes]}
    print(f"{label:9} {seconds:7.1f} s  {summary.parts} parts ({row['s_per_part']} s a part, the whole included)  "
          f"{cited}/{len(summary.notes)} notes cited  {len(summary.summary)} chars  on {summary.model}", flush=True)
    print(f"          parts: {', '.join(row['pages'])}", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        (base / "docs").mkdir()
        pdf = write_report(base / "docs" / "report.pdf", pages=args.pages)
        engine = Engine(base / "data")
        engine.run(AddRootParams(str(base / "docs")))
        for key, value in (("chat.model", args.model), ("chat.context_window", args.context),
                           ("chat.threads", args.threads)):
            engine.run(SetParams(key, value))
        print(f"{args.pages}-page PDF, {pdf.stat().st_size // 1024} KB; n_ctx {args.context}, {args.threads} threads")
        try:
            run(engine, pdf, "embedded")
            gguf = model_file(args.model, engine.models_dir)
            with LocalServer(gguf, args.model, pick_runtime(""), n_ctx=args.context, threads=args.threads) as server:
                engine.run(SetParams("chat.base_url", server.url))
                run(engine, pdf, "endpoint")
        finally:
            engine.close()


if __name__ == "__main__":
    main()
