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
    titles_by_file = dict(_toc_titles(book.toc))
    for idref, _linear in book.spine:
        item = book.get_item_with_id(idref)
        if item is None or isinstance(item, epub.EpubNav):  # the table of contents repeats the headings
            continue
        if item.media_type not in ("application/xhtml+xml", "text/html"):
            continue
        text = html_to_text(decode(item.get_content()) or "", title=False)
        if text.strip():
            name = titles_by_file.get(item.get_name()) or text.strip().split("\n", 1)[0][:80]
            yield Part(text, {"chapter": name})


def _toc_titles(entries) -> Iterator[tuple[str, str]]:
    """(file in the book, title) for each table-of-contents entry, the first entry per file winning."""
    for entry in reversed(entries):  # reversed, so dict() keeps the first title of a file
        if isinstance(entry, tuple):  # (section, children)
            yield from _toc_titles(entry[1])
            entry = entry[0]
        href = getattr(entry, "href", None)
        if href and getattr(entry, "title", None):
            yield href.split("#", 1)[0], " ".join(entry.title.split())
