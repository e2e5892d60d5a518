"""What a result shows: the document's own words around the match, and where in the file they are.

A snippet is cut from the chunk's own text (never the ``[type] sense`` line chunk 0 carries for
retrieval), centred on the sentence that shares the most words with the query, so that a hit
deep in a chunk shows the words that matched rather than the chunk's first line.
"""

from __future__ import annotations

import json
import re

from ..store.stored_text import body
from ..store.terms import match_keys

SNIPPET_CHARS = 240
LEAD_CHARS = 60  # context kept before the best sentence
_SENTENCE = re.compile(r"(?<=[.!?;:])\s+|\n+")


def snippet(stored: str, chunk_index: int, query: str = "") -> str:
    """About SNIPPET_CHARS characters of the chunk's own text, whitespace collapsed, around the best match."""
    text = " ".join(body(stored, chunk_index).split())
    if len(text) <= SNIPPET_CHARS:
        return text
    start = _best_sentence_start(text, match_keys(query)) - LEAD_CHARS  # a little context before it
    start = min(max(start, 0), len(text) - SNIPPET_CHARS)  # never past the end
    if start > 0:
        start = text.rfind(" ", 0, start) + 1  # from the start of a word
    end = start + SNIPPET_CHARS
    if end < len(text) and " " in text[start + SNIPPET_CHARS // 2 : end]:
        end = text.rfind(" ", start, end)  # to the end of a word
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")


def _best_sentence_start(text: str, query: set[str]) -> int:
    if not query:
        return 0
    best, best_start, start = 0, 0, 0
    for match in [*_SENTENCE.finditer(text), None]:
        end = match.start() if match else len(text)
        hits = len(query & match_keys(text[start:end]))
        if hits > best:
            best, best_start = hits, start
        if match:
            start = match.end()
    return best_start


def place(location: str | None) -> tuple[dict | None, str]:
    """(where the chunk starts, a label for people: 'p. 12', 'pp. 12–13', 'slide 3', 'sheet Q3')."""
    if not location:
        return None, ""
    try:
        places = [p for p in json.loads(location) if isinstance(p, dict) and p]
    except ValueError:
        return None, ""
    if not places:
        return None, ""
    kind = next(iter(places[0]))
    values = list(dict.fromkeys(p[kind] for p in places if kind in p))
    if kind == "page":
        label = f"p. {values[0]}" if len(values) == 1 else f"pp. {values[0]}–{values[-1]}"
    else:
        label = f"{kind} {values[0]}" if len(values) == 1 else f"{kind}s {values[0]}–{values[-1]}"
    return places[0], label
