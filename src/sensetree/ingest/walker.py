"""Walk a root: what to index, what to skip, and which folders are blocks (design §1.1).

Skipped: hidden files and folders, OS litter, anything matched by a ``.gitignore`` or
``.sensetreeignore`` in the folder or above it (up to the root), symbolic links to
folders (they can loop or leave the root) and links to files outside the root (their text
would reach search snippets and the assistant from a place the user never chose to index). A *block* folder (virtualenv, node_modules,
build output, cache, application bundle, a folder dominated by opaque binaries) becomes
one entry describing it; its contents are not searchable one by one. A manual choice
(``sensetree block`` / ``unblock``, or ``ignore`` from the queue) always wins, and a root is never a block.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping

import pathspec

from ..safe_text import has_surrogates

log = logging.getLogger(__name__)
IGNORE_FILES = (".gitignore", ".sensetreeignore")
MAX_IGNORE_BYTES = 256 * 1024
"""An ignore file inside an archive larger than this is not read (decompressed, and compiled pattern by
pattern: 256 KB of patterns take seconds); the members below its folder are held back instead."""
OS_LITTER = {".ds_store", "thumbs.db", "desktop.ini", "icon\r"}

BLOCK_NAMES = {
    "node_modules",
    "site-packages",
    "dist-packages",
    "__pycache__",
    "bower_components",
    "vendor",
    "pods",
    "deriveddata",
    "venv",
    "virtualenv",
    ".venv",
    "env",
    "cache",
    "caches",
    "__macosx",
    "$recycle.bin",
}
BLOCK_MARKERS = {"pyvenv.cfg", "CACHEDIR.TAG", ".rustc_info.json", "conda-meta"}
BUNDLE_SUFFIXES = (
    ".app",
    ".framework",
    ".bundle",
    ".vst",
    ".vst3",
    ".component",
    ".aaxplugin",
    ".lrcat",
    ".lrdata",
    ".photoslibrary",
    ".xcassets",
    ".xcodeproj",
    ".xcworkspace",
    ".plugin",
    ".kext",
)
BUILD_NAMES = {"build", "dist", "out", "target", "bin", "obj", ".gradle", "cmake-build-debug", "cmake-build-release"}
OPAQUE_EXTENSIONS = {
    ".o",
    ".obj",
    ".a",
    ".lib",
    ".so",
    ".dll",
    ".dylib",
    ".exe",
    ".class",
    ".jar",
    ".pyc",
    ".pyo",
    ".wasm",
    ".node",
    ".bin",
    ".dat",
    ".pak",
    ".idx",
    ".pack",
    ".rlib",
    ".rmeta",
    ".d",
    ".pdb",
    ".ilk",
    ".nki",
    ".nkx",
    ".ncw",
    ".fxp",
    ".fxb",
    ".adg",
    ".adv",
    ".als",
    ".asd",
    ".sf2",
    ".db-wal",
    ".db-shm",
    ".lock",
    ".tmp",
}
RICH_EXTENSIONS = {
    ".pdf",
    ".doc",
    ".docx",
    ".odt",
    ".rtf",
    ".txt",
    ".md",
    ".pptx",
    ".ppt",
    ".xlsx",
    ".xls",
    ".csv",
    ".epub",
    ".eml",
    ".html",
    ".htm",
    ".jpg",
    ".jpeg",
    ".png",
    ".heic",
    ".tex",
}
SAMPLE_ENTRIES = 200


@dataclass(frozen=True)
class Entry:
    path: str
    kind: str  # 'file' or 'block'
    size: int
    mtime: float
    members: int = 0
    ctime: float | None = None  # inode change time (POSIX only: Windows' st_ctime is the creation time)
    inode: int | None = None  # None where the OS gives none


def is_hidden(name: str) -> bool:
    return name.startswith(".") or name.lower() in OS_LITTER or name.startswith("._")


def block_reason(folder: Path, names: list[str], bias: float = 0.5) -> str | None:
    """Why this folder is a block, or None. Looks at its name and a sample of its entries."""
    lowered = folder.name.lower()
    if lowered in BLOCK_NAMES:
        return f"{folder.name} folder"
    if lowered.endswith(BUNDLE_SUFFIXES):
        return "application or library bundle"
    markers = BLOCK_MARKERS.intersection(names)
    if markers:
        return f"holds {sorted(markers)[0]}"
    sample = names[:SAMPLE_ENTRIES]
    extensions = [os.path.splitext(n)[1].lower() for n in sample if "." in n]
    if len(sample) < 4 or not extensions:
        return None
    opaque = sum(e in OPAQUE_EXTENSIONS for e in extensions) / len(sample)
    rich = sum(e in RICH_EXTENSIONS for e in extensions) / len(sample)
    if lowered in BUILD_NAMES and opaque >= 0.5:
        return "build output"
    if opaque >= 0.90 - 0.35 * bias and rich <= 0.15 * bias:
        return "mostly opaque binary files"
    return None


def block_summary(folder: Path, limit: int = 5000) -> tuple[int, list[tuple[str, int]], list[str]]:
    """(file count, top extensions, example names) for the text that stands for a block."""
    count, extensions, examples = 0, Counter[str](), list[str]()
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            count += 1
            if count <= limit:
                extensions[os.path.splitext(name)[1].lower() or "(none)"] += 1
                if len(examples) < 40:
                    examples.append(name)
    return count, extensions.most_common(5), examples


def _load_ignore(folder: Path, names: set[str]) -> pathspec.PathSpec | None:
    lines: list[str] = []
    for ignore in IGNORE_FILES:
        if ignore in names:
            try:
                lines += (folder / ignore).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


@dataclass(frozen=True)
class _Descend:
    folder: Path
    specs: list[tuple[Path, pathspec.PathSpec]]


def walk(root: str, manual: dict[str, str] | None = None, unreadable: list[str] | None = None) -> Iterator[Entry]:
    """Every indexable file and block folder under ``root``, depth first; ``unreadable``, when given,
    collects the folders that could not be listed (what is known under them is not gone).

    An explicit stack, not recursion: a tree thousands of folders deep is legal and must not
    exhaust Python's recursion limit.
    """
    manual = manual or {}
    unreadable = unreadable if unreadable is not None else []
    real_root = os.path.realpath(root)
    stack = [_walk_folder(Path(root), [], manual, unreadable, is_root=True, real_root=real_root)]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
        elif isinstance(item, _Descend):
            stack.append(_walk_folder(item.folder, item.specs, manual, unreadable, real_root=real_root))
        else:
            yield item


def _walk_folder(
    folder: Path,
    specs: list[tuple[Path, pathspec.PathSpec]],
    manual: dict[str, str],
    unreadable: list[str],
    is_root: bool = False,
    real_root: str = "",
) -> Iterator[Entry | _Descend]:
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        if not isinstance(exc, FileNotFoundError):
            log.warning("skipped folder %s: %s", folder, exc.strerror or exc)
            unreadable.append(str(folder))
        return
    names = [e.name for e in entries]
    if not is_root:
        mode = manual.get(str(folder))
        reason = None if mode == "recursive" else ("manual" if mode == "block" else block_reason(folder, names))
        if reason:
            try:
                stat = folder.stat()
            except OSError:
                return
            yield Entry(str(folder), "block", 0, stat.st_mtime, members=len(names))
            return
    spec = _load_ignore(folder, set(names))
    specs = specs + [(folder, spec)] if spec else specs
    for entry in entries:
        if is_hidden(entry.name) or manual.get(entry.path) == "ignore":
            continue
        if has_surrogates(entry.name):  # no catalog, table or JSON answer can hold its path
            log.warning("skipped %r: its name is not valid UTF-8; rename it to index it", entry.path)
            continue
        path = Path(entry.path)
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            if _ignored_by(path, is_dir, specs):
                continue
            if is_dir:
                yield _Descend(path, specs)
            elif entry.is_file():  # follows a link to a file; a link to a folder is skipped above
                if entry.is_symlink() and not _inside(os.path.realpath(entry.path), real_root):
                    continue  # its content lives outside the root: indexing it would leak it into snippets
                stat = entry.stat()
                yield Entry(
                    entry.path, "file", stat.st_size, stat.st_mtime, ctime=_change_time(stat), inode=stat.st_ino or None
                )
        except OSError:
            continue


def _change_time(stat: os.stat_result) -> float | None:
    """The inode change time: a rewrite that restores size and mtime (``cp -p``, ``touch -r``) still moves it."""
    return None if os.name == "nt" else stat.st_ctime


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _ignored_by(path: Path, is_dir: bool, specs: list[tuple[Path, pathspec.PathSpec]]) -> Path | None:
    """The folder whose ignore rules exclude ``path``, or None."""
    for base, spec in specs:
        relative = path.relative_to(base).as_posix() + ("/" if is_dir else "")
        if spec.match_file(relative):
            return base
    return None


InnerIgnores = Mapping[str, "pathspec.PathSpec | str"]
"""An archive's own ignore files, by the folder inside holding them; a text where they could not be read:
why that folder's members are held back."""


