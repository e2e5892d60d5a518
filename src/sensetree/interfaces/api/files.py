"""Opening a file with the system's application (the roots, a file's detail, its preview, its sense and a
folder's mode are engine operations: ``operations.py``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query, Response

from ...errors import NotFound
from ...handlers import files
from ...reader import archive_of
from .bodies import OpenBody
from .context import ApiContext, context

router = APIRouter()
MAX_PAGE = 2**31 - 1  # what PDFium counts pages in


@router.get("/api/page", summary="A page of a PDF, rendered as a PNG (the preview marks a cited sentence on it)",
            response_class=Response, responses={200: {"content": {"image/png": {}}}})
def page_image(path: str, page: int = Query(1, ge=1, le=MAX_PAGE), ctx: ApiContext = Depends(context)) -> Response:
    return Response(files.page_image(ctx.engine, path, page), media_type="image/png",
                    headers={"Cache-Control": "private, max-age=60"})


@router.post("/api/open", summary="Open a file in the system's default application (at a page, where it takes one)")
def open_file(body: OpenBody, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    path = ctx.engine.reader().check(body.path)
    opened = path if os.path.exists(path) else archive_of(path)  # a member opens as its archive
    if opened is None:
        raise NotFound(f"{path} does not exist")
    try:
        at_page = _open_with_system(opened, body.page if opened == path else None)
    except OSError as exc:
        raise HTTPException(501, f"cannot open files on this system: {exc}") from None
    return {"opened": opened, "page": at_page}


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
