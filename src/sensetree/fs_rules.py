"""What the file system under a path allows: case, long names, reserved names, network mounts, reads.

One place that knows each system's rules, so that scope, confinement, the catalog and the watcher
agree. Case is a property of the file system, not of the operating system: macOS (APFS, HFS+) and
Windows (NTFS) ignore it by default, Linux respects it except on FAT, exFAT or a ``casefold``
folder. So it is probed once per folder, on disk, read-only: does the same name in another case
lead to the same file?
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from typing import BinaryIO

# Windows refuses these names, with any extension (``NUL.txt``), in any case (design §4).
_RESERVED = re.compile(r"^(?:CON|PRN|AUX|NUL|COM[0-9¹²³]|LPT[0-9¹²³]|CONIN\$|CONOUT\$)(?:\..*)?$", re.IGNORECASE)
# Past this length the Win32 API needs the ``\\?\`` prefix, unless long paths are enabled system-wide.
MAX_PATH = 260
# File systems on another machine: their change events are missing or late, so they are polled.
NETWORK_FS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb",
        "smb2",
        "smb3",
        "smbfs",
        "afpfs",
        "webdav",
        "davfs",
        "fuse.sshfs",
        "sshfs",
        "9p",
        "ncpfs",
        "fuse.rclone",
        "afs",
        "glusterfs",
        "ceph",
        "fuse.glusterfs",
        "fuse.cephfs",
        "lustre",
    }
)


# The most one read asks for: a file the kernel makes as it is read (``/proc/sys``, size 0 to stat) refuses
# a read of more than it can allocate at once (ENOMEM for 16 MB), however little it holds.
READ_PIECE = 1024 * 1024


def read_at_most(file: BinaryIO, limit: int) -> bytes:
    """Up to ``limit`` bytes of ``file`` (all of it when shorter), read ``READ_PIECE`` at a time."""
    pieces, left = [], limit
    while left > 0:
        piece = file.read(min(left, READ_PIECE))
        if not piece:
            break
        pieces.append(piece)
        left -= len(piece)
    return b"".join(pieces)


_WINDOWS_PATH = re.compile(r"^(?:[A-Za-z]:[\\/]|[\\/]{2}[^\\/])")


def is_windows_path(path: str) -> bool:
    """A path that follows Windows rules wherever it is seen: ``C:\\...``, ``\\\\server\\share``; any path on Windows."""
    return bool(_WINDOWS_PATH.match(path)) or (os.name == "nt" and not path.startswith("/"))


@functools.lru_cache(maxsize=256)
def case_sensitive(folder: str) -> bool:
    """Whether the file system holding ``folder`` tells ``Docs`` from ``docs``.

    A Windows path (``C:\\``, ``\\\\server``) is case-insensitive wherever it is seen. Otherwise the
    nearest existing folder, or one of its entries, is looked up with its case swapped; where no
    name has a letter, the system's default answers (insensitive on macOS and Windows).
    """
    if is_windows_path(folder):
        return False
    probe = _nearest_existing(folder)
    if probe is not None:
        answer = _probe(probe)
        if answer is not None:
            return answer
    return sys.platform not in ("darwin", "win32")


def folds_case(path: str) -> bool:
    """Whether paths under ``path`` are compared case-folded (the opposite of ``case_sensitive``)."""
    return not case_sensitive(path)


def _nearest_existing(path: str) -> str | None:
    current = os.path.abspath(path)
    while True:
        if os.path.isdir(current):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _probe(folder: str) -> bool | None:
    """Same file under a swapped-case name? None when nothing here has a letter to swap."""
    candidates = [folder]
    try:
        with os.scandir(folder) as entries:
            candidates += [e.path for _, e in zip(range(50), entries)]
    except OSError:
        pass
    for path in candidates:
        head, name = os.path.split(path)
        swapped = name.swapcase()
        if not name or swapped == name or swapped.swapcase() != name:
            continue
        other = os.path.join(head, swapped)
        try:
            return not os.path.samefile(path, other)
        except FileNotFoundError:
            return True
        except OSError:
            continue
    return None


def true_case(path: str) -> str:
    """``path`` spelled as the disk spells it, where the file system ignores case (``~/docs`` -> ``~/Docs``), so
    that what a user types and what a scan finds are stored under one key; as given elsewhere, or when a part
    is missing."""
    if case_sensitive(path) or is_windows_path(path) and os.name != "nt":
        return path
    head, parts = path, []
    while True:
        parent, name = os.path.split(head)
        if not name:
            break
        parts.append(name)
        head = parent
    spelled = head
    for name in reversed(parts):
        try:
            names = os.listdir(spelled)
        except OSError:
            names = []
        if name not in names:
            name = next((n for n in names if n.upper().lower() == name.upper().lower()), name)
        spelled = os.path.join(spelled, name)
    return spelled


def is_reserved_name(name: str) -> bool:
    """A name Windows cannot open as a file: a device (``CON``, ``NUL.txt``, ``COM1``) or one ending in a dot or
    a space (Windows strips them, so ``notes.`` opens ``notes``)."""
    return bool(_RESERVED.match(name.rstrip(" ."))) or (name not in (".", "..") and name.rstrip(" .") != name)


def os_path(path: str) -> str:
    """The path to hand the operating system: on Windows, a long one gets the ``\\\\?\\`` prefix (and a long
    UNC path ``\\\\?\\UNC\\``), which also lets a name ending in a dot or a space be opened as it is."""
    if os.name != "nt":
        return path
    return extended_path(path)


def extended_path(path: str) -> str:
    """The Windows extended-length form of an absolute Windows path when it needs one (or has reserved parts)."""
    if path.startswith("\\\\?\\") or not is_windows_path(path):
        return path
    needs = len(path) >= MAX_PATH - 12 or any(is_reserved_name(part) for part in re.split(r"[\\/]", path)[1:] if part)
    if not needs:
        return path
    path = path.replace("/", "\\")
    if path.startswith("\\\\"):
        return "\\\\?\\UNC\\" + path[2:]
    return "\\\\?\\" + path


def is_network(folder: str) -> bool:
    """Whether ``folder`` lies on another machine (an SMB share, NFS, sshfs...), whose change events are missed."""
    if is_windows_path(folder):
        if folder[:2] in ("\\\\", "//"):
            return True
        if os.name == "nt":
            return _windows_drive_is_remote(folder[:3])
        return False
    return _fs_type(os.path.abspath(folder)) in NETWORK_FS


def _windows_drive_is_remote(drive: str) -> bool:
    import ctypes

    drive_remote = 4  # GetDriveTypeW's DRIVE_REMOTE
    return ctypes.windll.kernel32.GetDriveTypeW(drive) == drive_remote  # type: ignore[attr-defined]


def _fs_type(path: str) -> str:
    """The type of the file system mounted at the longest mount point above ``path``; '' when unknown."""
    best, kind = "", ""
    for point, fs_type in _mounts():
        if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) > len(best):
            best, kind = point, fs_type
    return kind


def _mounts() -> list[tuple[str, str]]:
    """(mount point, file system type) pairs: /proc/self/mounts on Linux, ``mount`` elsewhere on POSIX."""
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/self/mounts", encoding="utf-8", errors="replace") as table:
                rows = [line.split() for line in table]
        except OSError:
            return []
        return [(_unescape(r[1]), r[2]) for r in rows if len(r) >= 3]
    if os.name == "posix":  # macOS, the BSDs: "//me@server/share on /Volumes/share (smbfs, nodev, ...)"
        try:
            listing = subprocess.run(["mount"], capture_output=True, text=True, timeout=5).stdout
        except (OSError, subprocess.TimeoutExpired):
            return []
        found = (re.match(r"^.+? on (.+) \(([^,)]+)", line) for line in listing.splitlines())
        return [(m.group(1), m.group(2)) for m in found if m]
    return []


def _unescape(field: str) -> str:
    """/proc/mounts writes a space as ``\\040`` (and tab, newline, backslash alike)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)