def inner_ignores(found: Mapping[str, Mapping[str, str | None]]) -> dict[str, pathspec.PathSpec | str]:
    """The ignore files an archive holds (``archives.ignore_files``), each folder's read as on disk; a
    folder whose ignore file was too large to read is held back whole, never indexed as if it had none."""
    specs: dict[str, pathspec.PathSpec | str] = {}
    for folder, files in found.items():
        unread = [name for name, text in files.items() if text is None and name in IGNORE_FILES]
        if unread:
            specs[folder] = (
                f"held back: the {unread[0]} in {folder or 'the archive'} is larger than "
                f"{MAX_IGNORE_BYTES // 1024} KB, so its rules were not read: not indexed, not served"
            )
            continue
        lines = [line for name in IGNORE_FILES for line in (files.get(name) or "").splitlines()]
        if lines:
            specs[folder] = pathspec.GitIgnoreSpec.from_lines(lines)
    return specs


def skip_reason(path: str, root: str, ignores_of: Callable[[Path], InnerIgnores] | None = None) -> str | None:
    """Why indexing leaves ``path`` (inside ``root``) out, as a refusal says it; None when it is indexed.

    The walk's own rules (hidden names, ``.gitignore`` / ``.sensetreeignore`` from the root down)
    applied to one path, so that what is never indexed is never served either (design §5). Inside an
    archive the same rules hold, the archive taken as a folder (``member_reason``): a ``.env`` in a
    backup zip is left out as the same ``.env`` on disk is; ``ignores_of`` gives an archive's own ignore
    files (``inner_ignores``), read as those of a folder on disk would be.
    """
    return rules_for(path, root, ignores_of)[0]


