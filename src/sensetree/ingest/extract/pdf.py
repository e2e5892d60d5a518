"""PDF through PDFium (pypdfium2): fast, tolerant of damaged files, pages in order."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from .base import Block, ExtractionError, Job, Part

# PDFium is not thread-safe, and an indexer may well extract from a thread pool.
PDFIUM_LOCK = threading.Lock()


def read_pdf(data: bytes, job: Job) -> Iterator[Block]:
    """One block per page, from the PDF's text layer."""
    with PDFIUM_LOCK:
        try:
            # No password: PDFium then tries the empty one, which opens PDFs
            # that are only protected against editing or printing.
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            if getattr(exc, "err_code", None) == pdfium_c.FPDF_ERR_PASSWORD:
                raise ExtractionError("encrypted PDF: it needs a password to open") from None
            raise
        try:
            for number, page in enumerate(document, start=1):
                try:
                    text = _page_text(page)
                finally:
                    page.close()
                if text.strip():
                    yield Part(text, {"page": number})
        finally:
            document.close()


def _page_text(page: pdfium.PdfPage) -> str:
    textpage = page.get_textpage()
    try:
        return textpage.get_text_bounded()
    finally:
        textpage.close()
