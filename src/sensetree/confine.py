"""Confinement: the one check that keeps every reader (chat tools, MCP, HTTP preview) inside the roots.

A path from a model or a web request is untrusted: it may climb out with ``..``, follow a
symbolic link that leaves a root, name a sibling that shares a prefix (``Docs`` vs ``DocsEvil``),
another drive, or play on case where the file system ignores it. Every path is checked twice:
as written (normalised, case-insensitive for Windows paths) and as resolved on disk.
"""

from __future__ import annotations

import os
import re

from . import paths

_DRIVE_OR_UNC = re.compile(r"^(?:[A-Za-z]:[\\/]|[\\/]{2})")


class OutsideRoots(ValueError):
    """A path no reader may touch: outside the roots as written, or once links are resolved."""


class RootGuard:
    def __init__(self, roots: list[str]):
        self.roots = [paths.normalize(r) for r in roots]
        self._real_roots = [_real(r) for r in self.roots]

    def check(self, path: str) -> str:
        """The normalised path when it lies inside a root both as written and once links are resolved."""
        if not path or "\0" in path:
            raise OutsideRoots("an empty or malformed path")
        if not (os.path.isabs(path) or _DRIVE_OR_UNC.match(path)):
            path = self._relative(path)
        norm = paths.normalize(path)
        if not any(paths.is_under(norm, root) for root in self.roots):
            raise OutsideRoots(f"{path} is outside the folders you may read ({', '.join(self.roots) or 'none'})")
        real = _real(norm)
        if not any(paths.is_under(real, root) for root in self._real_roots):
            raise OutsideRoots(f"{path} leads outside the folders you may read (through a link)")
        return norm

    def _relative(self, path: str) -> str:
        """A relative path is taken in the first root that has it (models often drop the root)."""
        for root in self.roots:
            candidate = os.path.join(root, path)
            if os.path.lexists(candidate):
                return candidate
        return os.path.join(self.roots[0], path) if self.roots else path


def _real(path: str) -> str:
    """Links resolved; a Windows-style path on another OS cannot exist here, so it stays as written."""
    if paths.is_windows_path(path) and os.name != "nt":
        return path
    return paths.normalize(os.path.realpath(path))
