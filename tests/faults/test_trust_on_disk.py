"""Issue 24's poison files and silent losses, each through the interface where it was met.

Poison files: one archive (duplicate member names, a nested path that collides with a literal one,
a member retried or given a sense by hand) must never stop or loop the run for the other files.
Silent loss: a deleted vector table, a root that goes offline, a rewrite that keeps size and
mtime, a root deleted and made anew under ``--watch``, all noticed and said.

Every index run here is bounded (a stop after RUN_BOUND seconds, or a process timeout): a loop
fails the test instead of hanging it.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import stat
import tarfile
import threading
import time
import warnings
import zipfile
from pathlib import Path

import pytest

from sensetree.engine import Engine
from tests.support.waiting import wait_for
from tests.support.zips import zip_bytes
from sensetree.operations import SearchParams
from sensetree.operations import RemoveRootParams, StatusParams
from tests.support.index import catalog, catalog_row, catalog_rows, stored_chunks

pytestmark = pytest.mark.slow  # a fault suite: index runs, processes

RUN_BOUND = 120.0  # seconds an index run of these few files may take on a busy CI machine


def _zip(members: list[tuple[str | zipfile.ZipInfo, bytes]]) -> bytes:
    """A zip written member by member, duplicates included (zipfile warns about them)."""
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w") as archive:
        warnings.simplefilter("ignore")
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


def _bounded_index(engine: Engine):
    """Index once; fails when the run had to be stopped by the bound (it looped)."""
    stop = threading.Event()
    timer = threading.Timer(RUN_BOUND, stop.set)
    timer.start()
    try:
        progress = engine.index(stop=stop)
    finally:
        timer.cancel()
    assert not stop.is_set(), "indexing did not end on its own: a file keeps the queue busy"
    return progress


def _statuses(engine: Engine) -> dict[str, str]:
    return {row.path: row.status for row in catalog_rows(engine)}


def _texts(engine: Engine, path: str) -> str:
    return " ".join(chunk["text"] for chunk in stored_chunks(engine, path) or [])


# --- poison archives (defects 3, 4, 5) ---------------------------------------------------------------


def test_duplicate_and_colliding_member_names_are_distinct_and_never_stop_the_queue(tmp_path, cli, make_engine):
    """(3) two identical members of one name used to fail the semantic phase for every file, for good;
    (4) two different ones, or ``inner.zip`` beside a literal ``inner.zip/x.txt``, made ``index`` loop."""
    root = tmp_path / "downloads"
    root.mkdir()
    (root / "plain.txt").write_text("Minutes of the allotment society: the heron ate the koi.", encoding="utf-8")
    (root / "same.zip").write_bytes(_zip([("a.txt", b"identical twin text"), ("a.txt", b"identical twin text")]))
    (root / "different.zip").write_bytes(_zip([("a.txt", b"the first clementine"), ("a.txt", b"the second tangerine")]))
    inner = zip_bytes({"x.txt": b"nested quince jelly"})
    (root / "nested.zip").write_bytes(_zip([("inner.zip", inner), ("inner.zip/x.txt", b"literal damson jam")]))
    data = tmp_path / "data"
    make_engine(data, root, index=False).close()
    cli.run(data, "index", timeout=RUN_BOUND * 2)  # a loop is a timeout: the test fails

    (root / "later.txt").write_text("A note added afterwards about pruning the medlar tree.", encoding="utf-8")
    cli.run(data, "index", timeout=RUN_BOUND * 2)
    with Engine(data) as engine:
        statuses = _statuses(engine)
        assert set(statuses.values()) == {"indexed"}, statuses
        assert statuses.keys() >= {str(root / name) for name in (
            "plain.txt", "later.txt", "same.zip/a.txt", "same.zip/a (2).txt", "different.zip/a.txt",
            "different.zip/a (2).txt", "nested.zip/inner.zip", "nested.zip/inner.zip/x.txt",
            "nested.zip/inner.zip/x (2).txt")}
        assert "second tangerine" in _texts(engine, str(root / "different.zip/a (2).txt"))
        assert "literal damson" in _texts(engine, str(root / "nested.zip/inner.zip/x (2).txt"))
        assert "nested quince" in _texts(engine, str(root / "nested.zip/inner.zip/x.txt"))
        assert [r.path for r in engine.run(SearchParams("pruning the medlar tree", rerank=False)).results][:1] == [
            str(root / "later.txt")]  # files added after the poison archive still get their vectors
    queue = cli.run(data, "queue").stdout
    assert "a.txt: a second member of that name, indexed as a (2).txt" in queue
    assert "inner.zip/x.txt: a second member of that name, indexed as inner.zip/x (2).txt" in queue


def test_retry_and_a_sense_set_by_hand_on_members_read_their_archive_again(tmp_path, cli, make_engine):
    """(5) ``retry`` of a failed member or ``sense --set`` on a member made ``index`` loop: the unchanged
    archive was never read again, so the member stayed pending for ever."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "box.zip").write_bytes(zip_bytes({"broken.pdf": b"%PDF-1.7 this is no PDF at all",
                                              "letter.txt": b"Dear committee, the greenhouse roof leaks."}))
    data = tmp_path / "data"
    make_engine(data, root).close()
    broken, letter = str(root / "box.zip/broken.pdf"), str(root / "box.zip/letter.txt")
    with Engine(data) as engine:
        assert catalog_row(engine, broken).status == "failed"
    assert "requeued 1 failed file" in cli.invoke(data, "retry", broken).output
    result = cli.invoke(data, "sense", letter, "--set", "A complaint about the leaking greenhouse roof")
    assert result.exit_code == 0, result.output
    with Engine(data) as engine:
        assert {catalog_row(engine, broken).status, catalog_row(engine, letter).status} == {"pending"}
        _bounded_index(engine)
        failed = catalog_row(engine, broken)
        assert failed.status == "failed" and failed.error  # read again, failed again, with its reason: no loop
        assert catalog_row(engine, letter).status == "indexed"
        assert "A complaint about the leaking greenhouse roof\n\nDear committee" in _texts(engine, letter)

        ghost = str(root / "box.zip/ghost.txt")  # a waiting member no reading of its archive produces (an older
        with catalog(engine.data_dir, write=True) as older:  # keying's row): the new reading drops it, nothing
            older.insert_rows("files", ["path", "root", "kind", "status"], [(ghost, str(root), "member", "pending")])
        _bounded_index(engine)
        assert catalog_row(engine, ghost) is None and catalog_row(engine, letter).status == "indexed"


