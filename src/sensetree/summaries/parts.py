"""A whole text in parts that fit a model's context window, each knowing which pages it covers.

``split_parts`` cuts the text into consecutive parts of at most ``max_chars`` characters: together
they are the whole text, in order. It cuts at a page (slide, sheet...) boundary when one lies in the
second half of the window, else at a paragraph, a line, a sentence or a space, and only mid-word
when the text offers nothing else. Each part says where it comes from: "p. 3", "pp. 3–5", "slide 2",
or "part 2 of 7" when the file has no pages. Pure text work, no model: the summariser
(``work.py``) sends each part to the model.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..ingest.extract.base import Span

_BREAKS = (re.compile(r"\n\s*\n"), re.compile(r"\n"), re.compile(r"[.!?][)\]\"'»”]?\s"), re.compile(r"\s"))
SPLIT_FLOOR = 0.5  # a cut is looked for in the window's second half: parts are never much below the size


@dataclass(frozen=True)
class TextPart:
    n: int  # 1-based
    of: int  # how many parts the text has
    start: int  # characters start to end (exclusive) of the text
    end: int
    text: str
    locations: tuple[dict[str, Any], ...] = field(default=())  # the pages (slides...) it overlaps, in order

    @property
    def label(self) -> str:
        """Where the part is, for people: 'pp. 3–5', 'slide 2', or 'part 2 of 7' without pages."""
        return place_label(list(self.locations)) or f"part {self.n} of {self.of}"


def place_label(locations: list[dict[str, Any]]) -> str:
    """'p. 3', 'pp. 3–5', 'slide 2', 'slides 2–4', 'sheets Q3, Q4'; '' for none (as search results say it)."""
    if not locations:
        return ""
    kind = next(iter(locations[0]))
    values = list(dict.fromkeys(loc[kind] for loc in locations if kind in loc))
    if all(isinstance(v, int) for v in values):
        low, high = min(values), max(values)
        if kind == "page":
            return f"p. {low}" if low == high else f"pp. {low}–{high}"
        return f"{kind} {low}" if low == high else f"{kind}s {low}–{high}"
    names = [str(v) for v in values]
    return f"{kind} {names[0]}" if len(names) == 1 else f"{kind}s {', '.join(names)}"


def split_parts(text: str, spans: Sequence[Span], max_chars: int) -> list[TextPart]:
    """``text`` in consecutive parts of at most ``max_chars`` characters (see the module)."""
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    bounds = sorted({s.end for s in spans} | {s.start for s in spans})
    cuts = []
    start = 0
    while start < len(text):
        end = len(text) if len(text) - start <= max_chars else _cut(text, bounds, start, start + max_chars)
        cuts.append((start, end))
        start = end
    parts = []
    for n, (start, end) in enumerate(cuts, start=1):
        parts.append(TextPart(n, len(cuts), start, end, text[start:end], _locations(text, spans, start, end)))
    return parts


def _cut(text: str, bounds: list[int], start: int, limit: int) -> int:
    """Where the part from ``start`` ends, at most at ``limit``: the best break in the window's second half."""
    floor = start + max(1, int((limit - start) * SPLIT_FLOOR))
    i = bisect.bisect_right(bounds, limit) - 1
    if i >= 0 and bounds[i] >= floor and bounds[i] > start:
        return bounds[i]
    window = text[floor:limit]
    for pattern in _BREAKS:
        last = None
        for last in pattern.finditer(window):  # noqa: B007 (the loop keeps the last match)
            pass
        if last is not None:
            return floor + last.end()
    return limit


def _locations(text: str, spans: Sequence[Span], start: int, end: int) -> tuple[dict[str, Any], ...]:
    """The locations of the spans this part has words of (a page it only touches with blanks is not one)."""
    found = []
    for span in spans:
        low, high = max(start, span.start), min(end, span.end)
        if low < high and text[low:high].strip() and span.location not in found:
            found.append(dict(span.location))
    return tuple(found)


def worth_reading(parts: list[TextPart]) -> list[TextPart]:
    """The parts with words in them, renumbered (a stretch of blanks costs a model call and says nothing)."""
    kept = [p for p in parts if p.text.strip()]
    return [TextPart(n, len(kept), p.start, p.end, p.text, p.locations) for n, p in enumerate(kept, start=1)]
