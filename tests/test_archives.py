"""Archives and their members, on archives written by the standard library around real documents."""

from __future__ import annotations

import gzip
import io
import os
import re
import tarfile
import zipfile
from pathlib import Path

import pytest

from sensetree.ingest.extract import (
    ExtractionError,
    archive_members,
    archives,
    extract,
    extract_bytes,
)
from tests.support.zips import declare_member_size, docx_bytes, zip_bytes


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    """projects-2019.zip: a DOCX in a folder, a note, and a zip holding a note and a zip (three levels)."""
    third = zip_bytes({"deepest.txt": b"Three levels down: never opened."})
    nested = zip_bytes({"minutes.txt": "Compte rendu : la grue du port sera révisée.".encode(), "inner.zip": third})
    path = tmp_path / "projects-2019.zip"
    path.write_bytes(zip_bytes({
        "report/final.docx": docx_bytes("The final report on the harbour crane refit."),
        "readme.txt": b"Archive of the 2019 projects.",
        "old/": b"",
        "old/backup.zip": nested,
    }))
    return path


def test_members_with_virtual_paths_and_two_levels_of_nesting(projects: Path) -> None:
    members = list(archive_members(projects))
    assert [(m.name, m.depth) for m in members] == [
        ("report/final.docx", 1), ("readme.txt", 1), ("old/backup.zip", 1), ("minutes.txt", 2), ("inner.zip", 2)]
    assert members[0].path == f"{projects}/report/final.docx"
    assert members[3].path == f"{projects}/old/backup.zip/minutes.txt"
    assert all(m.refused is None and m.mtime > 0 for m in members)
    assert members[1].size == len(b"Archive of the 2019 projects.")


def test_a_member_is_extracted_from_memory_with_the_same_readers(projects: Path) -> None:
    for member in archive_members(projects):
        if member.name == "report/final.docx":
            extraction = extract_bytes(member.read(), member.path)
            assert extraction.doc_type == "docx"
            assert extraction.text == "The final report on the harbour crane refit."
        elif member.name == "inner.zip":  # the third level is not opened, only listed
            assert extract_bytes(member.read(), member.path).text == (
                "Archive inner.zip: 1 file\ndeepest.txt (32 bytes)")


def test_virtual_paths_are_previewable(projects: Path) -> None:
    assert extract(Path(f"{projects}/report/final.docx")).text == "The final report on the harbour crane refit."
    assert "grue du port" in extract(Path(f"{projects}/old/backup.zip/minutes.txt")).text
    with pytest.raises(ExtractionError, match=r"^cannot read: .*no such member in projects-2019.zip"):
        extract(Path(f"{projects}/report/missing.docx"))


def test_the_archive_itself_lists_its_members(projects: Path) -> None:
    extraction = extract(projects)
    assert extraction.doc_type == "archive" and not extraction.context_only
    assert re.fullmatch(r"Archive projects-2019.zip: 3 files\n"
                        r"report/final.docx \(\d+\.\d KB\)\nreadme.txt \(29 bytes\)\nold/backup.zip \(\d+ bytes\)",
                        extraction.text), extraction.text


def test_tar_gz_skips_links_and_names_that_climb_out(tmp_path: Path) -> None:
    path = tmp_path / "site.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for name, data in (("site/index.html", b"<html><body><p>Bienvenue au caf\xc3\xa9.</p></body></html>"),
                           ("../escape.txt", b"outside"), ("/etc/passwd", b"root"), ("site/notes.md", b"# Notes")):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1_700_000_000
            archive.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("site/link.txt")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/shadow"
        archive.addfile(link)
        device = tarfile.TarInfo("site/zero")
        device.type = tarfile.CHRTYPE
        archive.addfile(device)
    members = []
    for member in archive_members(path):
        members.append(member.name)
        if member.name == "site/index.html":  # a tar is a stream: read while the walk is on the member
            assert extract_bytes(member.read(), member.path).text == "Bienvenue au café."
            assert member.mtime == 1_700_000_000
    assert members == ["site/index.html", "site/notes.md"]
    assert "Bienvenue au café." in extract(Path(f"{path}/site/index.html")).text


