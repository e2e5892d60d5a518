"""A corpus of hostile files, built in a temporary folder at test time (nothing is committed).

Each file must end ``indexed``, ``failed`` with a clear one-line error, or indexed by its
context only; none may stop the queue or hang it (the indexer runs as a separate process
under a timeout, so a hang fails the test instead of blocking it).

Memory bound: the indexing process, models included, stays under MEMORY_BOUND = 2 GiB of
peak resident memory. Measured here: about 0.55 GB in all (1.4 GB before the embedder cut its
calls to 512 tokens and the lying zip bomb was refused before inflating). Reading the 2 GB
file or inflating the 1 GB zip bomb would break the bound.

The hostile run uses chunks of 20,000 characters: the 50 MB line is cut to the 5,000,000
characters the extractor keeps, and embedding those as 5,000 chunks of 1,000 would take
minutes without testing anything more than 250 larger ones do.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from sensetree.engine import Engine
from sensetree.operations import SearchParams
from tests.support.index import status_counts, stored_chunks
from tests.support.realtree import snapshot
from tests.support.corpus import Labelled
from tests.support.zips import declare_member_size

pytestmark = pytest.mark.slow  # a fault suite

MEMORY_BOUND = 2 * 1024 ** 3  # bytes of peak RSS for the whole indexing process
GIB = 1024 ** 3


# --- the hostile files ------------------------------------------------------------------------


def _pdf(path: Path, text: str, user_password: str | None = None) -> None:
    """A one-page PDF; with a user password ("" = none needed to open), encrypted (RC4)."""
    from fpdf import FPDF

    pdf = FPDF()
    if user_password is not None:
        pdf.set_encryption(owner_password="owner-secret", user_password=user_password)
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 8, text)
    pdf.output(str(path))


def _docx_with_member(path: Path, write_document) -> None:
    """A real DOCX (python-docx) whose word/document.xml is written by ``write_document(member)``."""
    import docx

    skeleton = io.BytesIO()
    docx.Document().save(skeleton)
    with zipfile.ZipFile(skeleton) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            if info.filename == "word/document.xml":
                with archive.open("word/document.xml", "w", force_zip64=True) as member:
                    write_document(member)
            else:
                archive.writestr(info, source.read(info))


def _zip_bomb_docx(path: Path, expanded: int) -> None:
    """word/document.xml inflates to ``expanded`` bytes of one repeated byte (about 1,000:1)."""
    block = b"<" * (1 << 20)

    def bomb(member) -> None:
        for _ in range(expanded >> 20):
            member.write(block)

    _docx_with_member(path, bomb)


def _lying_zip_bomb_docx(path: Path) -> None:
    """The same bomb, but the zip headers declare a 2 KB member: the ratio check passes, so the
    member must be refused for holding more than 2 KB can compress to, before any inflating."""
    _zip_bomb_docx(path, 300 << 20)
    path.write_bytes(declare_member_size(path.read_bytes(), "word/document.xml", 2048))


def _real_docx(path: Path, text: str) -> None:
    import docx

    document = docx.Document()
    document.add_paragraph(text)
    document.save(str(path))


NAMES = {
    "quotes": "it's a \"quoted\" name.txt",
    "percent underscore": "100%_done_%s.txt",
    "newline": "line\nbreak.txt",
    "emoji": "notes 😀🔥.txt",
    "backslash": "back\\slash.txt",
    "leading dash": "-rf --all.txt",
    "sql": "x'; DROP TABLE files; --.txt",
    "rtl override": "invoice\u202etxt.exe",
    "decomposed": "cafe\u0301.txt",
    "long": "l" * 250 + ".txt",
}


def build_hostile_tree(root: Path) -> dict[str, Path]:
    """Write every hostile file under ``root``; return {case: path}."""
    rng = random.Random(66)
    place = Labelled(root)
    files = place.files

    place("corrupt pdf", "pdf/corrupt.pdf").write_bytes(b"%PDF-1.7\n" + rng.randbytes(20_000))
    place("truncated pdf", "pdf/truncated.pdf")
    _pdf(files["truncated pdf"], "The glacier survey was cut short. " * 40)
    files["truncated pdf"].write_bytes(files["truncated pdf"].read_bytes()[:700])
    _pdf(place("encrypted pdf", "pdf/encrypted.pdf"), "Secret budget for the harbour crane.", user_password="s3cret")
    _pdf(place("owner-only pdf", "pdf/owner_only.pdf"), "Printable but not editable: the orchard lease.",
         user_password="")
    _zip_bomb_docx(place("zip bomb docx", "office/bomb.docx"), 1 * GIB)
    _lying_zip_bomb_docx(place("lying zip bomb docx", "office/lying_bomb.docx"))
    place("docx that is text", "office/not_really.docx").write_text("plain text in disguise", encoding="utf-8")
    _real_docx(place("docx control", "office/real.docx"), "The violin workshop opens on Monday.")

    with open(place("2 GB sparse", "big/sparse_2gb.txt"), "wb") as handle:
        handle.truncate(2 * GIB)
    with open(place("50 MB line", "big/one_line.txt"), "wb") as handle:
        words = b"harbour crane lease volcano tram saffron kayak orchard "
        handle.write(words * ((50 * 1024 * 1024) // len(words)))

    place("invalid utf-8", "text/invalid_utf8.txt").write_bytes(
        "Le café du marché ouvre à huit heures. ".encode() * 20 + b"\xff\xfe\xc3\x28\xa0\xa1" + b" fin")
    place("utf-16 no bom", "text/utf16_le.txt").write_bytes(
        "The lighthouse logbook records the storm of 1953. ".encode("utf-16-le") * 10)
    place("utf-16 be no bom", "text/utf16_be.txt").write_bytes(
        "Beekeeping notes: the queen was marked in May. ".encode("utf-16-be") * 10)
    place("binary with txt name", "text/random.txt").write_bytes(rng.randbytes(30_000))
    place("nul bytes in text", "text/nuls.txt").write_bytes(b"chess\x00opening\x00notes " * 50)
    place("empty", "empty/zero.txt").write_bytes(b"")
    place("empty pdf", "empty/zero.pdf").write_bytes(b"")
    place("empty docx", "empty/zero.docx").write_bytes(b"")
    place("whitespace only", "empty/blank.md").write_text(" \n\t\n  \n", encoding="utf-8")
    place("deep json", "text/deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    place("deep html", "text/deep.html").write_text("<div>" * 50_000 + "tram schedule" + "</div>" * 50_000,
                                                   encoding="utf-8")

    for case, name in NAMES.items():
        place(f"name: {case}", f"names/{name}").write_text(f"A file whose name is {case}.", encoding="utf-8")
    place("name: not utf-8", "names/placeholder")  # replaced below by a name that is not UTF-8
    raw = os.fsencode(root / "names") + b"/caf\xe9 latin-1.txt"
    with open(raw, "wb") as handle:
        handle.write(b"A file whose name is Latin-1 bytes.")
    files["name: not utf-8"] = Path(os.fsdecode(raw))

    links = root / "links"
    links.mkdir()
    (links / "a").symlink_to(links / "b")
    (links / "b").symlink_to(links / "a")
    (links / "parent").symlink_to("..")
    (links / "self").symlink_to(".")
    (links / "dangling.txt").symlink_to(links / "nowhere.txt")
    (links / "zero").symlink_to("/dev/zero")
    os.mkfifo(links / "fifo.txt")
    files["link loop"] = links / "a"

    deep = root / "deep"  # deeper than Python's recursion limit, shorter than PATH_MAX
    deep.mkdir()
    for _ in range(1500):
        deep = deep / "d"
        deep.mkdir()
    (deep / "bottom.txt").write_text("The deepest note of the tree.", encoding="utf-8")
    files["1500 folders deep"] = deep / "bottom.txt"
    return files


# --- what each file must end as ---------------------------------------------------------------

# case -> (status, doc_type, words the error or the stored text must hold)
EXPECTED = {
    "corrupt pdf": ("failed", "context", "corrupt PDF"),
    "truncated pdf": ("failed", "context", "corrupt PDF"),
    "encrypted pdf": ("failed", "context", "encrypted PDF"),
    "owner-only pdf": ("indexed", "pdf", "orchard lease"),
    "zip bomb docx": ("failed", "context", "zip bomb"),
    "lying zip bomb docx": ("failed", "context", "corrupt DOCX"),
    "docx that is text": ("failed", "context", "corrupt DOCX"),
    "docx control": ("indexed", "docx", "violin workshop"),
    "2 GB sparse": ("indexed", "text", "too large to index"),
    "50 MB line": ("indexed", "text", "text truncated"),
    "invalid utf-8": ("indexed", "text", "café du marché"),
    "utf-16 no bom": ("indexed", "text", "lighthouse logbook"),
    "utf-16 be no bom": ("indexed", "text", "queen was marked"),
    "binary with txt name": ("indexed", "context", "binary file"),
    "nul bytes in text": ("indexed", "text", "chess opening notes"),
    "empty": ("indexed", "text", "empty file"),
    "empty pdf": ("indexed", "pdf", "empty file"),
    "empty docx": ("indexed", "docx", "empty file"),
    "whitespace only": ("indexed", "markdown", "empty file"),
    "deep json": ("indexed", "json", "[[[["),
    "deep html": ("indexed", "html", "tram schedule"),
    "1500 folders deep": ("indexed", "text", "deepest note"),
    **{f"name: {case}": ("indexed", "text", f"name is {case}") for case in NAMES},
}

# Reports the outcome as JSON, with the peak resident memory of the whole process. The peak is
# VmHWM, not getrusage: Linux carries the parent's resident size at fork into the child's
# ru_maxrss across exec, so under a long pytest run (2-3 GB) it reported pytest's size.
INDEX_AND_REPORT = """
import json, sys
from sensetree.engine import Engine
with Engine(sys.argv[1]) as engine:
    progress = engine.index()
    rows = {r.path: [r.status, r.doc_type, r.chunks, r.error] for r in engine.catalog.files.all()}
