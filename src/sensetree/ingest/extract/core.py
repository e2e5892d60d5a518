"""Assembling one file's text: read, pick the extractor, join its blocks, normalise once, bound the size."""

from __future__ import annotations

import contextlib
import stat
from collections.abc import Iterator
from pathlib import Path

from . import limits
from .base import Block, Extraction, ExtractionError, Job, NotText, Part, reason, human_size
from .context import context_descriptor
from .normalise import normalise
from .registry import BY_TYPE
from .sniff import sniff, type_from_name


def extract(path: Path, *, max_bytes: int = 50 * 1024 * 1024) -> Extraction:
    """Read `path` and return its text, or a context descriptor if nothing is readable.

    Raises `ExtractionError` for corrupt files of a known type and for files
    that cannot be read at all (permissions, vanished, not a regular file).
    """
    path = Path(path)
    doc_type = type_from_name(path.name)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ExtractionError(f"cannot read: {path}: not a regular file")
        if info.st_size > max_bytes:
            return _context_only(path, doc_type, f"file too large to index ({human_size(info.st_size)})")
        with path.open("rb") as file:
            # Read one byte past the limit: the file may have grown since stat().
            data = file.read(max_bytes + 1)
    except OSError as exc:
        raise ExtractionError(f"cannot read: {path}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        return _context_only(path, doc_type, "file too large to index")
    return _extract_data(data, path, doc_type)


def _extract_data(data: bytes, path: Path, doc_type: str | None) -> Extraction:
    if not data or data.isspace():
        return _context_only(path, doc_type, "empty file")
    doc_type = doc_type or sniff(data)
    if doc_type is None:
        return _context_only(path, None, "binary file")
    extractor = BY_TYPE[doc_type]
    try:
        text, truncated = _collect(extractor.read(data, Job(path.name)))
    except ExtractionError:
        raise
    except NotText:
        return _context_only(path, None, "binary file")
    except Exception as exc:  # libraries raise anything on bad input; the user needs one line
        raise ExtractionError(f"corrupt {extractor.label}: {reason(exc)}") from exc

    if not text.strip():
        if doc_type == "pdf":
            return _context_only(path, doc_type, "PDF with no text layer (probably scanned)")
        return _context_only(path, doc_type, f"{extractor.label} with no readable text")
    if truncated or len(text) > limits.MAX_TEXT_CHARS:
        note = f"[… text truncated: only the first {limits.MAX_TEXT_CHARS:,} characters were indexed]"
        text = f"{text[: limits.MAX_TEXT_CHARS]}\n\n{note}"
    return Extraction(text=text, doc_type=doc_type, context_only=False)


def _collect(blocks: Iterator[Block]) -> tuple[str, bool]:
    """Normalise each block and join them with blank lines, stopping once the text budget is spent.

    Normalising block by block gives the same text as normalising the joined whole, and
    keeps each block's offset in the final text known.
    """
    parts: list[str] = []
    size = 0
    with contextlib.closing(blocks):
        for block in blocks:
            text = normalise(block.text if isinstance(block, Part) else block)
            if not text:
                continue
            parts.append(text)
            size += len(text) + 2
            if size > limits.MAX_TEXT_CHARS:
                return "\n\n".join(parts), True
    return "\n\n".join(parts), False


def _context_only(path: Path, doc_type: str | None, kind: str) -> Extraction:
    return Extraction(text=context_descriptor(path, kind), doc_type=doc_type or "context", context_only=True)
