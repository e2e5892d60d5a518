"""Each operating system's path rules (design §4), checked here on Linux.

Windows rules are pure string rules (``C:\\``, ``\\\\server\\share``), so they are checked under
``ntpath``/``PureWindowsPath`` semantics as they are. A case-insensitive file system cannot be made
on this machine (no casefold ext4, no FAT driver in the kernel, no unprivileged loop mounts), so for
the tests "under case-insensitivity" the probe's answer for one folder is set to what macOS's APFS
answers, and everything downstream of it (scope, confinement, the catalog, LanceDB filters, the
spelling on disk) runs for real.
"""

from __future__ import annotations

import errno
import io
import ntpath
import os
import threading
import time
from pathlib import Path, PureWindowsPath

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sensetree import fs_rules, paths
from sensetree.ingest.watcher import polled, watch
from sensetree.reader import OutsideRoots, RootGuard
from sensetree.store.catalog import Catalog
from sensetree.store.chunks import ChunkStore
from sensetree.store.table import ChunkRow
from tests.support.waiting import wait_for
from sensetree.operations import AddRootParams, RemoveRootParams


# --- Windows semantics, as ntpath and PureWindowsPath have them ----------------------------------

SEGMENT = st.text(alphabet="abcdefgHIJKLMxyzXYZ019 _-%'é", min_size=1, max_size=6).filter(
    lambda s: s.strip(" ") == s and s not in (".", ".."))
DRIVE = st.sampled_from(["C:", "c:", "D:", r"\\server\share", r"\\SERVER\Share", "//server/share"])


def windows_path(drive: str, parts: list[str], sep: str) -> str:
    return drive + sep + sep.join(parts)


@settings(max_examples=300, deadline=None)
@given(DRIVE, st.lists(SEGMENT, max_size=4), st.sampled_from(["\\", "/"]))
def test_path_key_is_ntpath_normcase(drive, parts, sep):
    path = windows_path(drive, parts, sep)
    assert paths.path_key(path) == ntpath.normcase(ntpath.normpath(path)).rstrip("\\") or (
        not parts and paths.path_key(path) == ntpath.normcase(ntpath.normpath(path)))


@settings(max_examples=300, deadline=None)
@given(DRIVE, st.lists(SEGMENT, max_size=3), st.lists(SEGMENT, max_size=3), DRIVE, st.lists(SEGMENT, max_size=4))
def test_is_under_agrees_with_pure_windows_path(drive, folder_parts, below, other_drive, other_parts):
    folder = windows_path(drive, folder_parts, "\\")
    inside = windows_path(drive.swapcase(), [p.swapcase() for p in folder_parts + below], "/")
    elsewhere = windows_path(other_drive, other_parts, "\\")
    for path in (inside, elsewhere):
        assert paths.is_under(path, folder) == PureWindowsPath(path).is_relative_to(PureWindowsPath(folder)), path


@pytest.mark.parametrize("path, folder, expected", [
    (r"C:\Users\Me\DOCS\a.txt", r"c:\users\me\Docs", True),
    (r"D:\Users\Me\Docs\a.txt", r"C:\Users\Me\Docs", False),         # another drive
    (r"\\NAS\Photos\2024\x.jpg", r"\\nas\photos", True),              # UNC share, any case
    (r"\\nas\photos-old\x.jpg", r"\\nas\photos", False),
    (r"\\nas\other\x.jpg", r"\\nas\photos", False),                   # another share on the same server
    (r"C:\Docs\..\Secret\x.txt", r"C:\Docs", False),
])
def test_drive_letters_and_unc_shares(path, folder, expected):
    assert paths.is_under(path, folder) is expected
    assert PureWindowsPath(path).is_relative_to(folder) is expected or ".." in path


def test_windows_paths_never_probe_the_disk():
    assert fs_rules.case_sensitive(r"C:\Users\me") is False
    assert fs_rules.case_sensitive(r"\\server\share") is False
    assert fs_rules.true_case(r"c:\users\ME") == r"c:\users\ME"  # not this machine's disk: kept as given


@pytest.mark.parametrize("name, reserved", [
    ("CON", True), ("con", True), ("NUL.txt", True), ("nul.tar.gz", True), ("COM1", True), ("lpt9.log", True),
    ("AUX", True), ("PRN.", True), ("CONIN$", True), ("notes.", True), ("notes ", True), ("report. ", True),
    ("CONSOLE", False), ("console.txt", False), ("COM", False), ("nullable.txt", False), ("notes.txt", False),
    (".hidden", False), ("..", False), (".", False),
])
def test_reserved_windows_names(name, reserved):
    assert fs_rules.is_reserved_name(name) is reserved


