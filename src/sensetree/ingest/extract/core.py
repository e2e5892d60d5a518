"""Assembling one file's text: read, pick the extractor, join its blocks, normalise once, bound the size."""

from __future__ import annotations

import atexit
import contextlib
import stat
import threading
from collections.abc import Generator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Literal, TypedDict

from ...fs_rules import read_at_most
from . import limits
from .archives import read_virtual
from .base import (
    Block,
    ContextOnly,
    Extraction,
    ExtractionError,
    Job,
    NotText,
    Part,
    Span,
    human_size,
    reason,
)
from .context import context_descriptor
from .normalise import normalise
from .ocr import Ocr
from .registry import BY_TYPE
from .sniff import sniff, type_from_name

OcrChoice = Ocr | None | Literal["default", "later"]
"""An `Ocr` to use, None for no OCR, "default": one shared `Ocr` with default settings, or "later":
no OCR now, but count the pages that need it (`Extraction.ocr_wanted`) so that it can come later."""

_shared_ocr: Ocr | None = None
_shared_lock = threading.Lock()


def extract(path: Path, *, max_bytes: int = limits.MAX_FILE_BYTES, ocr: OcrChoice = "default") -> Extraction:
    """Read `path` and return its text, or a context descriptor if nothing is readable.

    `path` may also be a member of an archive, named `<archive path>/<member path>`
    (see `archives`). Raises `ExtractionError` for corrupt files of a known type and
    for files that cannot be read at all (permissions, vanished, not a regular file).
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
            data = read_at_most(file, max_bytes + 1)
    except NotADirectoryError:  # a folder on the way is a file: perhaps an archive holding this member
        data = read_virtual(path, max_bytes)
    except OSError as exc:
        raise ExtractionError(f"cannot read: {path}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        return _context_only(path, doc_type, "file too large to index")
    return extract_bytes(data, path, ocr=ocr, max_bytes=max_bytes)


def extract_bytes(
    data: bytes,
    path: Path | str,
    *,
    ocr: OcrChoice = "default",
    size: int | None = None,
    max_bytes: int = limits.MAX_FILE_BYTES,
) -> Extraction:
    """Extract a file already in memory (an archive member, say) with the same readers.

    ``path`` names the file (its extension picks the reader; it is also what a context
    descriptor shows); ``size``, when the file is not on disk, is the size to show;
    ``max_bytes`` is the file size limit (an archive's listing marks members over it).
    """
    path = Path(path)
    if not data or data.isspace():
        return _context_only(path, type_from_name(path.name), "empty file", size)
    doc_type = type_from_name(path.name) or sniff(data)
    if doc_type is None:
        return _context_only(path, None, "binary file", size)
    extractor = BY_TYPE[doc_type]
    job = Job(
        path.name,
        max_bytes=max_bytes,
        ocr=_shared() if ocr == "default" else None if ocr == "later" else ocr,
        ocr_later=ocr == "later",
    )
    try:
        text, spans, truncated = _collect(extractor.read(data, job))
    except ExtractionError:
        raise
    except NotText:
        return _context_only(path, None, "binary file", size)
    except ContextOnly as exc:
        return replace(_context_only(path, doc_type, str(exc), size), ocr_wanted=job.ocr_wanted)
    except Exception as exc:  # libraries raise anything on bad input; the user needs one line
        raise ExtractionError(f"corrupt {extractor.label}: {reason(exc)}") from exc
    counters = _OcrCounters(ocr_pages=job.ocr_pages, ocr_seconds=job.ocr_seconds, ocr_wanted=job.ocr_wanted)

    if not text.strip():
        if doc_type == "pdf":
            kind = (
                "PDF with no text layer (waiting for OCR)"
                if job.ocr_wanted
                else "PDF with no text layer (probably scanned)"
                if job.ocr is None
                else "PDF with no text layer, and OCR found no text"
            )
        else:
            kind = f"{extractor.label} with no readable text"
        context = _context_only(path, doc_type, kind, size)
        return replace(context, notes=(*context.notes, *job.notes), **counters)
    if truncated or len(text) > limits.MAX_TEXT_CHARS:
        note = f"[… text truncated: only the first {limits.MAX_TEXT_CHARS:,} characters were indexed]"
        text = f"{text[: limits.MAX_TEXT_CHARS]}\n\n{note}"
        spans = [
            replace(span, end=min(span.end, limits.MAX_TEXT_CHARS))
            for span in spans
            if span.start < limits.MAX_TEXT_CHARS
        ]
    return Extraction(
        text=text, doc_type=doc_type, context_only=False, spans=tuple(spans), notes=tuple(job.notes), **counters
    )


class _OcrCounters(TypedDict):
    """What OCR did for one file, as `Extraction` keeps it."""

    ocr_pages: int
    ocr_seconds: float
    ocr_wanted: int


def _collect(blocks: Iterator[Block]) -> tuple[str, list[Span], bool]:
    """Normalise each block and join them with blank lines, stopping once the text budget is spent.

    Normalising block by block leaves a text that needs no second pass, and keeps each
    block's offset in the final text known: consecutive blocks from one location make one span.
    """
    parts: list[str] = []
    spans: list[Span] = []
    size = 0
    with contextlib.ExitStack() as stack:
        if isinstance(blocks, Generator):  # as readers are: one cut short lets go of its document now
            stack.callback(blocks.close)
        for block in blocks:
            location = block.location if isinstance(block, Part) else None
            text = normalise(block.text if isinstance(block, Part) else block)
            if not text:
                continue
            start = size
            parts.append(text)
            size += len(text) + 2
            if location is not None:
                if spans and spans[-1].location == location and spans[-1].end == start - 2:
                    spans[-1] = replace(spans[-1], end=start + len(text))
                else:
                    spans.append(Span(start, start + len(text), location))
            if size > limits.MAX_TEXT_CHARS:
                return "\n\n".join(parts), spans, True
    return "\n\n".join(parts), spans, False


def _context_only(path: Path, doc_type: str | None, kind: str, size: int | None = None) -> Extraction:
    return Extraction(
        text=context_descriptor(path, kind, size=size), doc_type=doc_type or "context", context_only=True, notes=(kind,)
    )


def _shared() -> Ocr:
    """The process's default `Ocr`, started on first use."""
    global _shared_ocr
    with _shared_lock:
        if _shared_ocr is None:
            _shared_ocr = Ocr()
            atexit.register(_shared_ocr.close)
        return _shared_ocr
