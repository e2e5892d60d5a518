"""Roots, the explorer (listings, details, previews), opening a file, and per-file choices."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, Optional

from fastapi import APIRouter, Depends, HTTPException, Query

from ...reader import Unreadable
from ..explorer import Explorer
from .bodies import FolderModeBody, PathBody, SenseBody
from .context import ApiContext, context

router = APIRouter()


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


@router.get("/api/browse", summary="A folder's entries with their index status (the roots without a path)")
def browse(path: Optional[str] = None, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    return Explorer(ctx.engine).listing(path).as_dict()


@router.get("/api/file", summary="One file's or folder's detail: status, sense, chunks, last error")
def file_detail(path: str, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    return Explorer(ctx.engine).detail(path)


@router.get("/api/preview", summary="A file's extracted text, with the offsets of one chunk")
def preview(path: str, chunk: int = Query(0, ge=0), ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    try:
        shown = Explorer(ctx.engine).preview(path, chunk)
    except Unreadable as exc:
        raise HTTPException(422, str(exc)) from None
    ctx.engine.prioritize(shown["path"])  # the user is looking at it: its vectors come next
    return shown


@router.post("/api/open", summary="Open a file in the system's default application")
def open_file(body: PathBody, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    path = ctx.engine.reader().check(body.path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist")
    try:
        _open_with_system(path)
    except OSError as exc:
        raise HTTPException(501, f"cannot open files on this system: {exc}") from None
    return {"opened": path}


@router.post("/api/reindex", summary="Index a file, or every file under a folder, again")
def reindex(body: PathBody, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    count = ctx.engine.reindex(body.path)
    ctx.kick()
    return {"requeued": count}


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


def _open_with_system(path: str) -> None:
    if sys.platform == "win32":
        os.startfile(path)  # type: ignore[attr-defined]
    elif sys.platform == "darwin":
        subprocess.Popen(["open", path])
    else:
        subprocess.Popen(["xdg-open", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
