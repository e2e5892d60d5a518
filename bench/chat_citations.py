"""Chat citations: does the assistant answer right, quickly, and cite the document that holds the answer?

    python bench/chat_citations.py [--others 200] [--max-tokens 128] [--context 4096] [--model NAME]
                                   [--runtime NAME] [--first-token-s S] [--base-url URL] [--rows FILE]

Writes the 20 SciFact documents named in ``chat_citations.jsonl`` plus ``--others`` more (one
text file each: title, blank line, text; read from /work/shared/eval/scifact), indexes them with
MiniLM, then asks each question once on the configured chat model (the embedded
Qwen2.5-Coder-0.5B by default) and reports, per question and in all:
- prompt tokens the server read (and took from its cache), time to first token, tokens/s;
- in sources: the answering document is among the answer's sources (seeded or found by a tool);
- cited: the answer marks it with its ``[n]``, and whether the model wrote that marker itself;
- right: the answer contains the expected string(s) (``expected``: all of them; ``a|b``: either);
- for the questions whose answer is in no file (``doc_id`` null): whether the answer says so.
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
from sensetree.chat.agent import UNSUPPORTED
from sensetree.chat.citations import MARKER, abstains
from sensetree.config import DEFAULTS
from sensetree import Engine
from sensetree import AddRootParams, SetParams

HERE = Path(__file__).resolve().parent
# the eval sets live in shared/eval beside the checkout (or above a worktree of it)
SHARED = next((p / "shared" / "eval" for p in HERE.parents if (p / "shared" / "eval").is_dir()),
              HERE.parents[1] / "shared" / "eval")


def write_docs(corpus: Path, folder: Path, wanted: set[str], others: int) -> None:
    folder.mkdir(parents=True)
    with corpus.open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            if doc["_id"] in wanted or others > 0:
                others -= doc["_id"] not in wanted
                (folder / f"{doc['_id']}.txt").write_text(f"{doc.get('title', '')}\n\n{doc['text']}\n",
                                                          encoding="utf-8")


def contains(answer: str, expected: list[str]) -> bool:
    text = answer.lower()
    return all(any(alt.lower() in text for alt in item.split("|")) for item in expected)


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, default=HERE / "chat_citations.jsonl")
    parser.add_argument("--corpus", type=Path, default=SHARED / "scifact" / "corpus.jsonl")
    parser.add_argument("--others", type=int, default=200, help="unrelated documents indexed beside the 20")
    parser.add_argument("--max-tokens", type=int, default=128, help="longest answer (keeps the run short)")
    parser.add_argument("--context", type=int, default=4096, help="chat.context_window")
    parser.add_argument("--model", default="", help="chat.model (default: the embedded Qwen2.5-Coder-0.5B)")
    parser.add_argument("--runtime", default="", help="chat.runtime: xllamacpp or llama-cpp-python")
    parser.add_argument("--first-token-s", type=float, default=DEFAULTS["chat.first_token_s"][0],
                        help="chat.first_token_s (default: the setting's default)")
    parser.add_argument("--base-url", default="", help="chat.base_url (default: the embedded model)")
    parser.add_argument("--rows", type=Path, help="also write one JSON line per question here")
    parser.add_argument("--work", type=Path, help="index into this folder and reuse it on the next run "
                                                  "(default: a temporary folder)")
    args = parser.parse_args()

    questions = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        tree = work / "scifact"
        if not tree.exists():
            write_docs(args.corpus, tree, {q["doc_id"] for q in questions if q["doc_id"]}, args.others)
        engine = Engine(work / "data")
        engine.run(SetParams("embedding.model", "minilm"))
        engine.run(SetParams("retrieval.rerank", False))
        for key, value in (("chat.model", args.model), ("chat.base_url", args.base_url),
                           ("chat.runtime", args.runtime), ("chat.max_tokens", args.max_tokens),
                           ("chat.context_window", args.context), ("chat.first_token_s", args.first_token_s)):
            engine.run(SetParams(key, value))
        engine.run(AddRootParams(str(tree)))
        started = time.perf_counter()
        engine.index()
        print(f"indexed {len(os.listdir(tree))} documents in {time.perf_counter() - started:.0f} s; load {load()}")

        rows = []
        started = time.perf_counter()
        with connect(engine) as backend:
            speed = backend.meter.tokens_per_s
            print(f"model: {backend.label}, context {backend.context_window} tokens, max {args.max_tokens} tokens, "
                  f"started in {time.perf_counter() - started:.1f} s, reads {speed or 0:.0f} prompt tokens/s, "
                  f"first token target {engine.settings['chat.first_token_s']:g} s")
            for q in questions:
                target = os.path.normpath(str(tree / f"{q['doc_id']}.txt")) if q["doc_id"] else None
                began = time.perf_counter()
                try:
                    result = backend.agent(engine).answer(q["question"])
                except ChatError as exc:
                    print(f"  error on {q['doc_id']}: {exc}")
                    continue
                number = next((s.n for s in result.sources if s.path == target), None)
                written = {n for s in result.sentences for n in s.written}
                tools = [s.kind for s in result.steps if s.kind in ("search_files", "read_file", "list_directory")]
                rows.append({"doc_id": q["doc_id"], "in_sources": number is not None,
                             "cited": any(s.cited and s.path == target for s in result.sources),
                             "written": number in written, "right": contains(result.text, q["expected"]),
                             "abstains": abstains(result.text.replace(UNSUPPORTED, "")),
                             "flagged": not result.supported, "prompt_tokens": result.prompt_tokens,
                             "cached_tokens": result.cached_tokens, "ttft": result.ttft_s, "tps": result.tokens_per_s,
                             "seconds": time.perf_counter() - began, "tools": len(tools), "answer": result.text})
                r = rows[-1]
                if target:
                    verdict = (f"src {_yn(r['in_sources'])} cited {_yn(r['cited'])}"
                               f"{' (model)' if r['written'] else ' (attached)' if r['cited'] else ''} "
                               f"right {_yn(r['right'])}")
                else:
                    verdict = f"not in the files: says so {_yn(r['abstains'])} flagged {_yn(r['flagged'])}"
                print(f"  {q['doc_id'] or '-':>10} {verdict:44} prompt {r['prompt_tokens'] or 0:4} "
                      f"(+{r['cached_tokens'] or 0} cached) ttft {r['ttft'] or 0:5.1f} s {r['tps'] or 0:5.1f} tok/s "
                      f"tools {r['tools']} {r['seconds']:5.1f} s | {result.text[:80].replace(chr(10), ' ')}")
        engine.close()

    if args.rows:
        args.rows.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    summarize(rows)
    print(f"load {load()}")


def summarize(rows: list[dict]) -> None:
    answerable = [r for r in rows if r["doc_id"]]
    unanswerable = [r for r in rows if not r["doc_id"]]
    n = len(answerable)
    def count(key: str, among: list[dict]) -> int:
        return sum(bool(r[key]) for r in among)

    if n:
        attached = sum(r["cited"] and not r["written"] for r in answerable)
        print(f"\n{n} answerable questions: answering document in sources {count('in_sources', answerable)}/{n}, "
              f"cited with [n] {count('cited', answerable)}/{n} (the model's marker {count('written', answerable)}, "
              f"attached {attached}), expected answer {count('right', answerable)}/{n}, "
              f"says it does not know {count('abstains', answerable)}/{n}, flagged as unsupported "
              f"{count('flagged', answerable)}/{n}")
    if unanswerable:
        m = len(unanswerable)
        cites = sum(bool(MARKER.search(r["answer"])) for r in unanswerable)
        print(f"{m} questions not answered by the files: the model says it does not know "
              f"{count('abstains', unanswerable)}/{m}, the answer is flagged as unsupported "
              f"{count('flagged', unanswerable)}/{m}, either {sum(r['abstains'] or r['flagged'] for r in unanswerable)}/{m}, "
              f"cites a source anyway {cites}/{m}")
    for label, key in (("prompt tokens read", "prompt_tokens"), ("time to first token (s)", "ttft"),
                       ("tokens/s", "tps"), ("whole answer (s)", "seconds")):
        values = [r[key] for r in rows if r[key]]
        if values:
            print(f"{label}: median {statistics.median(values):.1f} (min {min(values):.1f}, max {max(values):.1f})")
    print(f"tool calls {sum(r['tools'] for r in rows)}")


def _yn(value: bool) -> str:
    return "yes" if value else "NO "


if __name__ == "__main__":
    main()
