"""EPUB through ebooklib: the title, then the book's XHTML documents in reading (spine) order."""

from __future__ import annotations

import io
from collections.abc import Iterator

from .base import Block, Job, Part
from .charset import decode
from .html import html_to_text
from .zipguard import check_zip


def read_epub(data: bytes, job: Job) -> Iterator[Block]:
    check_zip(data, "EPUB")
    from ebooklib import epub

    book = epub.read_epub(io.BytesIO(data), options={"ignore_ncx": True})
    titles = book.get_metadata("DC", "title")
    if titles and titles[0][0]:
        yield titles[0][0]
    for idref, _linear in book.spine:
        item = book.get_item_with_id(idref)
        if item is None or isinstance(item, epub.EpubNav):  # the table of contents repeats the headings
            continue
        if item.media_type not in ("application/xhtml+xml", "text/html"):
            continue
        text = html_to_text(decode(item.get_content()) or "", title=False)
        if text.strip():
            yield Part(text, {"chapter": _chapter_name(text, item.get_name())})


def _chapter_name(text: str, file_name: str) -> str:
    """The chapter's first line (its heading, as a rule), else the name of its file in the book."""
    first = text.strip().split("\n", 1)[0].strip()
    return first[:80] if first else file_name
