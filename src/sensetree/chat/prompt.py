"""The prompts, and the arithmetic that keeps them inside the model's context window and its speed.

The system prompt never changes within a conversation (no excerpt, no scope in it), so a local
server reads it once and serves it from its prompt cache afterwards; the excerpts travel in the
user's message, after it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import paths
from .tools import Source

CHARS_PER_TOKEN = 3.0  # until a server says: below the average of English and code for most tokenizers
MIN_EXCERPT_CHARS = 200  # below this an excerpt says nothing: drop it instead

RULES = """You are SenseTree's assistant. You answer questions about the user's own files.
- Answer from the excerpts of the user's files that come with the question{tools}.
- Answer in one or two sentences, in the language of the question.
- If the excerpts do not contain the answer, say that the files do not say; never invent a file or a fact.
- You may cite an excerpt by its number in square brackets."""

TOOLS_CLAUSE = (
    " or on what your tools return. When the excerpts are not enough, call search_files with other "
    "words, read_file to read a whole file, or list_directory"
)

ANSWER_NOW = (
    "Answer my question now with what you have found, citing the excerpts by their number like [1]. Do not call a tool."
)


def system_prompt(tools: bool) -> str:
    return RULES.format(tools=TOOLS_CLAUSE if tools else "")


def header(n: int, path: str, roots: list[str], location: str = "") -> str:
    """``[n]``, the file's path inside its root (short: every token counts; what read_file takes) and
    where in the file the excerpt is (``p. 12``)."""
    root = next((r for r in roots if paths.is_under(path, r)), None)
    where = path[len(root) :].lstrip("/\\") if root else path
    return f"[{n}] {where or paths.name_of(path)}" + (f" {location}" if location else "")


def user_prompt(question: str, excerpts: list[tuple[Source, str]], scope: str | None, roots: list[str]) -> str:
    parts = [f"I am looking at the folder {scope}; stay inside it."] if scope else []
    if excerpts:
        parts.append(
            "Excerpts from my files:\n\n"
            + "\n\n".join(f"{header(s.n, s.path, roots, s.location_label)}\n{text}" for s, text in excerpts)
        )
    else:
        parts.append("No file matched the question.")
    parts.append(f"Question: {question}")
    return "\n\n".join(parts)


@dataclass
class PromptMeter:
    """What a server's reports (llama.cpp's ``timings``) say about the prompts it reads: how fast it
    reads them, and how many characters make one of its tokens. Until it says, the speed is unknown
    and the rough average stands. Smoothed, so that one slow moment does not halve the excerpts."""

    tokens_per_s: float | None = None
    chars_per_token: float = CHARS_PER_TOKEN
    MIN_TOKENS = 48  # shorter prompts measure the overhead, not the speed

    def observe(self, chars: int, prompt_tokens: int | None, cached_tokens: int | None, per_s: float | None) -> None:
        """One request of ``chars`` characters of messages (and tools): the tokens the server read
        and took from its cache, and its reading speed."""
        if prompt_tokens and per_s and prompt_tokens >= self.MIN_TOKENS:
            self.tokens_per_s = per_s if self.tokens_per_s is None else (self.tokens_per_s + per_s) / 2
        total = (prompt_tokens or 0) + (cached_tokens or 0)
        if total >= self.MIN_TOKENS and chars:  # the template's own tokens count too: it errs on the safe side
            self.chars_per_token = min(CHARS_PER_TOKEN, chars / total)

    def tokens_within(self, seconds: float) -> int | None:
        """Prompt tokens the server reads in ``seconds``; None when its speed is unknown or no target is set."""
        if self.tokens_per_s is None or seconds <= 0:
            return None
        return int(self.tokens_per_s * seconds)

    def tokens(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)

    def chars(self, n_tokens: int) -> int:
        return max(0, int(n_tokens * self.chars_per_token))


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
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"
