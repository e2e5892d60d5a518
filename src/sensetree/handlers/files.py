"""One file or folder as the web app, MCP and the assistant show it: a listing with index statuses,
a file's detail, its text at a chunk, a PDF page as an image (``explorer.py``, through the ``Reader``)."""

from __future__ import annotations

from ..answers import FileDetail, Listing, Preview
from ..context import Context
from ..explorer import Explorer
from ..operations import BrowseParams, FileParams, PreviewParams
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


def prioritize(ctx: Context, path: str) -> None:
    """The user opened this file: index it next."""
    ctx.bring_forward([path])


def page_image(ctx: Context, path: str, page: int) -> bytes:
    """Page ``page`` of a PDF inside the roots as a PNG: the preview shows a cited sentence where it is printed."""
    return explorer(ctx).page_image(path, page)


def chunk_text(ctx: Context, path: str, chunk_index: int) -> str | None:
    """The stored text of one chunk (a result's whole passage; its snippet is only a part)."""
    return ctx.store.queries.chunk_text(path, chunk_index)
