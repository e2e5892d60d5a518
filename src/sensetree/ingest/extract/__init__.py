"""Turn one file into plain text for indexing.

Files come from people's disks, so they can be huge, corrupt, hostile (zip
bombs) or not what their extension claims. Every file therefore ends in one of
three ways: readable text, a *context descriptor* (name, folder, size and
neighbours, so the file is still findable by name), or an `ExtractionError`
whose message is one line a user can act on.

One module per family of formats implements the small protocol in `base`
(`Extractor`: a reader from bytes to blocks of text, and the names it answers
to); `registry` holds the one table of them; `core` assembles and normalises
(once: the text an `Extraction` holds is final, and its `spans` are offsets
into it). `ocr` reads scanned pages and images; `archives` walks the members of
archives, which are named ``<archive path>/<member path>``.
"""

from .archives import Member, archive_members, ignore_files, is_archive
from .base import Extraction, ExtractionError, Location, Span, location_label
from .context import context_descriptor
from .core import extract, extract_bytes
from .normalise import normalise
from .ocr import Ocr, OcrSettings, tesseract_languages

__all__ = [
    "Extraction",
    "ExtractionError",
    "Location",
    "Member",
    "Ocr",
    "OcrSettings",
    "Span",
    "archive_members",
    "ignore_files",
    "context_descriptor",
    "extract",
    "extract_bytes",
    "is_archive",
    "location_label",
    "normalise",
    "tesseract_languages",
]
