"""The seed: before the first model call the question is searched (top 6, the chat's scope) and the
best sentences of its excerpts go into the user's message, so that even a model that cannot call
tools answers from the user's files.
"""

from __future__ import annotations

from typing import Callable

from ..engine import Engine
from ..ingest.sense import excerpt_sense
from ..operations import SearchParams
from ..search.types import SearchResult
from . import prompt
from .budget import ExcerptBudget, Pick
from .evidence import coverage
from .tools import Source, excerpt

SEED_LIMIT = 6
SEED_EXCERPT_CHARS = 1200
ENOUGH_COVERAGE = 0.5  # share of the question's words the excerpts must show for an answer without tools

Say = Callable[[str, str], None]  # a step for the user: kind, text


def search(engine: Engine, question: str, scope: str | None, say: Say) -> list[SearchResult]:
    """The question's excerpts, best first; the search's notices and what was searched are told as steps."""
    response = engine.run(SearchParams(question, scope, SEED_LIMIT))
    for notice in response.notices:
        say("notice", notice)
    where = f" in {scope}" if scope else ""
    say("seed", f"searching: {question}{where} ({len(response.results)} excerpts)")
    return response.results


def excerpt_text(engine: Engine, result: SearchResult) -> str:
    """The chunk as stored, lines kept, less a sense that only repeats the text's start (the fallback):
    the same words twice would take the place of a sentence that answers."""
    text = excerpt(engine, result, SEED_EXCERPT_CHARS, flat=False)
    head, blank, body = text.partition("\n\n")
    if blank and head.startswith("[") and head.partition("] ")[2] == excerpt_sense(body).rstrip():
        return body
    return text


def header_chars(results: list[SearchResult], next_number: int, roots: list[str]) -> int:
    """Characters the excerpts' "[n] path" lines take in the message, each counted with the next source's number."""
    return sum(len(prompt.header(next_number, r.path, roots, r.location_label)) + 2 for r in results)


def fit_excerpts(texts: list[str], budget: ExcerptBudget, pick: Pick) -> list[str]:
    """The excerpts' best sentences for ``budget.chars``, within ``budget.window``; the weakest
    excerpts go when even their best sentences do not fit."""
    return prompt.fit(pick(texts, max(0, budget.chars)), max(0, budget.window))


def cut_note(texts: list[str], fitted: list[str], budget: ExcerptBudget) -> str | None:
    """What the user is told when the excerpts were cut to fit, None when they went whole."""
    before, after = sum(map(len, texts)), sum(map(len, fitted))
    if after >= before:
        return None
    kept = f", {len(texts) - len(fitted)} dropped" if len(fitted) < len(texts) else ""
    return f"excerpts cut to their best sentences for {budget.reason} ({before} → {after} characters{kept})"


def shows_the_question(question: str, excerpts: list[tuple[Source, str]]) -> bool:
    """Whether the excerpts (with their paths) show enough of the question's words to answer without tools."""
    seen = " ".join(f"{s.path} {text}" for s, text in excerpts)
    return coverage(question, seen) >= ENOUGH_COVERAGE
