"""What the catalog adds to a search: whether the scope is one, how much of it has vectors, every copy of a result."""

from __future__ import annotations

import os
import sqlite3
import time

from .. import paths
from ..store.catalog import Catalog
from .types import SearchResponse


def scope_problem(scope: str | None, roots: list[str], mounted: bool = True) -> str | None:
    """Why ``scope`` cannot be searched, or None; a node that does not mount the roots takes a scope it cannot see."""
    if scope and not any(paths.is_under(scope, root) for root in roots):
        return f"{scope} is outside every indexed root ({', '.join(roots) or 'none yet'})"
    if scope and not os.path.isdir(scope) and (mounted or os.path.exists(scope)):
        return f"{scope} is a file; a scope is a folder" if os.path.exists(scope) else f"{scope} does not exist"
    return None


def offline_notices(catalog: Catalog, scope: str | None = None) -> list[str]:
    """One line per offline root that the scope reaches: its files are kept but cannot be shown."""
    try:
        offline = catalog.roots.offline()
    except sqlite3.OperationalError:
        return []
    return [
        offline_notice(root, since)
        for root, since in offline.items()
        if scope is None or paths.is_under(scope, root) or paths.is_under(root, scope)
    ]


def offline_notice(root: str, since: float) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(since))
    return (
        f"{root} is offline (missing or unreadable since {when}): its files stay in the index, left out of "
        "results until it is back; `sensetree remove` drops them"
    )


def coverage(catalog: Catalog, scope: str | None) -> tuple[int, int] | None:
    """(files, of them embedded) in the scope while some still wait for vectors, else None; a scope
    the user looks into moves to the front of the queue."""
    folder = paths.normalize(scope) if scope else None
    try:
        if not catalog.files.waiting_under(folder):
            return None
        if folder:
            catalog.states.prioritize(folder)
        return catalog.files.coverage(folder)
    except sqlite3.OperationalError:  # a busy or read-only catalog: the figures are a courtesy
        return None


def list_copies(catalog: Catalog, response: SearchResponse) -> None:
    """Every other place a result's content is found, not only the copies that ranked. Of the identical
    copies that ranked (their chunks tie), the first by path stands for them, so the same file
    represents them from one run to the next (which one ranked first was LanceDB's order)."""
    for result in response.results:
        if result.duplicates:
            places = sorted({result.path, *result.duplicates})
            result.path, result.name = places[0], paths.name_of(places[0])
            result.duplicates = places[1:]
    hashes = {r.content_hash: r for r in response.results if r.content_hash}
    for content_hash, copies in catalog.files.with_hashes(hashes).items():
        result = hashes[content_hash]
        result.duplicates = sorted(set(result.duplicates) | {p for p in copies if p != result.path})
