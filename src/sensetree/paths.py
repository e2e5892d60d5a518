"""Path rules shared by indexing, scoping and confinement.

Paths are stored as absolute native strings. A path that looks like a Windows path
(``C:\\...`` or ``\\\\server\\share``) follows Windows rules wherever we run: backslash
separators and case-insensitive matching, as the Windows file system does (design §4). A POSIX
path is matched case-insensitively when its file system ignores case (macOS by default, FAT,
a casefold folder): ``fs_rules`` probes that once per folder.
"""

from __future__ import annotations

import os
import re

from . import fs_rules
from .fs_rules import is_windows_path  # noqa: F401  (paths.is_windows_path, as callers know it)


def normalize(path: str) -> str:
    """Absolute path with one kind of separator and no trailing separator (except a root); Windows's
    extended-length form (``\\\\?\\C:\\...``) is read as the path it stands for."""
    if path.startswith(("\\\\?\\", "//?/")):
        path = "\\\\" + path[8:] if path[4:8].upper() in ("UNC\\", "UNC/") else path[4:]
    if is_windows_path(path):
        unc = path[:2] in ("\\\\", "//")
        parts = [p for p in re.split(r"[\\/]+", path) if p and p != "."]
        resolved: list[str] = []
        for part in parts:
            if part == ".." and len(resolved) > (2 if unc else 1):
                resolved.pop()
            elif part != "..":
                resolved.append(part)
        if unc:
            return "\\\\" + "\\".join(resolved)
        drive, rest = resolved[0], resolved[1:]
        return drive.upper() + "\\" + "\\".join(rest)
    return os.path.normpath(os.path.abspath(os.path.expanduser(path)))


def folder_prefix(folder: str) -> str:
    """The folder with exactly one trailing separator: ``C:\\Docs`` covers ``C:\\Docs\\x``, not ``C:\\DocsEvil``."""
    norm = normalize(folder)
    sep = "\\" if is_windows_path(norm) else "/"
    return norm if norm.endswith(sep) else norm + sep


def sql_literal(text: str) -> str:
    """A SQL string literal; DataFusion treats backslashes literally, so only quotes are doubled."""
    return "'" + text.replace("'", "''") + "'"


def _fold(text: str) -> str:
    """Case-fold a Windows path the way LanceDB can too: ``lower(upper(x))``.

    Windows compares names by their upper case, so ``µ`` (micro sign), ``μ`` and ``Μ`` name one
    folder; ``lower()`` alone keeps ``µ`` apart. DataFusion has ``upper`` and ``lower`` with the
    same full Unicode mappings as Python, so both sides fold alike.
    """
    return text.upper().lower()


def folds_case(path: str) -> bool:
    """Whether paths at or under ``path`` compare case-insensitively: Windows paths, and POSIX paths on a
    file system that ignores case."""
    return is_windows_path(path) or fs_rules.folds_case(path)


def scope_predicate(scope: str) -> str:
    """A LanceDB filter matching every path under ``scope``.

    ``starts_with`` needs no LIKE escaping (``100%_backup`` is not a wildcard) and is
    rewritten by DataFusion into an index-backed prefix scan on the BTREE over ``path``.
    Windows paths, and paths on a file system that ignores case, match case-insensitively, at the
    cost of the index.
    """
    prefix = folder_prefix(scope)
    if folds_case(scope):
        return f"starts_with(lower(upper(path)), {sql_literal(_fold(prefix))})"
    return f"starts_with(path, {sql_literal(prefix)})"


def any_scope_predicate(scopes: list[str]) -> str:
    return " OR ".join(f"({scope_predicate(s)})" for s in scopes)


def path_key(path: str) -> str:
    """The form two paths are compared in: case-folded where their file system ignores case."""
    norm = normalize(path)
    return _fold(norm) if folds_case(norm) else norm


def is_under(path: str, folder: str) -> bool:
    """True when ``path`` is ``folder`` itself or inside it, on a segment boundary."""
    # path_key() normalises, which would strip the trailing separator folder_prefix() adds
    # (``C:\\Docs`` would then cover ``C:\\DocsEvil``): case-fold the prefix, keep the separator.
    fold = _fold if folds_case(folder) else str
    key = fold(normalize(path))
    return key == fold(normalize(folder)) or key.startswith(fold(folder_prefix(folder)))


def name_of(path: str) -> str:
    sep = "\\" if is_windows_path(path) else "/"
    return path.rstrip(sep).rsplit(sep, 1)[-1]