def test_single_compressed_file(tmp_path: Path) -> None:
    path = tmp_path / "server.log.gz"
    text = "2026-03-01 tram depot: signal fault on line 4\n" * 50
    path.write_bytes(gzip.compress(text.encode(), mtime=1_700_000_000))
    (member,) = archive_members(path)
    assert (member.name, member.path, member.size, member.mtime) == (
        "server.log", f"{path}/server.log", len(text), 1_700_000_000)
    extraction = extract_bytes(member.read(), member.path)
    assert extraction.doc_type == "text" and extraction.text == text.strip()


def _zeros_zip_member(archive: zipfile.ZipFile, name: str, megabytes: int) -> None:
    with archive.open(name, "w", force_zip64=True) as member:
        for _ in range(megabytes):
            member.write(bytes(1 << 20))


def test_a_bomb_inside_an_archive_is_refused_and_the_rest_stays_usable(tmp_path: Path) -> None:
    path = tmp_path / "mixed.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("keep.txt", "The kayak rental opens in May.")
        _zeros_zip_member(archive, "bomb.xml", 40)  # 40 MB from about 40 KB: under the size limit, not the ratio
        archive.writestr("liar.txt", os.urandom(100_000))
    path.write_bytes(declare_member_size(path.read_bytes(), "liar.txt", 2048))
    assert path.stat().st_size < 1024 * 1024

    members = {m.name: m for m in archive_members(path)}
    assert members["keep.txt"].refused is None
    assert extract_bytes(members["keep.txt"].read(), "keep.txt").text == "The kayak rental opens in May."
    assert "possible zip bomb" in members["bomb.xml"].refused and "40.0 MB" in members["bomb.xml"].refused
    assert "declares 2.0 KB but holds" in members["liar.txt"].refused
    with pytest.raises(ExtractionError, match=r"^refusing bomb.xml: .*\(possible zip bomb\)$"):
        members["bomb.xml"].read()
    listing = extract(path).text
    assert "bomb.xml (40.0 MB, not read: " in listing and "keep.txt (30 bytes)" in listing


def test_a_gz_bomb_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "dump.sql.gz"
    with gzip.open(path, "wb") as file:
        for _ in range(30):
            file.write(bytes(1 << 20))
    (member,) = archive_members(path)
    with pytest.raises(ExtractionError, match=r"^refusing dump.sql: .* would expand to 30.0 MB \(possible bomb\)"):
        member.read()


def test_members_over_the_size_limit_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "media.zip"
    path.write_bytes(zip_bytes({"small.txt": b"tiny", "big.txt": os.urandom(5000)}))
    members = {m.name: m for m in archive_members(path, max_member_bytes=1000)}
    assert members["small.txt"].refused is None
    assert members["big.txt"].refused == "too large to index (4.9 KB)"


def test_the_walk_stops_at_the_member_and_expansion_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archives, "MAX_MEMBERS", 3)
    many = tmp_path / "many.zip"
    many.write_bytes(zip_bytes({f"note{i}.txt": b"x" for i in range(10)}))
    notes: list[str] = []
    assert len(list(archive_members(many, notes=notes))) == 3
    assert notes == ["many.zip: more than 3 members, the rest were not read"]

    monkeypatch.setattr(archives, "MAX_EXPANDED", 5 * 1024 * 1024)
    big = tmp_path / "big.tar.gz"
    with tarfile.open(big, "w:gz") as archive:
        info = tarfile.TarInfo("zeros.bin")
        info.size = 20 * 1024 * 1024
        archive.addfile(info, io.BytesIO(bytes(info.size)))
        last = tarfile.TarInfo("after.txt")
        last.size = 5
        archive.addfile(last, io.BytesIO(b"after"))
    notes = []
    members = list(archive_members(big, max_member_bytes=1024 * 1024, notes=notes))
    assert [(m.name, m.refused) for m in members] == [("zeros.bin", "too large to index (20.0 MB)")]
    assert notes == ["big.tar.gz: stopped after expanding 5.0 MB"]


def test_a_corrupt_archive_fails_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "torn.tar.gz"
    path.write_bytes(gzip.compress(b"not a tar archive at all" * 100)[:200])
    with pytest.raises(ExtractionError, match=r"^corrupt archive torn.tar.gz: ") as caught:
        list(archive_members(path))
    assert "\n" not in str(caught.value)
