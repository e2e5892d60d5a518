"""OpenDocument text, spreadsheets and presentations (.odt, .ods, .odp), read from their content.xml.

The XML is streamed (lxml's iterparse, entities not resolved) and each paragraph,
row or slide is dropped once read, so a large spreadsheet does not sit in memory
as a tree.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator

from lxml import etree

from .base import Block, Job, Part
from .office import sheet_text
from .zipguard import check_zip

_NS = {
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
}


def _tag(name: str) -> str:
    prefix, local = name.split(":")
    return f"{{{_NS[prefix]}}}{local}"


_PARAGRAPHS = frozenset({_tag("text:p"), _tag("text:h")})
_ROW, _CELLS = _tag("table:table-row"), frozenset({_tag("table:table-cell"), _tag("table:covered-table-cell")})
_TABLE, _PAGE, _NOTES = _tag("table:table"), _tag("draw:page"), _tag("presentation:notes")
_SPACE, _TAB, _LINE_BREAK = _tag("text:s"), _tag("text:tab"), _tag("text:line-break")
_SKIPPED = frozenset({_tag("text:tracked-changes"), _tag("text:note-citation"), _tag("office:annotation-end")})
_SHEET_NAME, _COLUMNS_REPEATED = _tag("table:name"), _tag("table:number-columns-repeated")
_ROWS_REPEATED, _SPACES = _tag("table:number-rows-repeated"), _tag("text:c")

MAX_REPEAT = 1000
"""A row or cell repeated more often than this is cut: sheets pad themselves with a million empty rows."""


def read_odt(data: bytes, job: Job) -> Iterator[Block]:
    """Headings and paragraphs in order; each table row as 'a | b | c'."""
    for element in _ends(data, "ODT"):
        if element.tag == _ROW and not _inside(element, _CELLS):
            line = " | ".join(_repeated_cells(element))
            if line.strip(" |"):
                yield line
            _drop(element)
        elif element.tag in _PARAGRAPHS and not _inside(element, _PARAGRAPHS | _CELLS):
            text = _inline_text(element)
            if text.strip():
                yield text
            _drop(element)


def read_ods(data: bytes, job: Job) -> Iterator[Block]:
    """Each sheet like an XLSX sheet: its name, its columns, then rows with cells labelled by header."""
    rows: list[list[str]] = []
    sheets = 0
    for element in _ends(data, "ODS"):
        if element.tag == _ROW:
            cells = _repeated_cells(element)
            if any(cells):
                repeat = min(int(element.get(_ROWS_REPEATED, "1")), MAX_REPEAT)
                rows.extend([cells] * repeat)
            _drop(element)
        elif element.tag == _TABLE and not _inside(element, {_TABLE}):
            sheets += 1
            name = element.get(_SHEET_NAME) or f"Sheet {sheets}"
            if rows:
                yield Part(sheet_text(name, rows), {"sheet": name})
            rows = []
            _drop(element)


def read_odp(data: bytes, job: Job) -> Iterator[Block]:
    """Per slide: 'Slide N', the text of its frames, then the speaker notes."""
    number = 0
    for element in _ends(data, "ODP"):
        if element.tag != _PAGE:
            continue
        number += 1
        lines, notes = [f"Slide {number}"], list[str]()
        for paragraph in element.iter(*_PARAGRAPHS):
            text = _inline_text(paragraph)
            if text.strip() and not _inside(paragraph, _PARAGRAPHS):
                (notes if _inside(paragraph, {_NOTES}) else lines).append(text)
        if notes:
            lines.append("Notes: " + "\n".join(notes))
        yield Part("\n".join(lines), {"slide": number})
        _drop(element)


def _ends(data: bytes, label: str) -> Iterator[etree._Element]:
    """Each element of content.xml once it is complete (its ancestors are there, their later children not)."""
    check_zip(data, label)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        content = archive.read("content.xml")
    # No entity expansion, no network: the file is untrusted.
    for _event, element in etree.iterparse(io.BytesIO(content), resolve_entities=False, no_network=True):
        yield element


def _inline_text(element: etree._Element) -> str:
    """A paragraph's text with its spaces, tabs and line breaks; deleted (tracked) text left out."""
    parts = [element.text or ""]
    for child in element:
        if child.tag == _SPACE:
            parts.append(" " * min(int(child.get(_SPACES, "1")), 100))
        elif child.tag == _TAB:
            parts.append("\t")
        elif child.tag == _LINE_BREAK:
            parts.append("\n")
        elif child.tag not in _SKIPPED and isinstance(child.tag, str):
            parts.append(_inline_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _repeated_cells(row: etree._Element) -> list[str]:
    """The row's cell texts, repeated cells expanded (up to MAX_REPEAT) and trailing empty ones dropped."""
    cells: list[str] = []
    for cell in row:
        if cell.tag not in _CELLS:
            continue
        text = "\n".join(_inline_text(p) for p in cell.iter(*_PARAGRAPHS)).strip()
        repeat = min(int(cell.get(_COLUMNS_REPEATED, "1")), MAX_REPEAT)
        cells.extend([" ".join(text.split())] * repeat)
    while cells and not cells[-1]:
        cells.pop()
    return cells


def _inside(element: etree._Element, tags: frozenset[str] | set[str]) -> bool:
    return any(ancestor.tag in tags for ancestor in element.iterancestors())


def _drop(element: etree._Element) -> None:
    """Free what has been read: the element's content and the siblings before it."""
    element.clear(keep_tail=True)
    while element.getprevious() is not None:
        del element.getparent()[0]