@dataclass(frozen=True)
class FolderRules:
    """The walk's rules for the entries of one folder: hidden names, and the ignore files from the root down."""

    folder: Path
    specs: list[tuple[Path, pathspec.PathSpec]]

    def reason(self, name: str, is_dir: bool) -> str | None:
        """Why the walk skips the entry ``name``, or None."""
        if is_hidden(name):
            return f"hidden {'folder' if is_dir else 'file'}: not indexed, not served"
        if has_surrogates(name):  # as the walk skips it (_walk_folder)
            return "its name is not valid UTF-8: not indexed, not served (rename it to index it)"
        base = _ignored_by(self.folder / name, is_dir, self.specs)
        if base is None:
            return None
        rules = " or ".join(n for n in IGNORE_FILES if os.path.isfile(base / n))
        return f"excluded by the {rules or 'ignore rules'} in {base}: not indexed, not served"

    def below(self, name: str) -> FolderRules:
        folder = self.folder / name
        spec = _load_ignore(folder, {n for n in IGNORE_FILES if os.path.isfile(folder / n)})
        return FolderRules(folder, self.specs + [(folder, spec)] if spec else self.specs)


def rules_for(
    path: str, root: str, ignores_of: Callable[[Path], InnerIgnores] | None = None
) -> tuple[str | None, FolderRules]:
    """(why the walk skips ``path``, or None; and the rules for its entries when it is a folder, or for the
    entries of the folder that holds it when it is a file)."""
    try:
        parts = Path(path).relative_to(root).parts
    except ValueError:
        parts = ()
    rules = FolderRules(Path(root), []).below("")
    for depth, part in enumerate(parts):
        child, last = rules.folder / part, depth == len(parts) - 1
        reason = rules.reason(part, os.path.isdir(child) or (not last and not os.path.lexists(child)))
        if reason:
            return reason, rules
        if os.path.isfile(child):  # a file on the way is an archive: its members follow the same rules
            if last:
                return None, rules
            return member_reason(
                archive_rules(rules, part), parts[depth + 1 :], ignores_of(child) if ignores_of else None
            ), rules
        rules = rules.below(part)
    return None, rules


def archive_rules(rules: FolderRules, name: str) -> FolderRules:
    """The rules for the members of the archive ``name``, an entry of the folder ``rules`` are for: the
    archive taken as a folder, under the same ignore files (none is read inside it)."""
    return FolderRules(rules.folder / name, rules.specs)


def member_reason(
    rules: FolderRules, inner: tuple[str, ...] | list[str], ignores: InnerIgnores | None = None
) -> str | None:
    """Why the walk would leave out the archive member whose path inside the archive has the parts
    ``inner``, were the archive a folder on disk (``rules``: ``archive_rules``); None when it is indexed.

    A hidden name anywhere on its way (``.env``, ``.ssh/id_rsa``, ``.git/config``), a name the ignore
    files exclude, or a folder that is a block on disk by its name (``node_modules/``, ``__pycache__/``:
    its files are not indexed one by one). ``ignores``: the archive's own ignore files (``inner_ignores``),
    each applying below its folder as on disk."""
    ignores = ignores or {}
    inside: FolderRules | str = _inside_archive(rules, "", ignores)
    for depth, part in enumerate(inner):
        if isinstance(inside, str):  # a folder on the way whose ignore file could not be read
            return inside
        last = depth == len(inner) - 1
        reason = inside.reason(part, not last)
        if reason:
            return reason
        if not last and part.lower() in BLOCK_NAMES:
            return f"inside a {part} folder (a block, not indexed file by file): not indexed, not served"
        below = FolderRules(inside.folder / part, inside.specs)
        inside = _inside_archive(below, "/".join(inner[: depth + 1]), ignores)
    return None


def _inside_archive(rules: FolderRules, folder: str, ignores: InnerIgnores) -> FolderRules | str:
    spec = ignores.get(folder)
    if isinstance(spec, str):
        return spec
    return FolderRules(rules.folder, rules.specs + [(rules.folder, spec)]) if spec is not None else rules


def member_rules(archive: str, roots: tuple[str, ...] | list[str]) -> FolderRules:
    """``archive_rules`` for an archive on disk, under the longest of ``roots`` that holds it (its own
    folder when none does: hidden names and block folders still count)."""
    holding = [r for r in roots if _inside(os.path.normpath(archive), os.path.normpath(r))]
    root = max(holding, key=len) if holding else os.path.dirname(archive)
    return archive_rules(rules_for(archive, root)[1], os.path.basename(archive))
