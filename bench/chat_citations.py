"""Chat citations: does the assistant's answer cite the document that holds the answer?

    python bench/chat_citations.py [--others 200] [--max-tokens 128] [--context 4096] [--model NAME] [--base-url URL]

Writes the 20 SciFact documents named in ``chat_citations.jsonl`` plus ``--others`` more (one
text file each: title, blank line, text), indexes them with MiniLM, then asks each question once
on the configured chat model (the embedded Qwen2.5-Coder-0.5B by default) and reports:
- in sources: the answering document is among the answer's sources (seeded or found by a tool);
- cited: the answer marks it with its ``[n]``;
- time to first token and tokens per second of the answer.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from sensetree.chat import ChatError, connect
from sensetree.engine import Engine

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared" / "eval"


def write_docs(corpus: Path, folder: Path, wanted: set[str], others: int) -> None:
    folder.mkdir(parents=True)
    with corpus.open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            if doc["_id"] in wanted or others > 0:
                others -= doc["_id"] not in wanted
                (folder / f"{doc['_id']}.txt").write_text(f"{doc.get('title', '')}\n\n{doc['text']}\n",
                                                          encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, default=HERE / "chat_citations.jsonl")
    parser.add_argument("--corpus", type=Path, default=SHARED / "scifact" / "corpus.jsonl")
    parser.add_argument("--others", type=int, default=200, help="unrelated documents indexed beside the 20")
    parser.add_argument("--max-tokens", type=int, default=128, help="longest answer (keeps the run short)")
    parser.add_argument("--context", type=int, default=4096, help="chat.context_window (smaller is faster)")
    parser.add_argument("--model", default="", help="chat.model (default: the embedded Qwen2.5-Coder-0.5B)")
    parser.add_argument("--base-url", default="", help="chat.base_url (default: the embedded model)")
    args = parser.parse_args()

    questions = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "scifact"
        write_docs(args.corpus, tree, {q["doc_id"] for q in questions}, args.others)
        engine = Engine(Path(tmp) / "data")
        engine.set_setting("embedding.model", "minilm")
        engine.set_setting("retrieval.rerank", False)
        for key, value in (("chat.model", args.model), ("chat.base_url", args.base_url),
                           ("chat.max_tokens", args.max_tokens), ("chat.context_window", args.context)):
            engine.set_setting(key, value)
        engine.add_root(str(tree))
        started = time.perf_counter()
        engine.index()
        print(f"indexed {len(os.listdir(tree))} documents in {time.perf_counter() - started:.0f} s")

        rows = []
        with connect(engine) as backend:
            print(f"model: {backend.label}, context {backend.context_window} tokens, max {args.max_tokens} tokens")
            for q in questions:
                target = os.path.normpath(str(tree / f"{q['doc_id']}.txt"))
                began = time.perf_counter()
                try:
                    result = backend.agent(engine).answer(q["question"])
                except ChatError as exc:
                    print(f"  error on {q['doc_id']}: {exc}")
                    continue
                listed = {s.path for s in result.sources}
                cited = {s.path for s in result.sources if s.cited}
                tools = [s.kind for s in result.steps if s.kind in ("search_files", "read_file", "list_directory")]
                rows.append({"in_sources": target in listed, "cited": target in cited, "ttft": result.ttft_s,
                             "tps": result.tokens_per_s, "seconds": time.perf_counter() - began, "tools": len(tools)})
                r = rows[-1]
                print(f"  {q['doc_id']:>10} sources {'yes' if r['in_sources'] else 'NO ':3} cited "
                      f"{'yes' if r['cited'] else 'no ':3} ttft {r['ttft'] or 0:5.1f} s  "
                      f"{r['tps'] or 0:5.1f} tok/s  tools {r['tools']}  {r['seconds']:5.1f} s | "
                      f"{result.text[:90].replace(chr(10), ' ')}")
        engine.close()

    n = len(rows)
    if not n:
        return
    ttfts = [r["ttft"] for r in rows if r["ttft"]]
    rates = [r["tps"] for r in rows if r["tps"]]
    print(f"\n{n} questions: answering document in sources {sum(r['in_sources'] for r in rows)}/{n}, "
          f"cited with [n] {sum(r['cited'] for r in rows)}/{n}, tool calls {sum(r['tools'] for r in rows)}")
    print(f"time to first token: median {statistics.median(ttfts):.1f} s (min {min(ttfts):.1f}, max {max(ttfts):.1f}); "
          f"tokens/s: median {statistics.median(rates):.1f}; "
          f"whole answer: median {statistics.median(r['seconds'] for r in rows):.1f} s")


if __name__ == "__main__":
    main()
