"""A PDF page as people see it: rendered to an image, and a cited sentence found on it.

The preview shows a PDF's extracted text; a citation should also show the sentence where it sits
on the page. PDFium's text layer gives each character's box, so the sentence is looked up in the
page's text (from the page the chunk starts on, then its neighbours) and its boxes handed to the
web app, which draws them over the page's image. A page without a text layer (a scan read by OCR)
has no boxes to give: the text preview alone marks the sentence then.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import pypdfium2 as pdfium

from .errors import BadInput
from .ingest.extract.pdf import PDFIUM_LOCK

PAGE_WIDTH = 1000  # pixels across a rendered page: sharp on a laptop's panel, about 150 KB of PNG
MAX_PAGE_PIXELS = 4_000_000  # a poster-sized page is rendered smaller rather than filling memory
PAGES_SEARCHED = 6  # the chunk's page and this many around it: a sentence further off is not this chunk's


@dataclass(frozen=True)
class PageMark:
    """Where a sentence sits on a page: its page (from 1), the page's width over its height, and one box
    per line it covers, each ``(left, top, right, bottom)`` as fractions of the page's width and height
    from its top-left corner."""

    page: int
    aspect: float
    boxes: tuple[tuple[float, float, float, float], ...]

    def as_dict(self) -> dict:
        return {
            "page": self.page,
            "aspect": round(self.aspect, 5),
            "boxes": [[round(v, 5) for v in box] for box in self.boxes],
        }


Finder = Callable[[str, str], "tuple[int, int] | None"]  # (text, sentence) -> its characters in the text


def find_sentence(data: bytes, sentence: str, find: Finder, near_page: int = 1) -> PageMark | None:
    """The page and boxes of ``sentence`` in the PDF ``data``, searched from ``near_page`` outwards with
    ``find`` (the text preview's own matching, so both mark the same words); None when no page's text
    layer has it."""
    if not sentence.strip():
        return None
    with PDFIUM_LOCK:
        document = pdfium.PdfDocument(data)
        try:
            count = len(document)
            near = min(max(near_page, 1), count) - 1 if count else 0
            order = sorted(range(count), key=lambda i: (abs(i - near), i))[: PAGES_SEARCHED + 1]
            for index in order:
                mark = _on_page(document[index], index, sentence, find)
                if mark is not None:
                    return mark
            return None
        finally:
            document.close()


def _on_page(page: pdfium.PdfPage, index: int, sentence: str, find: Finder) -> PageMark | None:
    try:
        textpage = page.get_textpage()
        try:
            found = find(textpage.get_text_range(), sentence)
            if found is None:
                return None
            start, end = found
            width, height = page.get_size()
            boxes = []
            for i in range(textpage.count_rects(start, end - start)):
                left, bottom, right, top = textpage.get_rect(i)
                boxes.append((left / width, 1 - top / height, right / width, 1 - bottom / height))
            return PageMark(index + 1, width / height, tuple(boxes)) if boxes else None
        finally:
            textpage.close()
    finally:
        page.close()


def render_page(data: bytes, page: int, width: int = PAGE_WIDTH) -> bytes:
    """Page ``page`` (from 1) of the PDF ``data`` as a PNG ``width`` pixels across; ``BadInput`` for a
    page the document does not have."""
    with PDFIUM_LOCK:
        document = pdfium.PdfDocument(data)
        try:
            if not 1 <= page <= len(document):
                raise BadInput(f"the document has {len(document)} page(s), not a page {page}")
            sheet = document[page - 1]
            try:
                points_wide, points_high = sheet.get_size()
                scale = min(width / max(points_wide, 1), (MAX_PAGE_PIXELS / max(points_wide * points_high, 1)) ** 0.5)
                bitmap = sheet.render(scale=scale)
                try:
                    image = bitmap.to_pil()
                    out = io.BytesIO()
                    image.save(out, format="PNG", optimize=False)
                    return out.getvalue()
                finally:
                    bitmap.close()
            finally:
                sheet.close()
        finally:
            document.close()
