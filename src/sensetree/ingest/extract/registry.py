"""The one table of formats: each extractor, the names it answers to and what reads it.

The list of formats in docs/reference.md is generated from this table (`formats_markdown`, through
``python -m sensetree.interfaces.reference``) and a test checks the two agree.
"""

from __future__ import annotations

from collections.abc import Iterable

from .archives import EXTENSIONS as ARCHIVE_EXTENSIONS
from .archives import read_archive
from .base import Extractor
from .epub import read_epub
from .html import read_html
from .images import read_image
from .mail import read_email, read_msg
from .office import (
    read_docx,
    read_legacy_powerpoint,
    read_legacy_word,
    read_pptx,
    read_rtf,
    read_xls,
    read_xlsx,
)
from .opendocument import read_odp, read_ods, read_odt
from .pdf import read_pdf
from .text import read_json, read_notebook, read_text

_CODE_EXTENSIONS = tuple(
    """
    py pyi pyw pyx js mjs cjs ts tsx jsx vue svelte java c h cc cpp cxx hpp hh hxx
    cs fs fsx go rs rb php swift kt kts scala groovy gradle dart sh bash zsh fish ps1 psm1
    bat cmd sql r jl lua pl pm m mm hs ml mli ex exs erl clj cljs el lisp scm nim zig sol
    proto graphql gql yaml yml toml ini cfg conf properties xml xsd xsl css scss sass less
    tex bib sty rst org adoc asciidoc cmake mk dockerfile tf hcl
    """.split()
)
_CODE_FILENAMES = tuple(
    "makefile dockerfile containerfile jenkinsfile vagrantfile rakefile gemfile procfile cmakelists.txt".split()
)

EXTRACTORS: tuple[Extractor, ...] = (
    Extractor("text", "text file", ("txt", "text", "log"), read_text, "UTF-8, byte order marks, charset-normalizer"),
    Extractor("markdown", "Markdown", ("md", "markdown", "mdown", "mkd", "mdx"), read_text, "as text"),
    Extractor("code", "source file", _CODE_EXTENSIONS, read_text, "as text", filenames=_CODE_FILENAMES),
    Extractor("csv", "CSV", ("csv",), read_text, "as text"),
    Extractor("tsv", "TSV", ("tsv", "tab"), read_text, "as text"),
    Extractor("json", "JSON", ("json", "jsonl", "ndjson", "geojson"), read_json, "standard library (pretty-printed)"),
    Extractor("html", "HTML", ("html", "htm", "xhtml"), read_html, "selectolax (lexbor), scripts and styles dropped"),
    Extractor("notebook", "Jupyter notebook", ("ipynb",), read_notebook, "standard library (markdown and code cells)"),
    Extractor("pdf", "PDF", ("pdf",), read_pdf, "pypdfium2 (PDFium); pages without a text layer by OCR"),
    Extractor(
        "image",
        "image",
        ("png", "jpg", "jpeg", "jpe", "tif", "tiff", "webp", "bmp", "gif"),
        read_image,
        "Pillow, then OCR (RapidOCR, bundled models)",
    ),
    Extractor("docx", "DOCX", ("docx",), read_docx, "python-docx"),
    Extractor("pptx", "PPTX", ("pptx",), read_pptx, "python-pptx"),
    Extractor("xlsx", "XLSX", ("xlsx", "xlsm"), read_xlsx, "openpyxl (read-only, cached values)"),
    Extractor("xls", "XLS", ("xls",), read_xls, "xlrd"),
    Extractor("doc", "Word 97-2003 document", ("doc",), read_legacy_word, "context only: no well-kept reader"),
    Extractor(
        "ppt", "PowerPoint 97-2003 presentation", ("ppt",), read_legacy_powerpoint, "context only: no well-kept reader"
    ),
    Extractor("rtf", "RTF", ("rtf",), read_rtf, "striprtf"),
    Extractor("odt", "ODT", ("odt",), read_odt, "lxml, from content.xml"),
    Extractor("ods", "ODS", ("ods",), read_ods, "lxml, from content.xml"),
    Extractor("odp", "ODP", ("odp",), read_odp, "lxml, from content.xml"),
    Extractor("epub", "EPUB", ("epub",), read_epub, "ebooklib (spine order)"),
    Extractor("email", "email", ("eml",), read_email, "standard library"),
    Extractor("msg", "Outlook message", ("msg",), read_msg, "python-oxmsg"),
    Extractor(
        "archive",
        "archive",
        ARCHIVE_EXTENSIONS,
        read_archive,
        "standard library; each member is also indexed as a file of its own",
    ),
)

BY_TYPE: dict[str, Extractor] = {extractor.doc_type: extractor for extractor in EXTRACTORS}
BY_EXTENSION: dict[str, Extractor] = {ext: extractor for extractor in EXTRACTORS for ext in extractor.extensions}
BY_FILENAME: dict[str, Extractor] = {name: extractor for extractor in EXTRACTORS for name in extractor.filenames}


def formats_markdown() -> str:
    """The table of formats (docs/reference.md), one row per extractor."""
    rows = ["| format | extensions | read by |", "|---|---|---|"]
    for extractor in EXTRACTORS:
        names = [f"`.{ext}`" for ext in extractor.extensions] + [f"`{name}`" for name in extractor.filenames]
        rows.append(f"| {extractor.label} | {', '.join(names)} | {extractor.library} |")
    return "\n".join(rows)


if __name__ == "__main__":  # python -m sensetree.ingest.extract.registry: the table alone
    print(formats_markdown())


def resolve_types(names: Iterable[str]) -> tuple[str, ...]:
    """The document types a user means by ``pdf,docx,md,jpg``: a type's name, or an extension it answers
    to (``md`` is markdown, ``jpg`` an image). ValueError, saying which names are known, for any other."""
    found: list[str] = []
    for name in names:
        key = name.strip().lower().lstrip(".")
        if not key:
            continue
        extractor = BY_TYPE.get(key) or BY_EXTENSION.get(key)
        if extractor is None:
            raise ValueError(
                f"unknown file type {name!r}; use a type ({', '.join(sorted(BY_TYPE))}) "
                "or a file extension such as md or jpg"
            )
        found.append(extractor.doc_type)
    return tuple(dict.fromkeys(found))
