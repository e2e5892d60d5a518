"""One file or folder as the web app, MCP and the assistant show it: a listing with index statuses,
a file's detail, its text at a chunk or as a model reads it, a PDF page as an image (``explorer.py``,
through the ``Reader``), and the file opened in the desktop's application."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from ..answers import FileContents, FileDetail, Listing, Opened, PageImage, Preview
from ..context import Context
from ..errors import NotFound, Unsupported
from ..explorer import Explorer
from ..operations import (
    READ_CHARS,
    BrowseParams,
    FileParams,
    OpenParams,
    PageParams,
    PreviewParams,
    ReadParams,
)
from ..reader import archive_of
from .registry import handles


def explorer(ctx: Context) -> Explorer:
    """Listings with index statuses, a file's detail, its text at a chunk (the web app, MCP)."""
    return Explorer(ctx.reader(), ctx.catalog, ctx.store)


@handles
def browse(ctx: Context, params: BrowseParams) -> Listing:
    """A folder's entries with their index statuses (``sensetree browse``, the explorer, MCP)."""
    return explorer(ctx).listing(params.path)


@handles
def file_detail(ctx: Context, params: FileParams) -> FileDetail:
    """Everything the web app's detail panel shows about one file or folder."""
    return FileDetail(**explorer(ctx).detail(params.path))


@handles
def preview(ctx: Context, params: PreviewParams) -> Preview:
    """A file's text with where one chunk (and the range ``mark``) sits in it; the file is indexed next:
    someone is looking at it."""
    start, _, end = (params.mark or "").partition(",")
    shown = explorer(ctx).preview(params.path, params.chunk, (int(start), int(end)) if params.mark else None)
    prioritize(ctx, shown["path"])
    return Preview(**shown)


@handles
def read(ctx: Context, params: ReadParams) -> FileContents:
    """A file's text as a model reads it (MCP's and the assistant's ``read_file``): the first ``READ_CHARS``
    characters, through the confined reader."""
    read = ctx.reader().read_text(params.path, READ_CHARS)
    note = None
    if read.truncated:
        note = f"only the first {READ_CHARS} of {read.total_chars} characters are shown"
    elif read.context_only:
        note = "the content could not be read; the text describes the file instead"
    return FileContents(
        path=read.path,
        name=read.name,
        doc_type=read.doc_type,
        context_only=read.context_only,
        text=read.text,
        total_chars=read.total_chars,
        truncated=read.truncated,
        note=note,
    )


def prioritize(ctx: Context, path: str) -> None:
    """The user opened this file: index it next."""
    ctx.bring_forward([path])


@handles
def page(ctx: Context, params: PageParams) -> PageImage:
    """A page of a PDF inside the roots as a PNG: the preview shows a cited sentence where it is printed."""
    return PageImage(explorer(ctx).page_image(params.path, params.page))


@handles
def open_file(ctx: Context, params: OpenParams) -> Opened:
    """Open a file inside the roots with the desktop's application (a member of an archive: its archive), at
    ``page`` where that application takes one; ``Unsupported`` where there is none to open it with."""
    path = ctx.reader().check(params.path)
    opened = path if os.path.exists(path) else archive_of(path)
    if opened is None:
        raise NotFound(f"{path} does not exist")
    try:
        at_page = open_with_system(opened, params.page if opened == path else None)
    except OSError as exc:
        raise Unsupported(f"cannot open files on this system: {exc}") from None
    return Opened(opened, at_page)


# PDF viewers that take a page on their command line, as the desktop's default for PDFs names them.
PAGE_ARGUMENTS = {
    "org.gnome.Evince": ["evince", "--page-index={page}"],
    "evince": ["evince", "--page-index={page}"],
    "okularApplication_pdf": ["okular", "--page", "{page}"],
    "org.kde.okular": ["okular", "--page", "{page}"],
    "org.pwmt.zathura": ["zathura", "--page={page}"],
    "xreader": ["xreader", "--page-index={page}"],
}


def open_with_system(path: str, page: int | None) -> int | None:
    """Open ``path`` with the desktop's application; at ``page`` when that application takes one.
    Returns the page it was opened at, or None."""
    if sys.platform == "win32":
        os.startfile(path)  # type: ignore[attr-defined]
        return None
    if sys.platform == "darwin":
        subprocess.Popen(["open", path])
        return None
    if page and path.lower().endswith(".pdf") and shutil.which("xdg-mime"):
        default = (
            subprocess.run(
                ["xdg-mime", "query", "default", "application/pdf"], capture_output=True, text=True, timeout=5
            )
            .stdout.strip()
            .removesuffix(".desktop")
        )
        command = PAGE_ARGUMENTS.get(default)
        if command and shutil.which(command[0]):
            subprocess.Popen(
                [part.format(page=page) for part in command] + [path],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            return page
    subprocess.Popen(["xdg-open", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return None


def chunk_text(ctx: Context, path: str, chunk_index: int) -> str | None:
    """The stored text of one chunk (a result's whole passage; its snippet is only a part)."""
    return ctx.store.queries.chunk_text(path, chunk_index)