# --- skipped members are said (19) ------------------------------------------------------------------


def _tar_with_links() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        def add(name: str, kind: bytes, data: bytes = b"", link: str = "") -> None:
            info = tarfile.TarInfo(name)
            info.type, info.size, info.linkname = kind, len(data), link
            archive.addfile(info, io.BytesIO(data) if data else None)
        add("real.txt", tarfile.REGTYPE, b"The one real file in the tarball.")
        add("shadow", tarfile.SYMTYPE, link="/etc/shadow")
        add("again.txt", tarfile.LNKTYPE, link="real.txt")
        add("console", tarfile.CHRTYPE)
    return buffer.getvalue()


def test_skipped_members_appear_in_the_queue_with_their_reason(tmp_path, cli, make_engine):
    """(19) climbing, absolute and drive names, links and devices were dropped without a word; a name with a
    NUL was indexed under a rewritten name."""
    root = tmp_path / "root"
    root.mkdir()
    link = zipfile.ZipInfo("link-to-passwd")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    odd = _zip([("../climb.txt", b"up"), ("/abs.txt", b"absolute"), ("C:drive.txt", b"drive"), (link, b"/etc/passwd"),
                ("report.txt#.exe", b"nul trick"), ("fine.txt", b"An honest member about beekeeping.")])
    (root / "odd.zip").write_bytes(odd.replace(b"report.txt#.exe", b"report.txt\0.exe"))  # zipfile cuts at a NUL
    (root / "links.tar").write_bytes(_tar_with_links())
    data = tmp_path / "data"
    make_engine(data, root).close()
    with Engine(data) as engine:
        members = {p for p in _statuses(engine) if p.startswith(str(root / "odd.zip") + "/")}
        assert members == {str(root / "odd.zip/fine.txt")}  # nothing under a rewritten name ("report.txt")
    queue = cli.invoke(data, "queue").output
    for line in ("../climb.txt: skipped, its name climbs out of the archive", "/abs.txt: skipped, its name is absolute",
                 "C:drive.txt: skipped, its name starts with a drive", "link-to-passwd: skipped, it is a symbolic link",
                 "report.txt\\x00.exe: skipped, its name holds a NUL character",
                 "shadow: skipped, it is a symbolic link", "again.txt: skipped, it is a hard link",
                 "console: skipped, it is not a regular file"):
        assert line in queue, queue


