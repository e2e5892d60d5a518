"""The system prompt, and the arithmetic that keeps it inside the model's context window."""

from __future__ import annotations

import math

from .tools import Source

CHARS_PER_TOKEN = 3.5  # a rough average for English and code; errs on the safe side for most tokenizers
MIN_EXCERPT_CHARS = 200  # below this an excerpt says nothing: drop it instead

RULES = """You are SenseTree's assistant. You answer questions about the user's own files.
- Base every statement on the numbered excerpts below{tools}.
- Cite the excerpt that supports a statement with its number in square brackets, like [1].
- If nothing you were given answers the question, say so; never invent a file or a fact.
- Answer concisely, in the language of the question."""

TOOLS_CLAUSE = (" or on what your tools return. When the excerpts are not enough, call search_files with other "
                "words, read_file to read a whole file, or list_directory")

ANSWER_NOW = ("Answer my question now with what you have found, citing the excerpts by their number like [1]. "
              "Do not call a tool.")


def tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def chars(n_tokens: int) -> int:
    return max(0, int(n_tokens * CHARS_PER_TOKEN))


def system_prompt(excerpts: list[tuple[Source, str]], scope: str | None, tools: bool) -> str:
    parts = [RULES.format(tools=TOOLS_CLAUSE if tools else "")]
    if scope:
        parts.append(f"The user is looking at the folder {scope}; stay inside it.")
    if excerpts:
        parts.append("Excerpts from the user's files:\n\n" + "\n\n".join(
            f"[{source.n}] {source.name} — {source.path}\n{text}" for source, text in excerpts))
    else:
        parts.append("No file matched the question.")
    return "\n\n".join(parts)


def fit(texts: list[str], budget: int) -> list[str]:
    """Cut texts (best first) to ``budget`` characters in all: short ones stay whole, the rest share
    what is left evenly, and the lowest-ranked are dropped when a share would be too small to say anything."""
    n = len(texts)
    while n and budget // n < MIN_EXCERPT_CHARS and sum(map(len, texts[:n])) > budget:
        n -= 1
    out = [""] * n
    remaining = budget
    for k, i in enumerate(sorted(range(n), key=lambda i: len(texts[i]))):
        share = remaining // (n - k)
        out[i] = texts[i] if len(texts[i]) <= share else cut(texts[i], share)
        remaining -= len(out[i])
    return out


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:max(0, limit - 1)].rstrip() + "…"