@pytest.mark.parametrize("path, expected", [
    (r"C:\Users\me\a.txt", r"C:\Users\me\a.txt"),
    ("C:\\" + "x" * 300, "\\\\?\\C:\\" + "x" * 300),
    ("\\\\server\\share\\" + "y" * 300, "\\\\?\\UNC\\server\\share\\" + "y" * 300),
    (r"C:\Users\me\CON\a.txt", r"\\?\C:\Users\me\CON\a.txt"),
    (r"C:\Users\me\notes.", r"\\?\C:\Users\me\notes."),
    (r"\\?\C:\already", r"\\?\C:\already"),
    ("/home/me/" + "z" * 300, "/home/me/" + "z" * 300),
])
def test_extended_length_paths(path, expected):
    assert fs_rules.extended_path(path) == expected


@settings(max_examples=200, deadline=None)
@given(DRIVE, st.lists(SEGMENT, min_size=1, max_size=4), st.integers(0, 300))
def test_extended_form_reads_back_as_the_same_path(drive, parts, pad):
    path = paths.normalize(windows_path(drive, parts + ["x" * pad], "\\"))
    assert paths.normalize(fs_rules.extended_path(path)) == path


def test_os_path_is_unchanged_off_windows():
    if os.name != "nt":
        assert fs_rules.os_path("C:\\" + "x" * 300) == "C:\\" + "x" * 300


def test_listing_a_folder_with_names_windows_refuses(tmp_path, tmp_path_factory):
    """A folder copied from Linux may hold ``CON`` or ``notes.``: listing and reading name them, never crash."""
    root = tmp_path / "root"
    root.mkdir()
    for name in ("CON", "notes.", "report ", "fine.txt"):
        (root / name).write_text("lighthouse", encoding="utf-8")
    store = ChunkStore(tmp_path_factory.mktemp("db"))
    from sensetree.reader import Reader

    reader = Reader([str(root)], store)
    listing = reader.list_folder(str(root), 100)
    assert sorted(e.name for e in listing.entries) == sorted(["CON", "notes.", "report ", "fine.txt"])
    assert reader.read_text(str(root / "notes."), 100).text.strip() == "lighthouse"


# --- case: probed on this disk, and the rules under a file system that ignores it -----------------


def test_probe_finds_this_disk_case_sensitive(tmp_path):
    (tmp_path / "Docs").mkdir()
    assert fs_rules._probe(str(tmp_path / "Docs")) is True
    (tmp_path / "docs").mkdir()  # both spellings at once: only a case-sensitive disk allows that
    assert fs_rules._probe(str(tmp_path)) is True
    digits = tmp_path / "123"
    digits.mkdir()
    assert fs_rules._probe(str(digits)) is None  # nothing to swap: the system's default answers
    assert fs_rules.case_sensitive(str(tmp_path / "not" / "there" / "yet")) is True


def test_probe_sees_one_folder_under_two_spellings(tmp_path):
    """What a case-insensitive disk shows: ``Docs`` and ``docs`` are one folder (here by a link)."""
    (tmp_path / "Photos").mkdir()
    os.symlink(tmp_path / "Photos", tmp_path / "pHOTOS")
    assert fs_rules._probe(str(tmp_path / "Photos")) is False


@pytest.fixture
def case_blind(tmp_path, monkeypatch):
    """``tmp_path`` answers as APFS does (case-insensitive); everything else as this disk answers."""
    probe = fs_rules.case_sensitive

    def answer(folder: str) -> bool:
        inside = not paths.is_windows_path(folder) and (os.path.abspath(folder) + "/").startswith(f"{tmp_path}/")
        return False if inside else probe(folder)

    monkeypatch.setattr(fs_rules, "case_sensitive", answer)
    return tmp_path


def test_case_blind_folders_compare_folded(case_blind):
    docs = str(case_blind / "Docs")
    assert paths.is_under(str(case_blind / "docs" / "a.txt"), docs)
    assert paths.is_under(str(case_blind / "DOCS"), docs)
    assert not paths.is_under(str(case_blind / "DocsEvil" / "a.txt"), docs)
    assert paths.path_key(str(case_blind / "Docs" / "A.txt")) == paths.path_key(str(case_blind / "docs" / "a.TXT"))
    assert paths.scope_predicate(docs).startswith("starts_with(lower(upper(path)),")
    assert not paths.is_under("/usr/Share", "/usr/share")  # this disk still tells them apart