peak = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"rows": rows, "max_rss": peak}))
"""


def _index(data: Path, script: str = INDEX_AND_REPORT, *args: str, timeout: float = 600) -> tuple[dict, str]:
    """Index in a separate process; a hang past ``timeout`` fails the test instead of blocking it."""
    try:
        result = subprocess.run([sys.executable, "-c", script, str(data), *args],
                                capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"indexing hung for more than {timeout:.0f} s")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1]), result.stderr


def _remove_deep_folders(top: Path) -> None:
    """Delete a tree of any depth bottom-up: shutil.rmtree (and so pytest's own clean-up of old
    temporary folders) recurses once per level and fails at 1,500 levels."""
    stack = [str(top)]
    while stack:
        entries = list(os.scandir(stack[-1]))
        folders = [e.path for e in entries if e.is_dir(follow_symlinks=False)]
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                os.unlink(entry.path)
        if folders:
            stack += folders
        else:
            os.rmdir(stack.pop())


@pytest.fixture
def hostile_root(tmp_path):
    root = tmp_path / "tree"
    yield root
    _remove_deep_folders(root)


def test_hostile_corpus_ends_indexed_context_only_or_failed(tmp_path, hostile_root, make_engine):
    root = hostile_root
    files = build_hostile_tree(root)
    data = tmp_path / "data"
    make_engine(data, root, settings={"indexing.chunk_size": 20_000}, index=False).close()
    report, stderr = _index(data)

    rows = report["rows"]
    with Engine(data) as engine:
        assert status_counts(engine)["pending"] == 0, "nothing is left stuck in the queue"
        snapshot(engine)  # one vector per stored chunk, no duplicates, no orphans
        for case, (status, doc_type, words) in EXPECTED.items():
            path = os.path.normpath(str(files[case]))
            assert path in rows, f"{case}: not in the catalog"
            got_status, got_type, chunks, error = rows[path]
            assert (got_status, got_type) == (status, doc_type), (case, rows[path])
            assert chunks >= 1, f"{case}: no entry to find it by"
            stored = " ".join(c["text"] for c in stored_chunks(engine, path))
            assert words in (error or "") or words in stored, (case, error, stored[:300])
            if status == "failed":
                assert error and len(error.splitlines()) == 1 and len(error) < 300, (case, error)
        assert engine.run(SearchParams("chess opening notes", limit=3)).results  # the queue went on after them all

    indexed_links = [p for p in rows if "/links/" in p]
    assert indexed_links == [], "symbolic link loops, FIFOs, /dev/zero and dangling links are skipped"
    assert str(files["name: not utf-8"]) not in rows
    assert "not valid UTF-8" in stderr
    assert report["max_rss"] < MEMORY_BOUND, f"peak memory {report['max_rss'] / 2**20:.0f} MB"


# The scan is hooked: right after it lists the files, they change under the indexer.
MUTATE_AFTER_SCAN = """
import json, os, sys, threading, time
from pathlib import Path
from sensetree.engine import Engine

