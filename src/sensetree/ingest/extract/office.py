"""Microsoft Office: DOCX (python-docx), PPTX (python-pptx), XLSX (openpyxl), XLS (xlrd), RTF (striprtf).

Word and PowerPoint 97-2003 files (.doc, .ppt) have no well-kept pure-Python
reader, so they are indexed by their context, and say so.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterable, Iterator
from datetime import date, datetime, time

from . import limits
from .base import Block, ContextOnly, Job, Part
from .html import WHITESPACE
from .zipguard import check_zip

# openpyxl warns about every unsupported extension it meets (data validation,
# conditional formats...). Those are about editing, not reading, and would only
# spam the console of someone indexing their spreadsheets.
warnings.filterwarnings("ignore", category=UserWarning, module=r"openpyxl\.")


def read_docx(data: bytes, job: Job) -> Iterator[Block]:
    """Paragraphs and tables in document order."""
    check_zip(data, "DOCX")
    import docx  # imported on use: python-docx and its friends are slow to import
    from docx.table import Table

    document = docx.Document(io.BytesIO(data))
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            yield "\n".join(_table_rows(block.rows))
        elif block.text.strip():
            yield block.text


def _table_rows(rows) -> Iterator[str]:
    """Rows as 'a | b | c'. Merged cells come back once per spanned column; keep one."""
    for row in rows:
        cells, previous = [], None
        for cell in row.cells:
            if previous is not None and cell._tc is previous:
                continue
            previous = cell._tc
            cells.append(WHITESPACE.sub(" ", cell.text).strip())
        if any(cells):
            yield " | ".join(cells)


def read_pptx(data: bytes, job: Job) -> Iterator[Block]:
    """Per slide: 'Slide N', the text of its shapes, then the speaker notes."""
    check_zip(data, "PPTX")
    from pptx import Presentation

    presentation = Presentation(io.BytesIO(data))
    for number, slide in enumerate(presentation.slides, start=1):
        lines = [f"Slide {number}"]
        lines.extend(_shape_texts(slide.shapes))
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                lines.append(f"Notes: {notes.text}")
        yield Part("\n".join(lines), {"slide": number})


def _shape_texts(shapes) -> Iterator[str]:
    for shape in shapes:
        if hasattr(shape, "shapes"):  # a group
            yield from _shape_texts(shape.shapes)
        elif getattr(shape, "has_text_frame", False) and shape.text_frame.text.strip():
            yield shape.text_frame.text
        elif getattr(shape, "has_table", False):
            yield from _table_rows(shape.table.rows)


def read_xlsx(data: bytes, job: Job) -> Iterator[Block]:
    """Each sheet as 'Sheet: name', its columns, then one line per row with cells labelled by header."""
    check_zip(data, "XLSX")
    import openpyxl

    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        for sheet in workbook.worksheets:
            yield Part(sheet_text(sheet.title, sheet.iter_rows(values_only=True)), {"sheet": sheet.title})
    finally:
        workbook.close()


def sheet_text(title: str, rows: Iterable[Iterable[object]]) -> str:
    """Labelling every cell with its column header lets a chunk of rows stand on its own."""
    from openpyxl.utils import get_column_letter

    lines = [f"Sheet: {title}"]
    header: list[str] | None = None
    size = 0
    for row in rows:
        cells = [cell_text(value) for value in row]
        if not any(cells):
            continue
        if header is None:
            header = cells
            lines.append("Columns: " + " | ".join(cell for cell in header if cell))
            continue
        line = " | ".join(
            f"{header[i] if i < len(header) and header[i] else get_column_letter(i + 1)}: {cell}"
            for i, cell in enumerate(cells)
            if cell
        )
        size += len(line) + 1
        if size > limits.MAX_SHEET_CHARS:
            lines.append(f"[… sheet truncated after {limits.MAX_SHEET_CHARS:,} characters]")
            break
        lines.append(line)
    return "\n".join(lines)


def cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime):
        return value.date().isoformat() if value.time() == time() else value.isoformat(sep=" ")
    if isinstance(value, (date, time)):
        return value.isoformat()
    return WHITESPACE.sub(" ", str(value)).strip()


def read_xls(data: bytes, job: Job) -> Iterator[Block]:
    """Excel 97-2003 workbooks, each sheet laid out as an XLSX sheet is."""
    import xlrd

    workbook = xlrd.open_workbook(file_contents=data, on_demand=True)
    try:
        for index in range(workbook.nsheets):
            sheet = workbook.sheet_by_index(index)
            rows = (
                [_xls_value(cell, workbook.datemode) for cell in sheet.row(number)] for number in range(sheet.nrows)
            )
            yield Part(sheet_text(sheet.name, rows), {"sheet": sheet.name})
            workbook.unload_sheet(index)
    finally:
        workbook.release_resources()


def _xls_value(cell, datemode: int) -> object:
    import xlrd

    if cell.ctype == xlrd.XL_CELL_DATE:
        try:
            return xlrd.xldate.xldate_as_datetime(cell.value, datemode)
        except (ValueError, OverflowError, xlrd.xldate.XLDateError):
            return cell.value
    if cell.ctype == xlrd.XL_CELL_BOOLEAN:
        return bool(cell.value)
    if cell.ctype == xlrd.XL_CELL_ERROR:
        return None
    return cell.value


def read_rtf(data: bytes, job: Job) -> Iterator[Block]:
    """Rich Text Format: the text, with its code page (declared in the file) applied."""
    from striprtf.striprtf import rtf_to_text

    # RTF itself is 7-bit ASCII; bytes above that are in the code page the file declares.
    yield rtf_to_text(data.decode("latin-1"), errors="ignore")


def read_legacy_word(data: bytes, job: Job) -> Iterator[Block]:
    raise ContextOnly("Word 97-2003 document: no reader for this format yet; saved as .docx it is indexed")


def read_legacy_powerpoint(data: bytes, job: Job) -> Iterator[Block]:
    raise ContextOnly("PowerPoint 97-2003 presentation: no reader for this format yet; saved as .pptx it is indexed")
