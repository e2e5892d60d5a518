"""Turn one file into plain text for indexing.

Files come from people's disks, so they can be huge, corrupt, hostile (zip
bombs) or not what their extension claims. Every file therefore ends in one of
three ways: readable text, a *context descriptor* (name, folder, size and
neighbours, so the file is still findable by name), or an `ExtractionError`
whose message is one line a user can act on.
"""

from __future__ import annotations

import codecs
import contextlib
import email
import email.policy
import heapq
import io
import json
import os
import re
import stat
import threading
import unicodedata
import warnings
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path

import charset_normalizer
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from selectolax.lexbor import LexborHTMLParser, LexborNode

__all__ = ["Extraction", "ExtractionError", "context_descriptor", "extract"]

MAX_TEXT_CHARS = 5_000_000
"""Longer texts are cut: past this a file is a dump, not a document, and chunking it would swamp the index."""

MAX_SHEET_CHARS = 2 * 1024 * 1024
"""Per-sheet budget, so one giant data sheet cannot crowd out the other sheets of a workbook."""

MAX_ZIP_UNCOMPRESSED = 200 * 1024 * 1024
MAX_ZIP_RATIO = 100
ZIP_RATIO_FLOOR = 10 * 1024 * 1024
"""The ratio test only applies above this size: small repetitive XML legitimately compresses very well."""

_DETECT_SAMPLE = 1024 * 1024
_PRINTABLE_SAMPLE = 64 * 1024

# openpyxl warns about every unsupported extension it meets (data validation,
# conditional formats...). Those are about editing, not reading, and would only
# spam the console of someone indexing their spreadsheets.
warnings.filterwarnings("ignore", category=UserWarning, module=r"openpyxl\.")

# PDFium is not thread-safe, and an indexer may well extract from a thread pool.
_PDFIUM_LOCK = threading.Lock()


@dataclass(frozen=True)
class Extraction:
    """The text of one file.

    `doc_type` says what the file is; `context_only` says whether its content
    could be read. A scanned PDF is `doc_type='pdf'` with `context_only=True`;
    an unrecognisable binary is `doc_type='context'`.
    """

    text: str
    doc_type: str
    context_only: bool


class ExtractionError(Exception):
    """Corrupt or unreadable file; `str(err)` is a one-line message for the user."""


class _NotText(Exception):
    """Raised by text readers when the bytes turn out to be binary."""


# --------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------


