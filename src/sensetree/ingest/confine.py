"""The one confinement rule (design §5: never outside the roots), for indexing and for every reader.

A path is untrusted: from a model, a web request, or a catalog row that was true at the scan and
may not be now. It may climb out with ``..``, follow a symbolic link that leaves a root, name a
sibling that shares a prefix (``Docs`` vs ``DocsEvil``), another drive, or play on case where the
file system ignores it. So a path is checked as written (normalised, case-insensitive for
Windows paths) and as resolved on disk; and a file is checked again *after* it is opened: the
descriptor must be a regular file that is the very file its resolved path names inside a root
(same device and inode; on Windows, where stat and fstat may report different file IDs, the
resolved path alone). A file swapped for a link to somewhere else between the check (or the
scan) and the read is refused instead of read.

What indexing leaves out by the user's rules (hidden names, ``.gitignore``, ``.sensetreeignore``:
``walker.skip_reason``) is refused to readers too, as ``NotServed``.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from .. import fs_rules, paths
from ..errors import BadInput
from ..safe_text import without_surrogates
from .extract.archives import ignore_files
from .walker import InnerIgnores, inner_ignores, skip_reason

_DRIVE_OR_UNC = re.compile(r"^(?:[A-Za-z]:[\\/]|[\\/]{2})")
# Where stat() and fstat() report one identity (device, inode) for a file; on Windows they can
# differ (file IDs of 64 and 128 bits), and there the resolved-path check stands alone.
_SAME_IDENTITY = os.name != "nt"
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


class OutsideRoots(BadInput):
    """A path no reader may touch: outside the roots as written, or once links are resolved."""

    status = 403


class NotServed(OutsideRoots):
    """Inside a root, but left out of the index by the user's rules (hidden, ignored): not served either."""


@dataclass(frozen=True)
class Contents:
    """A file's bytes as read through the guard, and its state when it was opened."""

    data: bytes | None  # None: larger than the limit asked for, so not read
    stat: os.stat_result


class RootGuard:
    def __init__(self, roots: list[str] | tuple[str, ...], ignored: list[str] | tuple[str, ...] = ()):
        self.roots = [paths.normalize(r) for r in roots]
        self._real_roots = [_real(r) for r in self.roots]
        self._ignored = [paths.normalize(p) for p in ignored]  # left out with `sensetree ignore`

    def check(self, path: str) -> str:
        """The normalised path when it lies inside a root both as written and once links are resolved."""
        if not path or "\0" in path:
            raise OutsideRoots("an empty or malformed path")
        if not (os.path.isabs(path) or _DRIVE_OR_UNC.match(path)):
            path = self._relative(path)
        norm = paths.normalize(path)
        if not any(paths.is_under(norm, root) for root in self.roots):
            raise OutsideRoots(f"{path} is outside the folders you may read ({', '.join(self.roots) or 'none'})")
        if not self._inside_real(_real(norm)):
            raise OutsideRoots(f"{path} leads outside the folders you may read (through a link)")
        return fs_rules.true_case(norm)

    def check_served(self, path: str, ignored: bool = True) -> str:
        """``check``, and refused (``NotServed``) when indexing leaves the path out by the user's rules;
        with ``ignored`` False, what the user ignored with ``sensetree ignore`` is let through (its
        detail, without its text, so that it can be taken back)."""
        norm = self.check(path)
        root = max((r for r in self.roots if paths.is_under(norm, r)), key=len)
        reason = skip_reason(norm, root, self._ignores_of) or next(
            (
                f"{paths.name_of(p)} is ignored (`sensetree unignore` takes it back)"
                for p in self._ignored
                if ignored and paths.is_under(norm, p)
            ),
            None,
        )
        if reason:
            raise NotServed(f"{without_surrogates(paths.name_of(norm))}: {reason}")  # a name not UTF-8, shown safely
        return norm

    def _ignores_of(self, archive: Path) -> InnerIgnores:
        """The ignore files inside an archive on the way to a member, read through the guard."""
        try:
            with os.fdopen(self.open(str(archive)), "rb") as file:
                return inner_ignores(ignore_files(archive, file=file))
        except (OSError, OutsideRoots):
            return {}

    def allows(self, path: str) -> bool:
        try:
            self.check(path)
        except OutsideRoots:
            return False
        return True

    def open(self, path: str) -> int:
        """A descriptor of the regular file ``path``, checked after opening: it is the file that the
        resolved path names inside a root. FileNotFoundError when there is no regular file there."""
        fd = os.open(fs_rules.os_path(path), _OPEN_FLAGS)  # follows links: where one leads is checked below
        try:
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode):
                raise FileNotFoundError(errno.ENOENT, "not a regular file", path)
            real = _real(path)
            if not self._inside_real(real):
                raise OutsideRoots(f"{path} leads outside the folders you may read (through a link)")
            if _SAME_IDENTITY and not os.path.samestat(os.stat(real), opened):
                raise OutsideRoots(f"{path} was replaced while it was being opened")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def read(self, path: str, max_bytes: int) -> Contents:
        """The bytes of the file ``path``, opened through ``open``; none when it is over ``max_bytes``."""
        with os.fdopen(self.open(path), "rb") as file:
            opened = os.fstat(file.fileno())
            if opened.st_size > max_bytes:
                return Contents(None, opened)
            data = fs_rules.read_at_most(file, max_bytes + 1)  # one byte past the limit: the file may have grown
        return Contents(data if len(data) <= max_bytes else None, opened)

    def _inside_real(self, real: str) -> bool:
        return any(paths.is_under(real, root) for root in self._real_roots)

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
