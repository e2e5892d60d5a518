"""What a chunk's stored text is made of (design §1.4): chunk 0 carries ``[type] sense`` on a line of its
own before a blank line and the chunk itself, so the sense is keyword-searchable; later chunks are
the raw text. Writing it (ingest) and reading past it (snippets, previews) follow this one rule."""

from __future__ import annotations


def sense_head(sense: str, doc_type: str) -> str:
    """What chunk 0's stored text starts with: ``[type] sense`` on one line, then a blank line."""
    return f"[{doc_type}] {' '.join(sense.split())}".rstrip() + "\n\n"


def without_head(stored: str) -> str:
    """Chunk 0's own text, without the ``[type] sense`` line the index keeps in front of it."""
    if stored.startswith("[") and "\n\n" in stored:
        return stored.split("\n\n", 1)[1]
    return stored


def body(stored: str, chunk_index: int) -> str:
    """A chunk's own words, whichever chunk it is."""
    return without_head(stored) if chunk_index == 0 else stored