root = Path(sys.argv[2])
stop = threading.Event()

def grow() -> None:
    with open(root / "growing.log", "a", encoding="utf-8") as log:
        while not stop.is_set():
            log.write("tram departure logged at the depot\\n")
            log.flush()
            time.sleep(0.002)

real_scan = Engine.scan

def scan_then_mutate(self):
    report = real_scan(self)
    (root / "fifo.txt").unlink()
    os.mkfifo(root / "fifo.txt")                   # opening it would wait for a writer forever
    (root / "folder.txt").unlink()
    (root / "folder.txt").mkdir()                  # a folder where the file was
    (root / "vanished.txt").unlink()
    (root / "changed.txt").write_text("the saffron harvest moved to October " * 40, encoding="utf-8")
    (root / "truncated.txt").write_text("", encoding="utf-8")
    threading.Thread(target=grow, daemon=True).start()
    return report

Engine.scan = scan_then_mutate
with Engine(sys.argv[1]) as engine:
    engine.index()
stop.set()
print(json.dumps({"rows": {r.path: [r.status, r.doc_type, r.chunks, r.error] for r in Engine(sys.argv[1]).catalog.files.all()}}))
"""


def test_files_that_change_vanish_or_turn_into_something_else_after_the_scan(tmp_path, make_engine):
    root = tmp_path / "tree"
    root.mkdir()
    for name in ("fifo.txt", "folder.txt", "vanished.txt", "changed.txt", "truncated.txt", "kept.txt", "growing.log"):
        (root / name).write_text(f"The {name} note about the harbour crane. " * 30, encoding="utf-8")
    data = tmp_path / "data"
    make_engine(data, root, settings={"indexing.chunk_size": 1000}, index=False).close()
    report, _ = _index(data, MUTATE_AFTER_SCAN, str(root), timeout=300)
    rows = report["rows"]
    for gone in ("fifo.txt", "folder.txt", "vanished.txt"):
        assert str(root / gone) not in rows, f"{gone} is no longer a file: its entry leaves the index"
    assert rows[str(root / "changed.txt")][0] == "indexed" and rows[str(root / "kept.txt")][0] == "indexed"

    # The next pass sees the tree as it now is, and ends equal to a clean index of it.
    os.unlink(root / "fifo.txt")
    _index(data)
    with Engine(data) as engine:
        recovered = snapshot(engine)
        assert "saffron" in stored_chunks(engine, str(root / "changed.txt"))[0]["text"]
    clean = tmp_path / "clean"
    with make_engine(clean, root, settings={"indexing.chunk_size": 1000}) as engine:
        assert recovered == snapshot(engine)


UNREADABLE = """
import json, os, sys
from pathlib import Path
from sensetree.engine import Engine
from sensetree.operations import AddRootParams, SetParams