def extract(path: Path, *, max_bytes: int = 50 * 1024 * 1024) -> Extraction:
    """Read `path` and return its text, or a context descriptor if nothing is readable.

    Raises `ExtractionError` for corrupt files of a known type and for files
    that cannot be read at all (permissions, vanished, not a regular file).
    """
    path = Path(path)
    doc_type = _type_from_name(path.name)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ExtractionError(f"cannot read: {path}: not a regular file")
        if info.st_size > max_bytes:
            return _context_only(path, doc_type, f"file too large to index ({_human_size(info.st_size)})")
        with path.open("rb") as file:
            # Read one byte past the limit: the file may have grown since stat().
            data = file.read(max_bytes + 1)
    except OSError as exc:
        raise ExtractionError(f"cannot read: {path}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        return _context_only(path, doc_type, "file too large to index")
    if not data or data.isspace():
        return _context_only(path, doc_type, "empty file")

    doc_type = doc_type or _sniff(data)
    if doc_type is None:
        return _context_only(path, None, "binary file")

    try:
        text, truncated = _collect(_READERS[doc_type](data))
    except ExtractionError:
        raise
    except _NotText:
        return _context_only(path, None, "binary file")
    except Exception as exc:  # libraries raise anything on bad input; the user needs one line
        raise ExtractionError(f"corrupt {_LABELS[doc_type]}: {_reason(exc)}") from exc

    text = _normalise(text)
    if not text.strip():
        if doc_type == "pdf":
            return _context_only(path, doc_type, "PDF with no text layer (probably scanned)")
        return _context_only(path, doc_type, f"{_LABELS[doc_type]} with no readable text")
    if truncated or len(text) > MAX_TEXT_CHARS:
        note = f"[… text truncated: only the first {MAX_TEXT_CHARS:,} characters were indexed]"
        text = f"{text[:MAX_TEXT_CHARS]}\n\n{note}"
    return Extraction(text=text, doc_type=doc_type, context_only=False)


def context_descriptor(path: Path, kind: str) -> str:
    """Describe a file whose content we cannot read.

    The name (also split into words), folder, type, size and a few neighbours
    keep the file findable ("where is my model.blend?") and give the embedding
    some topic to go on.
    """
    path = Path(path)
    lines = [f"File: {path.name}"]
    words = _name_words(path.name)
    if words and words != path.name:
        lines.append(f"Name: {words}")
    lines.append(f"Folder: {path.parent}")
    suffix = path.suffix.lower()
    lines.append(f"Type: {kind}, {suffix} extension" if suffix else f"Type: {kind}, no extension")
    with contextlib.suppress(OSError):
        lines.append(f"Size: {_human_size(path.stat().st_size)}")
    siblings = _sibling_names(path)
    if siblings:
        lines.append("Other files in this folder: " + ", ".join(siblings))
    return unicodedata.normalize("NFC", "\n".join(lines))


# --------------------------------------------------------------------------
# Deciding what a file is
# --------------------------------------------------------------------------

_CODE_EXTENSIONS = frozenset(
    """
    py pyi pyw pyx ipynb js mjs cjs ts tsx jsx vue svelte java c h cc cpp cxx hpp hh hxx
    cs fs fsx go rs rb php swift kt kts scala groovy gradle dart sh bash zsh fish ps1 psm1
    bat cmd sql r jl lua pl pm m mm hs ml mli ex exs erl clj cljs el lisp scm nim zig sol
    proto graphql gql yaml yml toml ini cfg conf properties xml xsd xsl css scss sass less
    tex bib sty rst org adoc asciidoc cmake mk dockerfile tf hcl
    """.split()
)
_CODE_FILENAMES = frozenset(
    "makefile dockerfile containerfile jenkinsfile vagrantfile rakefile gemfile procfile cmakelists.txt".split()
)
_EXTENSION_TYPES = {
    "pdf": "pdf",
    "docx": "docx",
    "pptx": "pptx",
    "xlsx": "xlsx",
    "xlsm": "xlsx",
    "html": "html",
    "htm": "html",
    "xhtml": "html",
    "md": "markdown",
    "markdown": "markdown",
    "mdown": "markdown",
    "mkd": "markdown",
    "mdx": "markdown",
    "txt": "text",
    "text": "text",
    "log": "text",
    "csv": "csv",
    "tsv": "tsv",
    "tab": "tsv",
    "json": "json",
    "jsonl": "json",
    "ndjson": "json",
    "geojson": "json",
    "epub": "epub",
    "eml": "email",
}

_LABELS = {
    "pdf": "PDF",
    "docx": "DOCX",
    "pptx": "PPTX",
    "xlsx": "XLSX",
    "html": "HTML",
    "markdown": "Markdown",
    "text": "text file",
    "code": "source file",
    "csv": "CSV",
    "tsv": "TSV",
    "json": "JSON",
    "epub": "EPUB",
    "email": "email",
}


def _type_from_name(name: str) -> str | None:
    lowered = name.lower()
    if lowered in _CODE_FILENAMES:
        return "code"
    extension = lowered.rpartition(".")[2] if "." in lowered else ""
    if extension in _CODE_EXTENSIONS:
        return "code"
    return _EXTENSION_TYPES.get(extension)


def _sniff(data: bytes) -> str | None:
    """Guess the type of a file whose extension we don't know from its first bytes."""
    head = data[:1024].lstrip()
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        return _sniff_zip(data)
    if head[:14].lower().startswith((b"<!doctype html", b"<html")):
        return "html"
    return "text"  # the text reader gives up with _NotText if the bytes are binary


def _sniff_zip(data: bytes) -> str | None:
    """Office documents and EPUBs are zips; tell them apart by their well-known members."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            if "mimetype" in names and archive.read("mimetype").strip() == b"application/epub+zip":
                return "epub"
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    for member, doc_type in (
        ("word/document.xml", "docx"),
        ("ppt/presentation.xml", "pptx"),
        ("xl/workbook.xml", "xlsx"),
    ):
        if member in names:
            return doc_type
    return None


# --------------------------------------------------------------------------
# Plain text, in whatever encoding
# --------------------------------------------------------------------------

# UTF-32 first: its little-endian BOM starts with the UTF-16 one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f\ufffd]")


def _decode(data: bytes) -> str | None:
    """Bytes to str, or None when the bytes are not text in any encoding we recognise."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            text = data[len(bom) :].decode(encoding, errors="replace")
            break
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        # Valid UTF-8 that is full of control characters may be UTF-16 without a BOM; if its
        # NULs are not laid out like UTF-16's, they are stray (padding, C strings): spaces.
        sample = data[:_DETECT_SAMPLE]
        if text is not None and not _looks_printable(text[:_PRINTABLE_SAMPLE]) and not _looks_like_utf16(sample):
            text = text.replace("\x00", " ")
        if text is None or not _looks_printable(text[:_PRINTABLE_SAMPLE]):
            encoding = _guess_encoding(data[:_DETECT_SAMPLE])
            if encoding is None:
                return None
            text = data.decode(encoding, errors="replace")
    return text if _looks_printable(text[:_PRINTABLE_SAMPLE]) else None


def _guess_encoding(sample: bytes) -> str | None:
    # A UTF-8 file with a few bad bytes (a truncated copy, one stray Latin-1
    # character) is still UTF-8: guessing another codec would garble every
    # accented letter in it.
    as_utf8 = sample.decode("utf-8", errors="replace")
    bad = as_utf8.count("\ufffd")
    good = len(as_utf8) - len(as_utf8.encode("ascii", errors="ignore")) - bad
    if good > bad:
        return "utf-8"
    matches = charset_normalizer.from_bytes(sample)
    best = matches.best()
    if best is None:
        return None
    # charset-normalizer scores Western European text identically in cp1252,
    # cp1250 and friends and then picks by name; cp1252 is what such files are
    # written in on Windows.
    for match in matches:
        same_score = (match.chaos, match.coherence) == (best.chaos, best.coherence)
        if same_score and "cp1252" in match.could_be_from_charset:
            return "cp1252"
    return best.encoding


def _looks_like_utf16(sample: bytes) -> bool:
    """BOM-less UTF-16 of mostly Latin text: a zero in most bytes on one side (odd or even) only."""
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    return max(even, odd) >= 0.3 * (len(sample) // 2) and min(even, odd) <= 0.1 * max(even, odd)


def _looks_printable(sample: str) -> bool:
    """Text has almost no control characters; binary decoded as text is full of them."""
    return len(_UNPRINTABLE.findall(sample)) <= len(sample) * 0.05


def _require_text(data: bytes) -> str:
    text = _decode(data)
    if text is None:
        raise _NotText
    return text


def _read_text(data: bytes) -> Iterator[str]:
    yield _require_text(data)


def _read_json(data: bytes) -> Iterator[str]:
    """Pretty-print JSON so minified files get line breaks for the chunker; keep invalid JSON as it is."""
    text = _require_text(data)
    try:
        yield json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        yield text


# --------------------------------------------------------------------------
# HTML (also used by EPUB and email)
# --------------------------------------------------------------------------

_SKIPPED_TAGS = frozenset(
    "head script style noscript template iframe object embed canvas svg math select button".split()
)
_PARAGRAPH_TAGS = frozenset(
    """
    p div section article main header footer nav aside h1 h2 h3 h4 h5 h6 ul ol dl table
    blockquote figure form fieldset details summary address hr body
    """.split()
)
_LINE_TAGS = frozenset("li tr dt dd caption figcaption option legend".split())
_SPACED_TAGS = frozenset("td th".split())
_WHITESPACE = re.compile(r"\s+")


class _TextBuilder:
    """Collects inline text and breaks, and lays them out as lines and paragraphs."""

    def __init__(self) -> None:
        self._blocks: list[str] = []
        self._line: list[str] = []
        self._lines: list[str] = []

    def text(self, value: str) -> None:
        self._line.append(_WHITESPACE.sub(" ", value))

    def line_break(self) -> None:
        line = "".join(self._line).strip()
        if line:
            self._lines.append(line)
        self._line = []

    def paragraph_break(self) -> None:
        self.line_break()
        if self._lines:
            self._blocks.append("\n".join(self._lines))
        self._lines = []

    def space(self) -> None:
        self._line.append(" ")

    def verbatim(self, value: str) -> None:
        self.paragraph_break()
        if value.strip():
            self._blocks.append(value.strip("\n"))

    def result(self) -> str:
        self.paragraph_break()
        return "\n\n".join(self._blocks)


def _html_to_text(html: str, *, title: bool = True) -> str:
    """Visible text of a page, with paragraph breaks kept and its title first (unless the page repeats it)."""
    tree = LexborHTMLParser(html)
    builder = _TextBuilder()
    root = tree.body or tree.root
    # An explicit stack rather than recursion: hostile pages nest thousands deep.
    stack: list[LexborNode | Callable[[], None]] = [root] if root is not None else []
    while stack:
        item = stack.pop()
        if not isinstance(item, LexborNode):
            item()  # a pending closing break
        elif item.is_text_node:
            builder.text(item.text_content or "")
        elif item.is_element_node and item.tag not in _SKIPPED_TAGS:
            tag = item.tag
            if tag == "pre":
                builder.verbatim(item.text())
                continue
            if tag == "br":
                builder.line_break()
                continue
            closing = None
            if tag in _PARAGRAPH_TAGS:
                builder.paragraph_break()
                closing = builder.paragraph_break
            elif tag in _LINE_TAGS:
                builder.line_break()
                closing = builder.line_break
            elif tag in _SPACED_TAGS:
                closing = builder.space
            if closing is not None:
                stack.append(closing)
            stack.extend(reversed(list(item.iter(include_text=True))))
    text = builder.result()

    title_node = tree.css_first("title") if title else None
    heading = " ".join(title_node.text().split()) if title_node is not None else ""
    if heading and not text.startswith(heading):
        return f"{heading}\n\n{text}"
    return text


def _read_html(data: bytes) -> Iterator[str]:
    yield _html_to_text(_require_text(data))


# --------------------------------------------------------------------------
# PDF
# --------------------------------------------------------------------------


def _read_pdf(data: bytes) -> Iterator[str]:
    """One block per page, from the PDF's text layer."""
    with _PDFIUM_LOCK:
        try:
            # No password: PDFium then tries the empty one, which opens PDFs
            # that are only protected against editing or printing.
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            if getattr(exc, "err_code", None) == pdfium_c.FPDF_ERR_PASSWORD:
                raise ExtractionError("encrypted PDF: it needs a password to open") from None
            raise
        try:
            for page in document:
                try:
                    textpage = page.get_textpage()
                    try:
                        text = textpage.get_text_bounded()
                    finally:
                        textpage.close()
                finally:
                    page.close()
                if text.strip():
                    yield text
        finally:
            document.close()


# --------------------------------------------------------------------------
# Zip-based formats: DOCX, PPTX, XLSX, EPUB
# --------------------------------------------------------------------------


def _check_zip(data: bytes, label: str) -> None:
    """Refuse archives that would expand to far more than they weigh.

    The check trusts the sizes declared in the zip directory, so it also refuses a
    member that declares fewer bytes than its compressed stream must inflate to:
    `zipfile.read` inflates the whole stream before cutting it to the declared size.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ExtractionError(f"corrupt {label}: not a valid zip archive ({_reason(exc)})") from None
    for member in members:
        if member.compress_size > _most_compressed_bytes(member.file_size):
            raise ExtractionError(
                f"corrupt {label}: {member.filename} declares {_human_size(member.file_size)} "
                f"but holds {_human_size(member.compress_size)} compressed"
            )
    expanded = sum(member.file_size for member in members)
    too_big = expanded > MAX_ZIP_UNCOMPRESSED
    too_dense = expanded > ZIP_RATIO_FLOOR and expanded > len(data) * MAX_ZIP_RATIO
    if too_big or too_dense:
        raise ExtractionError(
            f"refusing {label}: {_human_size(len(data))} would expand to "
            f"{_human_size(expanded)} (possible zip bomb)"
        )


def _most_compressed_bytes(size: int) -> int:
    """The most bytes any zip method stores ``size`` bytes in: deflate's stored blocks add
    5 bytes per 16 KB, and encryption headers or descriptors a few dozen more."""
    return size + 5 * (size // 16_384 + 1) + 1024


def _read_docx(data: bytes) -> Iterator[str]:
    """Paragraphs and tables in document order."""
    _check_zip(data, "DOCX")
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
            cells.append(_WHITESPACE.sub(" ", cell.text).strip())
        if any(cells):
            yield " | ".join(cells)


def _read_pptx(data: bytes) -> Iterator[str]:
    """Per slide: 'Slide N', the text of its shapes, then the speaker notes."""
    _check_zip(data, "PPTX")
    from pptx import Presentation

    presentation = Presentation(io.BytesIO(data))
    for number, slide in enumerate(presentation.slides, start=1):
        lines = [f"Slide {number}"]
        lines.extend(_shape_texts(slide.shapes))
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                lines.append(f"Notes: {notes.text}")
        yield "\n".join(lines)


def _shape_texts(shapes) -> Iterator[str]:
    for shape in shapes:
        if hasattr(shape, "shapes"):  # a group
            yield from _shape_texts(shape.shapes)
        elif getattr(shape, "has_text_frame", False) and shape.text_frame.text.strip():
            yield shape.text_frame.text
        elif getattr(shape, "has_table", False):
            yield from _table_rows(shape.table.rows)


def _read_xlsx(data: bytes) -> Iterator[str]:
    """Each sheet as 'Sheet: name', its columns, then one line per row with cells labelled by header."""
    _check_zip(data, "XLSX")
    import openpyxl

    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        for sheet in workbook.worksheets:
            yield _sheet_text(sheet)
    finally:
        workbook.close()


def _sheet_text(sheet) -> str:
    """Labelling every cell with its column header lets a chunk of rows stand on its own."""
    from openpyxl.utils import get_column_letter

    lines = [f"Sheet: {sheet.title}"]
    header: list[str] | None = None
    size = 0
    for row in sheet.iter_rows(values_only=True):
        cells = [_cell_text(value) for value in row]
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
        if size > MAX_SHEET_CHARS:
            lines.append(f"[… sheet truncated after {MAX_SHEET_CHARS:,} characters]")
            break
        lines.append(line)
    return "\n".join(lines)


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime):
        return value.date().isoformat() if value.time() == time() else value.isoformat(sep=" ")
    if isinstance(value, (date, time)):
        return value.isoformat()
    return _WHITESPACE.sub(" ", str(value)).strip()


def _read_epub(data: bytes) -> Iterator[str]:
    """The book title, then its XHTML documents in reading (spine) order."""
    _check_zip(data, "EPUB")
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
        text = _html_to_text(_decode(item.get_content()) or "", title=False)
        if text.strip():
            yield text


# --------------------------------------------------------------------------
# Email
# --------------------------------------------------------------------------


def _read_email(data: bytes) -> Iterator[str]:
    """Headers that matter for search, the body (plain text preferred) and attachment names."""
    message = email.message_from_bytes(data, policy=email.policy.default)
    headers = [f"{name}: {message[name]}" for name in ("From", "To", "Cc", "Subject", "Date") if message[name]]
    if headers:
        yield "\n".join(headers)
    body = message.get_body(preferencelist=("plain", "html"))
    if body is not None:
        content = _part_text(body)
        yield _html_to_text(content) if body.get_content_subtype() == "html" else content
    attachments = [part.get_filename() for part in message.walk() if part.get_filename()]
    if attachments:
        yield "Attachments: " + ", ".join(attachments)


def _part_text(part) -> str:
    try:
        return part.get_content()
    except LookupError:  # a charset Python does not know: let detection have a go
        return _decode(part.get_payload(decode=True) or b"") or ""


# --------------------------------------------------------------------------
# Assembling the result
# --------------------------------------------------------------------------

_READERS: dict[str, Callable[[bytes], Iterator[str]]] = {
    "pdf": _read_pdf,
    "docx": _read_docx,
    "pptx": _read_pptx,
    "xlsx": _read_xlsx,
    "html": _read_html,
    "markdown": _read_text,
    "text": _read_text,
    "code": _read_text,
    "csv": _read_text,
    "tsv": _read_text,
    "json": _read_json,
    "epub": _read_epub,
    "email": _read_email,
}


def _collect(blocks: Iterator[str]) -> tuple[str, bool]:
    """Join blocks with blank lines, stopping early once the text budget is spent."""
    parts: list[str] = []
    size = 0
    with contextlib.closing(blocks):
        for block in blocks:
            block = block.strip("\n")
            if not block:
                continue
            parts.append(block)
            size += len(block) + 2
            if size > MAX_TEXT_CHARS:
                return "\n\n".join(parts), True
    return "\n\n".join(parts), False


_BLANK_LINE_RUNS = re.compile(r"(?:[ \t]*\n){4,}")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")


def _normalise(text: str) -> str:
    """One canonical form, so that 'café' typed on a Mac matches 'café' from Windows."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = unicodedata.normalize("NFC", text).lstrip("\ufeff")
    text = _BLANK_LINE_RUNS.sub("\n\n\n", text)
    return _LEADING_BLANK_LINES.sub("", text).rstrip()


def _context_only(path: Path, doc_type: str | None, kind: str) -> Extraction:
    return Extraction(text=context_descriptor(path, kind), doc_type=doc_type or "context", context_only=True)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args:  # str(KeyError) is a quoted repr
        message = f"missing part ({exc.args[0]})"
    else:
        message = str(exc) or type(exc).__name__
    message = " ".join(message.split())
    return message if len(message) <= 200 else message[:199] + "…"


def _name_words(name: str) -> str:
    """'Q3_revenueReport-final.pdf' -> 'Q3 revenue Report final pdf', for word-based search."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)
    return " ".join(re.split(r"[\W_]+", spaced)).strip()


def _sibling_names(path: Path, limit: int = 15) -> list[str]:
    """The first names (alphabetically) in the same folder, hidden files left out."""
    try:
        with os.scandir(path.parent) as entries:
            names = (entry.name for entry in entries if entry.name != path.name and not entry.name.startswith("."))
            return heapq.nsmallest(limit, names)
    except OSError:
        return []


def _human_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    value = size / 1024
    for unit in ("KB", "MB", "GB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TB"
