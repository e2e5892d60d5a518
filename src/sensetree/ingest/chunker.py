"""Split extracted text into chunks (design §1.3): paragraphs, then sentences, then hard windows.

Units are packed greedily up to ``size`` characters. Each new chunk starts with the tail
of the previous one (``overlap`` characters, capped at half the size) cut to begin on a
word, so a fact that straddles a boundary is whole in at least one chunk. A chunk may
exceed ``size`` by at most the overlap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class Chunk:
    """A chunk's text, and where its own units sit in the text it was cut from (the overlap it
    repeats from the chunk before is not counted): ``text[start:end]`` holds them."""

    text: str
    start: int
    end: int


def _split(text: str, pattern: re.Pattern, offset: int) -> list[tuple[int, str]]:
    """The stripped, non-empty parts of ``text`` between matches of ``pattern``, with their offsets.

    A list built in one loop, not generators: a changelog has a paragraph every few lines, and this
    runs for each of them."""
    parts: list[tuple[int, str]] = []
    start = 0
    for match in pattern.finditer(text):
        part = text[start : match.start()]
        stripped = part.strip()
        if stripped:
            parts.append((offset + start + len(part) - len(part.lstrip()), stripped))
        start = match.end()
    part = text[start:]
    stripped = part.strip()
    if stripped:
        parts.append((offset + start + len(part) - len(part.lstrip()), stripped))
    return parts


def _hard_windows(text: str, size: int, offset: int) -> list[tuple[int, str]]:
    """Cut an over-long sentence into windows, preferring the last space in each window."""
    windows = []
    while len(text) > size:
        cut = text.rfind(" ", size // 2, size + 1)
        cut = cut if cut > 0 else size
        piece, rest = text[:cut], text[cut:]
        windows.append((offset + len(piece) - len(piece.lstrip()), piece.strip()))
        offset += cut + len(rest) - len(rest.lstrip())
        text = rest.lstrip()
    if text:
        windows.append((offset, text))
    return windows


def _units(text: str, size: int) -> list[tuple[int, str, bool]]:
    """(offset, unit, starts_paragraph), every unit at most ``size`` characters."""
    units: list[tuple[int, str, bool]] = []
    for start, paragraph in _split(text, _PARAGRAPH_BREAK, 0):
        if len(paragraph) <= size:
            units.append((start, paragraph, True))
            continue
        first = True
        for offset, sentence in _split(paragraph, _SENTENCE_END, start):
            for piece in _hard_windows(sentence, size, offset) if len(sentence) > size else [(offset, sentence)]:
                units.append((*piece, first))
                first = False
    return units


def _overlap_tail(chunk: str, overlap: int) -> str:
    """The last ``overlap`` characters, starting after the first space so no word is cut."""
    if overlap <= 0 or len(chunk) < overlap:  # whole chunk + joining space stays <= overlap
        return "" if overlap <= 0 else chunk
    tail = chunk[-overlap:]
    space = tail.find(" ")
    if space == -1:
        return ""
    return tail[space + 1 :].lstrip()


def chunk_spans(text: str, size: int = 1000, overlap: int = 200) -> list[Chunk]:
    """The chunks of ``text``, in order, each with where it sits. Empty or blank text gives no chunks."""
    size = max(size, 50)
    overlap = max(0, min(overlap, size // 2))
    chunks: list[Chunk] = []
    current, start, end = "", 0, 0
    for offset, unit, new_paragraph in _units(text, size):
        joiner = "\n\n" if new_paragraph else " "
        if not current:
            current, start = unit, offset
        elif len(current) + len(joiner) + len(unit) <= size:
            current = current + joiner + unit
        else:
            chunks.append(Chunk(current, start, end))
            tail = _overlap_tail(current, overlap)
            current, start = (f"{tail} {unit}" if tail else unit), offset
        end = offset + len(unit)
    if current:
        chunks.append(Chunk(current, start, end))
    return chunks


def chunk_text(text: str, size: int = 1000, overlap: int = 200) -> list[str]:
    """The chunks of ``text``, in order. Empty or blank text gives no chunks."""
    return [chunk.text for chunk in chunk_spans(text, size, overlap)]


MIN_OVERLAP = 16  # a shorter match between a chunk's end and the next one's start is a coincidence


def rejoin(chunks: list[str], limit: int) -> str:
    """The start of the text the chunks were cut from, up to ``limit`` characters: each chunk
    without the overlap it repeats from the one before (for the sense, which reads a file's
    start, and for a preview of text only the index holds, such as what OCR read)."""
    text = chunks[0] if chunks else ""
    for chunk in chunks[1:]:
        if len(text) >= limit:
            break
        reach = min(len(text), len(chunk) // 2 + 1)  # an overlap is at most half a chunk
        start = next(
            (i for i in range(len(text) - reach, len(text) - MIN_OVERLAP + 1) if chunk.startswith(text[i:])), None
        )
        text += (" " + chunk[len(text) - start :].lstrip()) if start is not None else "\n\n" + chunk
    return text[:limit]