data, root = Path(sys.argv[1]), sys.argv[2]
if os.geteuid() == 0:
    # root reads anything: index a scratch tree first (every module an index run needs gets
    # imported while the interpreter's files are readable), then drop to nobody. As nobody the
    # interpreter cannot start again, so worker processes cannot start: the files are read in
    # this process, which must hold the readers' modules (and the language model) already.
    from sensetree.ingest.prepare import Job, prepare

    warm = data.parent / "warm"
    (warm / "tree").mkdir(parents=True)
    note = warm / "tree" / "w.txt"
    note.write_text("Warm up: the notes of the harbour committee about the tram depot and its budget.",
                    encoding="utf-8")
    with Engine(warm / "data") as engine:
        engine.run(SetParams("embedding.model", "minilm"))
        engine.run(AddRootParams(str(warm / "tree")))
        engine.index()
    prepare(Job(str(note), "file", None))
    os.setgid(65534)
    os.setuid(65534)
    from sensetree.ingest import workers

    workers.STARTUP_SECONDS = 2.0  # no worker can start as nobody: fall back to this process without the 30 s wait
with Engine(data) as engine:
    engine.run(SetParams("embedding.model", "minilm"))
    engine.run(AddRootParams(root))
    engine.index()
    rows = {r.path: [r.status, r.doc_type, r.chunks, r.error] for r in engine.catalog.files.all()}
print(json.dumps({"rows": rows}))
"""


def test_unreadable_file_and_folder(tmp_path):
    """Permission denied: the file fails with a one-line error and keeps its context entry; the folder
    is skipped with a warning. Tests run as root in CI, where chmod 000 blocks nothing, so the
    indexing process then drops to the ``nobody`` user after loading its code."""
    base = Path(tempfile.mkdtemp(prefix="sensetree-unreadable-"))
    try:
        base.chmod(0o755)
        root = base / "tree"
        root.mkdir()
        (root / "open.txt").write_text("Readable notes about the tram depot.", encoding="utf-8")
        (root / "locked.txt").write_text("Secret notes.", encoding="utf-8")
        (root / "locked.txt").chmod(0)
        (root / "locked_folder").mkdir()
        (root / "locked_folder" / "inside.txt").write_text("Hidden by the folder's mode.", encoding="utf-8")
        (root / "locked_folder").chmod(0)
        data = base / "data"
        data.mkdir(mode=0o777)
        data.chmod(0o777)
        report, stderr = _index(data, UNREADABLE, str(root), timeout=300)
        rows = report["rows"]
        status, doc_type, chunks, error = rows[str(root / "locked.txt")]
        assert (status, doc_type, chunks) == ("failed", "context", 1)
        assert error == f"cannot read: {root / 'locked.txt'}: Permission denied"
        assert rows[str(root / "open.txt")][0] == "indexed"
        assert not any("locked_folder" in p for p in rows)
        assert f"skipped folder {root / 'locked_folder'}: Permission denied" in stderr
    finally:
        (base / "tree" / "locked_folder").chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)
