"""PDF through PDFium (pypdfium2): fast, tolerant of damaged files, pages in order.

Pages without a usable text layer (scans, text drawn as outlines) are rendered
and read by OCR when the job has it; only those pages.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from .base import Block, ExtractionError, Job, Part
from .ocr import MAX_PIXELS, ocr_page

# PDFium is not thread-safe, and an indexer may well extract from a thread pool.
# It is held for each call into PDFium, not while a page is OCRed.
PDFIUM_LOCK = threading.Lock()

USABLE_TEXT = 50
"""A page whose text layer has fewer letters and digits than this is read by OCR (when OCR
is on) if it has no text at all but shows something (a scan, text drawn as outlines), or
if images cover a third of it or more (a scan with a stamped page number)."""

SCANNED_SHARE = 1 / 3


def read_pdf(data: bytes, job: Job) -> Iterator[Block]:
    """One block per page: its text layer, or what OCR reads on it."""
    with PDFIUM_LOCK:
        try:
            # No password: PDFium then tries the empty one, which opens PDFs
            # that are only protected against editing or printing.
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            if getattr(exc, "err_code", None) == pdfium_c.FPDF_ERR_PASSWORD:
                raise ExtractionError("encrypted PDF: it needs a password to open") from None
            raise
        pages = len(document)
    try:
        for number in range(1, pages + 1):
            with PDFIUM_LOCK:
                text, image = _page(
                    document, number - 1, job.ocr.settings.dpi if job.ocr is not None else 0, job.ocr_later
                )
            if image is True:
                job.ocr_wanted += 1
            elif image is not None:
                scanned = ocr_page(job, image, f"page {number}")
                if _letters(scanned) > _letters(text):
                    text = scanned
            if text.strip():
                yield Part(text, {"page": number})
    finally:
        with PDFIUM_LOCK:
            document.close()


def _page(document: pdfium.PdfDocument, index: int, dpi: int, later: bool):
    """The page's text layer, and its rendering when it needs OCR (``dpi`` given, thin text, something drawn);
    with ``later``, True instead of a rendering for a page that needs OCR."""
    page = document[index]
    try:
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_bounded()
        finally:
            textpage.close()
        if not (dpi or later) or not _needs_ocr(page, text):
            return text, None
        if later:
            return text, True
        width, height = page.get_size()
        scale = min(dpi / 72, (MAX_PIXELS / max(width * height, 1)) ** 0.5)
        bitmap = page.render(scale=scale, grayscale=True)
        try:
            return text, bitmap.to_pil().copy()
        finally:
            bitmap.close()
    finally:
        page.close()


def _needs_ocr(page: pdfium.PdfPage, text: str) -> bool:
    letters = _letters(text)
    if letters >= USABLE_TEXT or pdfium_c.FPDFPage_CountObjects(page.raw) == 0:
        return False
    if letters == 0:
        return True
    width, height = page.get_size()
    covered = 0.0
    for image in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=3):
        left, bottom, right, top = image.get_bounds()
        covered += max(0.0, min(right, width) - max(left, 0.0)) * max(0.0, min(top, height) - max(bottom, 0.0))
    return covered >= SCANNED_SHARE * width * height


def _letters(text: str) -> int:
    return sum(char.isalnum() for char in text)
