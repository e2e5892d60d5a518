"""Split extracted text into chunks (SPEC §2): paragraphs, then sentences, then hard windows.

Units are packed greedily up to ``size`` characters. Each new chunk starts with the tail
of the previous one (``overlap`` characters, capped at half the size) cut to begin on a
word, so a fact that straddles a boundary is whole in at least one chunk. A chunk may
exceed ``size`` by at most the overlap.
"""

from __future__ import annotations

import re
import unicodedata

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def normalize_text(text: str) -> str:
    """NFC, Unix newlines, no NULs: the one form every stage sees."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    return unicodedata.normalize("NFC", text)


def _hard_windows(text: str, size: int) -> list[str]:
    """Cut an over-long sentence into windows, preferring the last space in each window."""
    windows = []
    while len(text) > size:
        cut = text.rfind(" ", size // 2, size + 1)
        cut = cut if cut > 0 else size
        windows.append(text[:cut].strip())
        text = text[cut:].lstrip()
    if text:
        windows.append(text)
    return windows


def _units(text: str, size: int) -> list[tuple[str, bool]]:
    """(unit, starts_paragraph) pairs, every unit at most ``size`` characters."""
    units: list[tuple[str, bool]] = []
    for paragraph in _PARAGRAPH_BREAK.split(text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if len(paragraph) <= size:
            units.append((paragraph, True))
            continue
        first = True
        for sentence in _SENTENCE_END.split(paragraph):
            sentence = sentence.strip()
            if not sentence:
                continue
            for piece in _hard_windows(sentence, size) if len(sentence) > size else [sentence]:
                units.append((piece, first))
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


def chunk_text(text: str, size: int = 1000, overlap: int = 200) -> list[str]:
    """The chunks of ``text``, in order. Empty or blank text gives no chunks."""
    size = max(size, 50)
    overlap = max(0, min(overlap, size // 2))
    chunks: list[str] = []
    current = ""
    for unit, new_paragraph in _units(text.strip(), size):
        joiner = "\n\n" if new_paragraph else " "
        if not current:
            current = unit
        elif len(current) + len(joiner) + len(unit) <= size:
            current = current + joiner + unit
        else:
            chunks.append(current)
            tail = _overlap_tail(current, overlap)
            current = f"{tail} {unit}" if tail else unit
    if current:
        chunks.append(current)
    return chunks


MIN_OVERLAP = 16  # a shorter match between a chunk's end and the next one's start is a coincidence


def rejoin(chunks: list[str], limit: int) -> str:
    """The start of the text the chunks were cut from, up to ``limit`` characters: each chunk
    without the overlap it repeats from the one before. For the sense, which reads a file's start."""
    text = chunks[0] if chunks else ""
    for chunk in chunks[1:]:
        if len(text) >= limit:
            break
        repeated = next((n for n in range(min(len(text), len(chunk) // 2 + 1), MIN_OVERLAP - 1, -1)
                         if text.endswith(chunk[:n])), 0)
        text += (" " if repeated else "\n\n") + chunk[repeated:].lstrip()
    return text[:limit]
