"""The embedded model's runtimes side by side: xllamacpp (prebuilt) and llama-cpp-python (compiled).

    python bench/chat_runtimes.py [--model NAME] [--threads 2] [--prompt-docs 6]

Each installed runtime serves the same GGUF through the product's own ``LocalServer``. Then, on
the same prompt (SciFact abstracts from /work/shared/eval, about 1,500 tokens, and a question):
start-up time, time to first token cold and with the prompt's first part cached, prompt and
generated tokens per second, and what the agent needs: streaming, structured tool calls, stop
sequences, the context size reported by the server, resident memory, and installed size.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import time
from pathlib import Path

import httpx
import psutil

from sensetree.models.local_llm import DEFAULT_MODEL, RUNTIMES, LocalServer, model_file, runtime_installed

HERE = Path(__file__).resolve().parent
SHARED = next((p / "shared" / "eval" for p in HERE.parents if (p / "shared" / "eval").is_dir()),
              HERE.parents[1] / "shared" / "eval")
PACKAGES = {"xllamacpp": ["xllamacpp"],
            "llama-cpp-python": ["llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context",
                                 "pydantic_settings", "diskcache", "jinja2"]}
TOOLS = [{"type": "function", "function": {"name": "search_files", "description": "Search the user's files.",
                                           "parameters": {"type": "object", "properties": {
                                               "query": {"type": "string"}}, "required": ["query"]}}}]


def stream(url: str, body: dict) -> dict:
    """One streamed chat completion, timed on the client."""
    began, first, last, pieces, calls, timings = time.perf_counter(), None, None, [], [], None
    with httpx.stream("POST", url + "/chat/completions", json={**body, "stream": True}, timeout=600) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                continue
            event = json.loads(line[5:])
            timings = event.get("timings") or timings
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    first, last = first or time.perf_counter(), time.perf_counter()
                    pieces.append(delta["content"])
                calls += delta.get("tool_calls") or []
    ttft = (first or time.perf_counter()) - began
    rate = (len(pieces) - 1) / (last - first) if first and last and last > first else None
    return {"ttft": ttft, "text": "".join(pieces), "pieces": len(pieces), "gen_tps": rate, "calls": calls,
            "timings": timings}


def size_mb(modules: list[str]) -> float:
    total = 0
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        for root, _, files in os.walk(spec.submodule_search_locations[0]):
            total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total / 1e6


def documents(n: int) -> str:
    with (SHARED / "scifact" / "corpus.jsonl").open(encoding="utf-8") as handle:
        docs = [json.loads(next(handle)) for _ in range(n)]
    return "\n\n".join(f"[{i + 1}] {d['title']}\n{d['text']}" for i, d in enumerate(docs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompt-docs", type=int, default=6, help="SciFact abstracts in the prompt")
    args = parser.parse_args()
    gguf = model_file(args.model, Path.home() / ".cache" / "sensetree-bench")
    text = documents(args.prompt_docs)
    system = "You answer questions about the user's files. Cite the excerpt by its number, like [1]."
    tokens_read = None
    print(f"model {args.model}, {args.threads} threads, prompt {len(text)} characters; "
          f"load {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    for name, runtime in RUNTIMES.items():
        if not runtime_installed(name):
            print(f"\n{name}: not installed")
            continue
        began = time.perf_counter()
        with LocalServer(gguf, args.model, runtime, n_ctx=4096, threads=args.threads) as server:
            started = time.perf_counter() - began
            url = server.url
            messages = [{"role": "system", "content": system},
                        {"role": "user", "content": f"{text}\n\nQuestion: what do these studies have in common?"}]
            cold = stream(url, {"messages": messages, "max_tokens": 96, "temperature": 0})
            tokens_read = (cold["timings"] or {}).get("prompt_n") or tokens_read
            again = [*messages[:1], {"role": "user", "content": f"{text}\n\nQuestion: which study has the most "
                                                                 "patients?"}]
            warm = stream(url, {"messages": again, "max_tokens": 32, "temperature": 0})
            tool = stream(url, {"messages": [{"role": "user", "content": "Find my invoices from March."}],
                                "tools": TOOLS, "tool_choice": "auto", "max_tokens": 64, "temperature": 0})
            stop = stream(url, {"messages": [{"role": "user", "content": "Count from 1 to 20, separated by commas."}],
                                "max_tokens": 80, "temperature": 0, "stop": ["7"]})
            props = httpx.get(url.removesuffix("/v1") + "/props", timeout=5)
            settings = props.json().get("default_generation_settings") or {} if props.status_code == 200 else {}
            n_ctx = settings.get("n_ctx")
            rss = psutil.Process(server._process.pid).memory_info().rss / 1e6
        prompt_tps = tokens_read / cold["ttft"] if tokens_read else None
        print(f"\n{name} (installed size {size_mb(PACKAGES[name]):.0f} MB)")
        print(f"  start-up {started:.1f} s; resident memory {rss:.0f} MB; context reported by /props: {n_ctx}")
        print(f"  cold prompt ({tokens_read or '?'} tokens): first token {cold['ttft']:.1f} s"
              + (f" = {prompt_tps:.0f} prompt tokens/s" if prompt_tps else "")
              + (f" (server: {cold['timings']['prompt_per_second']:.0f})" if cold["timings"] else ""))
        print(f"  same documents, new question: first token {warm['ttft']:.1f} s"
              + (f" ({warm['timings'].get('cache_n')} tokens from the cache)" if warm["timings"] else ""))
        print(f"  generation {cold['gen_tps'] or 0:.1f} tokens/s over {cold['pieces']} streamed pieces")
        call = json.dumps(tool["calls"][0]["function"]) if tool["calls"] else None
        print(f"  tool call: {'structured ' + call if call else 'as text: ' + repr(tool['text'][:80])}")
        print(f"  stop ['7']: {stop['text']!r}")
    print(f"load {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")


if __name__ == "__main__":
    main()
