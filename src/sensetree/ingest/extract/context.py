"""What a file whose content cannot be read is indexed by: its name, folder, type, size and neighbours."""

from __future__ import annotations

import contextlib
import heapq
import os
import re
from pathlib import Path

from ...safe_text import has_surrogates
from .base import human_size
from .normalise import normalise


def context_descriptor(path: Path, kind: str, *, size: int | None = None) -> str:
    """Describe a file whose content we cannot read.

    The name (also split into words), folder, type, size and a few neighbours
    keep the file findable ("where is my model.blend?") and give the embedding
    some topic to go on. ``size`` stands in for the file's own when it is not on
    disk (an archive member).
    """
    path = Path(path)
    lines = [f"File: {path.name}"]
    words = _name_words(path.name)
    if words and words != path.name:
        lines.append(f"Name: {words}")
    lines.append(f"Folder: {path.parent}")
    suffix = path.suffix.lower()
    lines.append(f"Type: {kind}, {suffix} extension" if suffix else f"Type: {kind}, no extension")
    if size is None:
        with contextlib.suppress(OSError):
            size = path.stat().st_size
    if size is not None:
        lines.append(f"Size: {human_size(size)}")
    siblings = _sibling_names(path)
    if siblings:
        lines.append("Other files in this folder: " + ", ".join(siblings))
    return normalise("\n".join(lines))


def _name_words(name: str) -> str:
    """'Q3_revenueReport-final.pdf' -> 'Q3 revenue Report final pdf', for word-based search."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)
    return " ".join(re.split(r"[\W_]+", spaced)).strip()


def _sibling_names(path: Path, limit: int = 15) -> list[str]:
    """The first names (alphabetically) in the same folder, hidden files left out, and names that are not
    UTF-8 too: no stored text can hold them, and a neighbour's odd name must not fail this file."""
    try:
        with os.scandir(path.parent) as entries:
            names = (
                entry.name
                for entry in entries
                if entry.name != path.name and not entry.name.startswith(".") and not has_surrogates(entry.name)
            )
            return heapq.nsmallest(limit, names)
    except OSError:
        return []
