"""The small protocol every extractor implements, and what extraction returns.

An extractor is a `Reader` (bytes in, blocks of text out) plus the names and
extensions it answers to. Readers yield blocks in reading order; a block may say
where in the file it comes from (a `Part` with a location such as
``{"page": 3}``), and the assembly in `core` turns those into offsets into the
final text.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ...errors import Interrupted, SenseTreeError
from . import limits

if TYPE_CHECKING:
    from PIL.Image import Image

Location = dict[str, int | str]
"""Where a part of the text comes from: {"page": 12}, {"slide": 3}, {"sheet": "Q3"}, {"chapter": "…"}."""


@dataclass(frozen=True)
class Span:
    """Characters ``start`` to ``end`` (exclusive) of the text come from ``location``."""

    start: int
    end: int
    location: Location


@dataclass(frozen=True)
class Extraction:
    """The text of one file.

    `doc_type` says what the file is; `context_only` says whether its content
    could be read. A scanned PDF with OCR off is `doc_type='pdf'` with
    `context_only=True`; an unrecognisable binary is `doc_type='context'`.

    `spans` say where in the file each stretch of `text` comes from (pages,
    slides, sheets, chapters), as offsets into `text`. `ocr_pages` and
    `ocr_seconds` count the pages (or images) read by OCR and the time spent;
    `ocr_wanted` counts those that need OCR when it was asked for later (the
    text is then what reads without it); `notes` are one-line remarks for the
    user: why the file is context only, which pages OCR could not read.
    """

    text: str
    doc_type: str
    context_only: bool
    spans: tuple[Span, ...] = ()
    ocr_pages: int = 0
    ocr_seconds: float = 0.0
    notes: tuple[str, ...] = ()
    ocr_wanted: int = 0

    def location_at(self, offset: int) -> Location | None:
        """Where the character at ``offset`` comes from; None between parts or in unlocated text."""
        index = bisect.bisect_right([span.start for span in self.spans], offset) - 1
        if index >= 0 and offset < self.spans[index].end:
            return self.spans[index].location
        return None

    def locations_between(self, start: int, end: int) -> list[Location]:
        """The locations that characters ``start`` to ``end`` (say, a chunk) overlap, in order."""
        return [span.location for span in self.spans if span.start < end and start < span.end]


def location_label(locations: list[Location]) -> str:
    """Locations for people: 'page 3', 'pages 3–5', 'slide 2', 'sheets Q3, Q4', 'chapter The Storm'; '' for none."""
    if not locations:
        return ""
    kind = next(iter(locations[0]))
    values = [location[kind] for location in locations if kind in location]
    if all(isinstance(value, int) for value in values):
        low, high = min(values), max(values)
        return f"{kind} {low}" if low == high else f"{kind}s {low}–{high}"
    names = list(dict.fromkeys(str(value) for value in values))
    return f"{kind} {names[0]}" if len(names) == 1 else f"{kind}s {', '.join(names)}"


class ExtractionError(SenseTreeError):
    """Corrupt or unreadable file; `str(err)` is a one-line message for the user."""


class NotText(Interrupted):
    """Raised by text readers when the bytes turn out to be binary."""


class ContextOnly(Interrupted):
    """Raised by a reader that knows the format but cannot read its content; `str(err)` says why, in one line."""


@dataclass(frozen=True)
class Part:
    """A block of text that knows where in its file it comes from."""

    text: str
    location: Location | None = None


Block = str | Part


@dataclass(frozen=True)
class OcrSettings:
    """How OCR runs. ``languages`` only matter to Tesseract (its codes, e.g. "deu"); the bundled
    engine reads every language it knows without being told."""

    engine: str = "rapidocr"
    languages: tuple[str, ...] = ()
    dpi: int = 300
    page_timeout: float = 60.0
    max_pages: int = 200  # pages read by OCR per file; a longer scan is indexed by its first ones, and says so
    max_memory: int = 2 * 1024**3  # bytes of resident memory for the worker
    threads: int = 2  # RapidOCR's; Tesseract runs one thread per page
    device: str = "cpu"  # RapidOCR's onnxruntime device (compute.ocr_device; models/devices.py)


class PageReader(Protocol):
    """What a reader asks of OCR (``ocr.Ocr`` is the one): its settings, and one page's text."""

    settings: OcrSettings

    def timed_read(self, image: Image) -> tuple[str, float]:
        """The page's text and the seconds it took; raises ``OcrFailed`` for a page it cannot read."""
        ...


@dataclass
class Job:
    """One file being extracted: what its readers need to know, and what they report back."""

    name: str
    max_bytes: int = limits.MAX_FILE_BYTES  # the file size limit, which also applies to an archive's members
    ocr: PageReader | None = None  # None: OCR is off (or, with ocr_later, deferred)
    ocr_later: bool = False  # count the pages that need OCR (ocr_wanted) instead of reading them
    ocr_pages: int = 0
    ocr_seconds: float = 0.0
    ocr_wanted: int = 0
    notes: list[str] = field(default_factory=list)  # one line each, for the user


class Reader(Protocol):
    """Turns the bytes of one file into blocks of text, in reading order."""

    def __call__(self, data: bytes, job: Job) -> Iterator[Block]: ...


@dataclass(frozen=True)
class Extractor:
    """One format: what it is called, which names it answers to, and how it is read.

    `library` says what does the reading, for the list of formats (docs/reference.md).
    """

    doc_type: str
    label: str
    extensions: tuple[str, ...]
    read: Reader
    library: str
    filenames: tuple[str, ...] = ()


def reason(exc: BaseException) -> str:
    """An exception as one short line."""
    if isinstance(exc, KeyError) and exc.args:  # str(KeyError) is a quoted repr
        message = f"missing part ({exc.args[0]})"
    else:
        message = str(exc) or type(exc).__name__
    message = " ".join(message.split())
    return message if len(message) <= 200 else message[:199] + "…"


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    value = size / 1024
    for unit in ("KB", "MB", "GB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TB"