# --- archive replaced by a folder (7) ---------------------------------------------------------------


def test_an_archive_replaced_by_a_folder_of_its_name_loses_nothing(tmp_path, make_engine):
    root = tmp_path / "root"
    root.mkdir()
    (root / "photos.zip").write_bytes(zip_bytes({"caption.txt": b"A caption about the old pier."}))
    engine = make_engine(tmp_path / "data", root)
    try:
        caption = str(root / "photos.zip/caption.txt")
        assert catalog_row(engine, caption).kind == "member"
        (root / "photos.zip").unlink()
        (root / "photos.zip").mkdir()
        (root / "photos.zip/caption.txt").write_text("A caption about the new marina.", encoding="utf-8")
        _bounded_index(engine)
        row = catalog_row(engine, caption)
        assert row is not None and (row.kind, row.status) == ("file", "indexed")
        assert "new marina" in _texts(engine, caption)
    finally:
        engine.close()


# --- silent loss (8, 9, 10) ----------------------------------------------------------------------------


def test_a_deleted_vector_table_is_rebuilt_from_the_catalog_and_said(tmp_path, cli, make_engine):
    """(8) deleting <data>/lancedb/ left ``index`` doing nothing and every search empty, without a word."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "orchard.txt").write_text("The orchard's pear trees need grafting in March.", encoding="utf-8")
    data = tmp_path / "data"
    make_engine(data, root).close()
    shutil.rmtree(data / "lancedb")
    result = cli.run(data, "index", timeout=RUN_BOUND * 2)
    assert "The vector table at" in result.stderr and "will be indexed again" in result.stderr, result.stderr
    with Engine(data) as engine:
        assert _statuses(engine) == {str(root / "orchard.txt"): "indexed"}
        assert [r.path for r in engine.run(SearchParams("grafting pear trees", rerank=False)).results] == [str(root / "orchard.txt")]


def test_an_offline_root_keeps_its_entries_and_resumes_without_re_embedding(tmp_path, make_engine, cli):
    """(9) an unplugged or unreadable root had its whole index purged at the next scan, and was embedded
    again from scratch when it came back."""
    drive, home = tmp_path / "drive", tmp_path / "home"
    drive.mkdir()
    home.mkdir()
    (drive / "thesis.txt").write_text("Chapter three: tidal erosion of chalk cliffs.", encoding="utf-8")
    (home / "todo.txt").write_text("Buy string for the runner beans.", encoding="utf-8")
    engine = make_engine(tmp_path / "data", drive, home)
    try:
        thesis = str(drive / "thesis.txt")
        drive.rename(tmp_path / "unplugged")
        _bounded_index(engine)
        assert catalog_row(engine, thesis).status == "indexed"  # kept
        response = engine.run(SearchParams("tidal erosion of chalk cliffs", rerank=False))
        assert thesis not in [r.path for r in response.results]
        assert any(n.startswith(f"{drive} is offline") for n in response.notices), response.notices
        assert engine.run(StatusParams()).offline_roots.keys() == {str(drive)}
        assert json.loads(cli.invoke(tmp_path / "data", "status", "--json").output)["offline_roots"].keys() == {str(drive)}
        shown = cli.invoke(tmp_path / "data", "status").output
        assert "offline since" in " ".join(shown.split()) and "\\x0a" not in shown  # one root a line

        (tmp_path / "unplugged").rename(drive)
        progress = _bounded_index(engine)
        assert progress.embedding.count == 0  # nothing embedded again
        assert any(f"{drive} is back" in n for n in engine.notices.all())
        assert engine.run(StatusParams()).offline_roots == {}
        assert [r.path for r in engine.run(SearchParams("tidal erosion of chalk cliffs", rerank=False)).results][:1] == [thesis]

        engine.run(RemoveRootParams(str(drive)))  # only the user drops it
        assert catalog_row(engine, thesis) is None
    finally:
        engine.close()


def test_a_rewrite_that_keeps_size_and_mtime_is_read_again(tmp_path, make_engine):
    """(10) ``cp -p``, ``rsync -t``, ``touch -r``: same size, same mtime, new text; it was never read again."""
    root = tmp_path / "root"
    root.mkdir()
    note = root / "note.txt"
    note.write_text("The meeting is on Tuesday in the old barn.", encoding="utf-8")
    engine = make_engine(tmp_path / "data", root)
    try:
        before = os.stat(note)
        time.sleep(0.05)
        replacement = tmp_path / "replacement.txt"
        replacement.write_text("The meeting is on Fridays in the new hall.", encoding="utf-8")
        assert replacement.stat().st_size == before.st_size
        shutil.copy2(replacement, note)  # cp -p
        os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns))  # touch -r
        assert (os.stat(note).st_size, os.stat(note).st_mtime_ns) == (before.st_size, before.st_mtime_ns)
        report = engine.scan()
        assert report.changed == 1
        _bounded_index(engine)
        assert "Fridays in the new hall" in _texts(engine, str(note))

        with catalog(engine.data_dir, write=True) as older:  # a catalog from before the columns
            older._sql.run("UPDATE files SET ctime = NULL, inode = NULL")
        assert engine.scan().changed == 0  # is not re-read wholesale...
        with catalog(engine.data_dir) as stamped:
            row = stamped.files.in_root(str(root))[str(note)]
        assert (row.ctime, row.inode) == (os.stat(note).st_ctime, os.stat(note).st_ino)  # ...but stamped
    finally:
        engine.close()


# --- watch: a root that is missing, or deleted and made anew (11, 16) ---------------------------------


def test_watch_waits_for_a_missing_root_and_follows_one_made_anew(tmp_path, cli, make_engine):
    """(16) ``index --watch`` with a root that does not exist exited with a FileNotFoundError traceback;
    (11) a root deleted and made anew was not picked up until something changed in another root."""
    present, later = tmp_path / "present", tmp_path / "later"
    present.mkdir()
    later.mkdir()
    (present / "here.txt").write_text("Notes on the village fete raffle.", encoding="utf-8")
    data = tmp_path / "data"
    make_engine(data, present, later, index=False).close()
    later.rmdir()
    process = cli.start(data, "index", "--watch")
    try:
        catalog_row = lambda path: _row_status(data, path)  # noqa: E731
        assert wait_for(lambda: catalog_row(present / "here.txt") == "indexed", RUN_BOUND)
        later.mkdir()
        (later / "arrived.txt").write_text("The parcel of seed potatoes arrived.", encoding="utf-8")
        assert wait_for(lambda: catalog_row(later / "arrived.txt") == "indexed", RUN_BOUND)

        shutil.rmtree(later)  # deleted and made anew: the old watch sees nothing of the new folder
        assert wait_for(lambda: catalog_row(later / "arrived.txt") is not None, 5)
        time.sleep(2)
        later.mkdir()
        (later / "anew.txt").write_text("A second parcel, of onion sets.", encoding="utf-8")
        assert wait_for(lambda: catalog_row(later / "anew.txt") == "indexed", RUN_BOUND)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    assert "Traceback" not in stderr, stderr
    assert f"{later} does not exist or cannot be read: watching the other roots" in stderr, stderr


def _row_status(data: Path, path: Path) -> str | None:
    """A row's status, read from the catalog file as any reader would (the writer is another process)."""
    import sqlite3

    with sqlite3.connect(data / "catalog.sqlite", timeout=30) as db:
        rows = db.execute("SELECT status FROM files WHERE path = ?", (str(path),)).fetchall()
    return rows[0][0] if rows else None