def test_case_blind_spelling_comes_from_the_disk(case_blind):
    (case_blind / "Docs" / "Taxes").mkdir(parents=True)
    (case_blind / "Docs" / "Taxes" / "Return.pdf").write_bytes(b"%PDF")
    assert fs_rules.true_case(str(case_blind / "docs" / "TAXES" / "return.PDF")) == str(
        case_blind / "Docs" / "Taxes" / "Return.pdf")
    assert fs_rules.true_case(str(case_blind / "docs" / "new.txt")) == str(case_blind / "Docs" / "new.txt")


def test_case_blind_confinement(case_blind):
    (case_blind / "Docs").mkdir()
    (case_blind / "Docs" / "a.txt").write_text("x", encoding="utf-8")
    (case_blind / "DocsEvil").mkdir()
    (case_blind / "DocsEvil" / "b.txt").write_text("x", encoding="utf-8")
    guard = RootGuard([str(case_blind / "docs")])
    assert guard.check(str(case_blind / "DOCS" / "A.TXT")) == str(case_blind / "Docs" / "a.txt")
    for outside in (case_blind / "DocsEvil" / "b.txt", case_blind / "docs" / ".." / "DocsEvil" / "b.txt"):
        with pytest.raises(OutsideRoots):
            guard.check(str(outside))


def test_case_blind_catalog_and_lancedb_agree(case_blind):
    root = case_blind / "Docs"
    rows = [str(root / "a.txt"), str(root / "Sub" / "b.txt"), str(case_blind / "DocsEvil" / "c.txt")]
    catalog = Catalog(case_blind / "catalog.db")
    catalog.roots.add(str(root))
    catalog.states.upsert_pending([(p, str(root), "file", 1, 0.0, 0, None, None) for p in rows])
    for scope in (str(case_blind / "docs"), str(case_blind / "DOCS")):
        assert catalog.files.coverage(scope) == (2, 0)
        assert set(catalog.files.under(scope)) == set(rows[:2])
        assert catalog.states.prioritize(scope) == 2
    assert catalog.files.coverage(str(case_blind / "docs" / "sub")) == (1, 0)
    store = ChunkStore(case_blind / "lancedb")
    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
    store.writes.replace_files(rows, [ChunkRow(p, 0, "lighthouse keeper", vector, f"h{i}", 0.0) for i, p in enumerate(rows)],
                               "test-model", 384)
    where = paths.scope_predicate(str(case_blind / "DOCS"))
    assert {h["path"] for h in store.queries.sparse("lighthouse", 10, where)} == set(rows[:2])
    catalog.close()


def test_case_blind_roots_are_one_folder(case_blind, make_engine, write_tree):
    write_tree(case_blind / "Docs", {"a.txt": "the lighthouse keeper's log"})
    engine = make_engine(case_blind / "data", case_blind / "Docs", index=False)
    try:
        assert engine.run(AddRootParams(str(case_blind / "docs" / "."))).root == str(case_blind / "Docs")
        assert engine.roots() == [str(case_blind / "Docs")]
        assert engine.run(RemoveRootParams(str(case_blind / "DOCS"))).removed == 0
        assert engine.roots() == []
        assert engine.run(AddRootParams(str(case_blind / "docs"))).root == str(case_blind / "Docs")  # stored as the disk spells it
    finally:
        engine.close()


# --- network drives and the watcher --------------------------------------------------------------


def test_mount_table_finds_the_deepest_mount(tmp_path):
    """Read from /proc/self/mounts: the file system a path is on is the one at its longest mount point."""
    point = tmp_path / "mnt"
    point.mkdir()
    if os.system(f"mount -t tmpfs sensetree-test {point} 2>/dev/null") != 0:
        pytest.skip("cannot mount a tmpfs here (not root, or no mount namespace)")
    try:
        assert fs_rules._fs_type(str(point / "deep" / "file")) == "tmpfs"
        assert fs_rules._fs_type(str(tmp_path)) != "tmpfs" or fs_rules._fs_type("/") == "tmpfs"
        assert not fs_rules.is_network(str(point))
    finally:
        os.system(f"umount {point}")


def test_mount_table_unescapes_spaces():
    assert fs_rules._unescape(r"/media/My\040Share") == "/media/My Share"


