"""Roots, the explorer (listings, details, previews), opening a file, and per-file choices."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any, Optional

from fastapi import APIRouter, Depends, HTTPException, Query, Response

from ...reader import archive_of
from .bodies import FolderModeBody, OpenBody, PathBody, SenseBody
from .context import ApiContext, context

router = APIRouter()
MAX_CHUNK_INDEX = 2**31 - 1  # chunk numbers are stored as 32-bit integers


@router.get("/api/roots")
def roots(ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    return {"roots": ctx.engine.roots()}


@router.post("/api/roots", summary="Add a folder to index in place")
def add_root(body: PathBody, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    root = ctx.engine.add_root(body.path)
    ctx.kick()
    return {"root": root}


@router.delete("/api/roots", summary="Stop indexing a folder; its entries leave the index")
def remove_root(path: str, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    with ctx.exclusive():
        return {"removed": ctx.engine.remove_root(path)}


@router.get("/api/file", summary="One file's or folder's detail: status, sense, chunks, last error")
def file_detail(path: str, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    return ctx.engine.explorer().detail(path)


@router.get("/api/preview", summary="A file's extracted text, with the offsets of one chunk (and of a range to mark)")
def preview(path: str, chunk: int = Query(0, ge=0, le=MAX_CHUNK_INDEX),
            mark: Optional[str] = Query(None, pattern=r"^\d{1,9},\d{1,9}$",
                                        description="start,end: characters of the text to mark (a cited sentence)"),
            ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    start, _, end = (mark or "").partition(",")
    shown = ctx.engine.explorer().preview(path, chunk, (int(start), int(end)) if mark else None)
    ctx.engine.prioritize(shown["path"])  # the user is looking at it: its vectors come next
    return shown


@router.get("/api/page", summary="A page of a PDF, rendered as a PNG (the preview marks a cited sentence on it)",
            response_class=Response, responses={200: {"content": {"image/png": {}}}})
def page_image(path: str, page: int = Query(1, ge=1, le=MAX_CHUNK_INDEX),
               ctx: ApiContext = Depends(context)) -> Response:
    return Response(ctx.engine.explorer().page_image(path, page), media_type="image/png",
                    headers={"Cache-Control": "private, max-age=60"})


@router.post("/api/open", summary="Open a file in the system's default application (at a page, where it takes one)")
def open_file(body: OpenBody, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    path = ctx.engine.reader().check(body.path)
    opened = path if os.path.exists(path) else archive_of(path)  # a member opens as its archive
    if opened is None:
        raise FileNotFoundError(f"{path} does not exist")
    try:
        at_page = _open_with_system(opened, body.page if opened == path else None)
    except OSError as exc:
        raise HTTPException(501, f"cannot open files on this system: {exc}") from None
    return {"opened": opened, "page": at_page}


@router.post("/api/folder-mode", summary="Treat a folder as one block, or index its contents file by file")
def folder_mode(body: FolderModeBody, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    if body.mode not in (None, "block", "recursive"):
        raise HTTPException(422, "mode is block, recursive or null")
    path = ctx.engine.set_block(body.path, body.mode)
    ctx.kick()
    return {"path": path, "mode": body.mode}


@router.put("/api/sense", summary="Correct a file's sense by hand; it stays pinned")
def pin_sense(body: SenseBody, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    ctx.engine.reader().check(body.path)
    ctx.engine.pin_sense(body.path, body.sense)
    ctx.kick()
    return {"path": body.path, "sense": body.sense.strip(), "pinned": True}


# PDF viewers that take a page on their command line, as the desktop's default for PDFs names them.
PAGE_ARGUMENTS = {"org.gnome.Evince": ["evince", "--page-index={page}"], "evince": ["evince", "--page-index={page}"],
                  "okularApplication_pdf": ["okular", "--page", "{page}"], "org.kde.okular": ["okular", "--page", "{page}"],
                  "org.pwmt.zathura": ["zathura", "--page={page}"], "xreader": ["xreader", "--page-index={page}"]}


def _open_with_system(path: str, page: int | None) -> int | None:
    """Open ``path`` with the desktop's application; at ``page`` when that application takes one.
    Returns the page it was opened at, or None."""
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    if sys.platform == "win32":
        os.startfile(path)  # type: ignore[attr-defined]
        return None
    if sys.platform == "darwin":
        subprocess.Popen(["open", path])
        return None
    if page and path.lower().endswith(".pdf") and shutil.which("xdg-mime"):
        default = subprocess.run(["xdg-mime", "query", "default", "application/pdf"], capture_output=True,
                                 text=True, timeout=5).stdout.strip().removesuffix(".desktop")
        command = PAGE_ARGUMENTS.get(default)
        if command and shutil.which(command[0]):
            subprocess.Popen([part.format(page=page) for part in command] + [path], **quiet)
            return page
    subprocess.Popen(["xdg-open", path], **quiet)
    return None
