"""The disk scan: compare what is under the roots with the catalog, by stat only (no hashing).

New and changed entries are queued for the keyword phase, deleted ones leave the catalog and
the store. A file counts as changed when its kind, size or modification time moved, or, where
the OS has them, its inode change time or inode number: a rewrite that restores size and mtime
(``cp -p``, ``rsync -t``, ``touch -r``) still moves those. The content hash, computed later by
the keyword phase, decides whether a change really changed anything. The members of an archive
are not on disk to be seen: they leave with their archive, and are read again when it changes.

A root that is missing, unreadable or an empty mount point (its device changed) is *offline*:
its entries are kept (search leaves them out, since they are not on disk, and says why) and it
resumes without re-indexing when it is back. Only ``sensetree remove`` drops a root's entries.
Likewise, what is known under a folder that cannot be listed is kept, not purged.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import PurePath

from .. import paths
from ..store.catalog import Catalog, DiskState
from ..store.chunks import ChunkStore
from .walker import Entry, walk


@dataclass(frozen=True)
class ScanReport:
    new: int
    changed: int
    deleted: int
    seconds: float
    offline: tuple[str, ...] = ()  # roots missing or unreadable now: their entries are kept
    back: tuple[str, ...] = ()  # roots that were offline and are back


def scan(catalog: Catalog, store: ChunkStore, exclude: str) -> ScanReport:
    """Queue new and changed entries under every root, purge deleted ones; ``exclude`` is our own data dir."""
    started = time.perf_counter()
    manual = catalog.roots.folder_modes()
    exclude = paths.path_key(exclude)
    was_offline = catalog.roots.offline()
    new = changed = 0
    deleted: list[str] = []
    offline, back = [], []
    for root in catalog.roots.all():
        known = catalog.files.in_root(root)
        device = _online_device(root, catalog, bool(known))
        if device is None:
            catalog.roots.set_offline(root)
            offline.append(root)
            continue
        seen: set[str] = set()
        queued, stamps = [], []
        unreadable: list[str] = []
        for entry in walk(root, manual, unreadable):
            if paths.is_under(entry.path, exclude):
                continue
            seen.add(entry.path)
            old = known.get(entry.path)
            if old is None:
                new += 1
            elif _changed(old, entry):
                changed += 1
            else:
                if (old.ctime, old.inode) != (entry.ctime, entry.inode):  # a row from before those columns
                    stamps.append((entry.ctime, entry.inode, entry.path))
                continue
            queued.append(
                (entry.path, root, entry.kind, entry.size, entry.mtime, entry.members, entry.ctime, entry.inode)
            )
        if root in unreadable:  # it went away or closed while being walked: keep everything
            catalog.roots.set_offline(root)
            offline.append(root)
            continue
        catalog.states.upsert_pending(queued)
        catalog.states.set_identity(stamps)
        catalog.roots.set_online(root, device)
        if root in was_offline:
            back.append(root)
        deleted += _gone(known, seen, unreadable)
    if deleted:
        store.writes.delete_paths(deleted)
        catalog.states.delete(deleted)
    return ScanReport(new, changed, len(deleted), time.perf_counter() - started, tuple(offline), tuple(back))


def _online_device(root: str, catalog: Catalog, has_entries: bool) -> int | None:
    """The device the root is on, or None when it is offline: missing, not a folder, unreadable, or
    empty on another device than at its last scan (an unmounted drive leaves its empty mount point)."""
    try:
        device = os.stat(root).st_dev
        with os.scandir(root) as listing:
            empty = next(listing, None) is None
    except (OSError, ValueError):
        return None
    if not os.path.isdir(root):
        return None
    if empty and has_entries and catalog.roots.device(root) != device:  # unknown (an older catalog) counts as other
        return None
    return device


def _changed(old: DiskState, entry: Entry) -> bool:
    if (old.kind, old.size, old.mtime) != (entry.kind, entry.size, entry.mtime):
        return True
    return any(
        before is not None and now is not None and before != now
        for before, now in ((old.ctime, entry.ctime), (old.inode, entry.inode))
    )


def _gone(known: dict[str, DiskState], seen: set[str], unreadable: list[str]) -> list[str]:
    """Known entries no longer on disk: not seen, not under a folder that could not be listed, and the
    members of archives that are gone (unless a file now stands at a member's path: a folder took the
    archive's name)."""

    def kept(path: str) -> bool:
        return path in seen or any(paths.is_under(path, folder) for folder in unreadable)

    gone = {p for p, state in known.items() if state.kind != "member" and not kept(p)}
    members = [
        p
        for p, state in known.items()
        if state.kind == "member" and not kept(p) and any(str(up) in gone for up in PurePath(p).parents)
    ]
    return [*gone, *members]