@pytest.mark.parametrize("root, setting, expected", [
    (r"\\nas\photos", "auto", True), ("/", "auto", False), ("/", "on", True), (r"\\nas\photos", "off", False),
])
def test_which_roots_are_polled(root, setting, expected):
    assert polled(root, setting) is expected


def test_polling_setting_rejects_other_words():
    with pytest.raises(ValueError, match="auto, on, off"):
        polled("/", "sometimes")


def test_polling_watcher_sees_changes(tmp_path):
    """watchdog's PollingObserver, as a network drive gets it: a new file and an edit each start a round."""
    root = tmp_path / "share"
    root.mkdir()
    (root / "old.txt").write_text("before", encoding="utf-8")
    rounds: list[float] = []
    stop = threading.Event()
    worker = threading.Thread(target=watch, args=([str(root)], str(tmp_path / "data"), lambda: rounds.append(1), stop),
                              kwargs={"debounce": 0.2, "polling": "on", "poll_seconds": 0.3})
    worker.start()
    try:
        time.sleep(0.8)  # the first listing is the baseline
        assert rounds == []
        (root / "new.txt").write_text("after", encoding="utf-8")
        assert wait_for(lambda: len(rounds) == 1, timeout=10)
        time.sleep(0.5)
        os.utime(root / "old.txt", (time.time() + 10, time.time() + 10))
        assert wait_for(lambda: len(rounds) == 2, timeout=10)
    finally:
        stop.set()
        worker.join(10)
    assert not worker.is_alive()


def test_data_dir_inside_a_root_is_ignored_by_the_poller(tmp_path):
    root = tmp_path / "home"
    data = root / "Data"
    data.mkdir(parents=True)
    rounds: list[int] = []
    stop = threading.Event()
    worker = threading.Thread(target=watch, args=([str(root)], str(data), lambda: rounds.append(1), stop),
                              kwargs={"debounce": 0.2, "polling": "on", "poll_seconds": 0.3})
    worker.start()
    try:
        time.sleep(0.8)
        (data / "catalog.db").write_bytes(b"x")
        time.sleep(1.5)
        assert rounds == []
        (root / "mine.txt").write_text("y", encoding="utf-8")
        assert wait_for(lambda: rounds == [1], timeout=10)
    finally:
        stop.set()
        worker.join(10)


def test_the_user_folders_follow_the_platform(monkeypatch, tmp_path):
    from sensetree.config import default_data_dir

    monkeypatch.delenv("SENSETREE_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == tmp_path / "xdg" / "sensetree"
    monkeypatch.setenv("SENSETREE_HOME", str(tmp_path / "mine"))
    assert default_data_dir() == Path(tmp_path / "mine")


class KernelFile(io.RawIOBase):
    """A file the kernel makes as it is read (``/proc/sys``): a read that asks for more than it can
    allocate at once fails with ENOMEM, however little it holds; smaller reads get a piece at a time."""

    def __init__(self, content: bytes, piece: int):
        self.content, self.at, self.piece = content, 0, piece

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if len(buffer) > 4 * fs_rules.READ_PIECE:
            raise OSError(errno.ENOMEM, "Cannot allocate memory")
        taken = self.content[self.at : self.at + min(len(buffer), self.piece)]
        buffer[: len(taken)] = taken
        self.at += len(taken)
        return len(taken)


@settings(max_examples=50)
@given(content=st.binary(max_size=3000), limit=st.integers(0, 60 * 1024 * 1024), piece=st.integers(1, 700))
def test_a_file_made_on_read_is_read_to_its_end_or_the_limit(content, limit, piece):
    """Issue 42: such files (size 0 to stat) failed with "Cannot allocate memory" for the whole-file read."""
    assert fs_rules.read_at_most(io.BufferedReader(KernelFile(content, piece)), limit) == content[:limit]


@pytest.mark.skipif(not os.path.isfile("/proc/sys/fs/file-max"), reason="no /proc/sys here")
def test_proc_files_are_read_by_the_guard_and_the_extractor():
    """The real thing, read-only: a sysctl file refuses a read of 16 MB with ENOMEM."""
    from sensetree.ingest.extract import extract

    path = "/proc/sys/fs/file-max"
    assert os.stat(path).st_size == 0
    number = RootGuard(["/proc/sys/fs"]).read(path, 50 * 1024 * 1024).data
    assert number and number.strip().isdigit()
    assert extract(Path(path), max_bytes=50 * 1024 * 1024).text.strip() == number.decode().strip()
