"""Deciding what a file is: by its name first, by its first bytes when the name says nothing."""

from __future__ import annotations

import io
import zipfile

from .registry import BY_EXTENSION, BY_FILENAME

_IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"II*\x00", b"MM\x00*")
_BMP_HEADER_SIZES = frozenset({12, 40, 52, 56, 64, 108, 124})  # "BM" alone starts too many text files
_ZIP_MEMBERS = (
    ("word/document.xml", "docx"),
    ("ppt/presentation.xml", "pptx"),
    ("xl/workbook.xml", "xlsx"),
)
_ZIP_MIMETYPES = {
    b"application/epub+zip": "epub",
    b"application/vnd.oasis.opendocument.text": "odt",
    b"application/vnd.oasis.opendocument.spreadsheet": "ods",
    b"application/vnd.oasis.opendocument.presentation": "odp",
}


def type_from_name(name: str) -> str | None:
    """The doc type a file's name (its extension, or a well-known name like Makefile) says it is."""
    lowered = name.lower()
    if lowered in BY_FILENAME:
        return BY_FILENAME[lowered].doc_type
    extension = lowered.rpartition(".")[2] if "." in lowered else ""
    extractor = BY_EXTENSION.get(extension)
    return extractor.doc_type if extractor else None


def sniff(data: bytes) -> str | None:
    """Guess the type of a file whose extension we don't know from its first bytes."""
    head = data[:1024].lstrip()
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        return _sniff_zip(data)
    if head[:14].lower().startswith((b"<!doctype html", b"<html")):
        return "html"
    if head.startswith(b"{\\rtf"):
        return "rtf"
    bitmap = data[:2] == b"BM" and int.from_bytes(data[14:18], "little") in _BMP_HEADER_SIZES
    if data.startswith(_IMAGE_MAGIC) or bitmap or (data[:4] == b"RIFF" and data[8:12] == b"WEBP"):
        return "image"
    return "text"  # the text reader gives up with NotText if the bytes are binary


def _sniff_zip(data: bytes) -> str | None:
    """Office documents, OpenDocument files and EPUBs are zips; tell them apart by their well-known members."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            if "mimetype" in names:
                mimetype = archive.read("mimetype") if archive.getinfo("mimetype").file_size < 200 else b""
                if mimetype.strip() in _ZIP_MIMETYPES:
                    return _ZIP_MIMETYPES[mimetype.strip()]
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    for member, doc_type in _ZIP_MEMBERS:
        if member in names:
            return doc_type
    return "archive"
