"""The one confined reader (reader.py): every way out of the roots is refused here, once for all shells
(the chat tools, MCP, the HTTP preview and the explorer call it; their own tests check they do)."""

from __future__ import annotations

import os

import pytest

from sensetree.engine import Engine
from sensetree.reader import OutsideRoots, Reader, Unreadable
from sensetree.operations import AddRootParams


@pytest.fixture
def jail(tmp_path):
    """A root ``Docs`` with links out of it and in it, a prefix sibling ``DocsEvil`` and a secret next door."""
    docs, evil, secret = tmp_path / "Docs", tmp_path / "DocsEvil", tmp_path / "secret"
    for folder in (docs / "sub", evil, secret):
        folder.mkdir(parents=True)
    (docs / "a.txt").write_text("the harbour opens at nine " * 400, encoding="utf-8")
    (docs / "sub" / "b.txt").write_text("tide tables for March", encoding="utf-8")
    (docs / ".hidden.txt").write_text("dotfile", encoding="utf-8")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage")
    (evil / "e.txt").write_text("evil twin", encoding="utf-8")
    (secret / "s.txt").write_text("the vault code is 1234", encoding="utf-8")
    os.symlink(secret, docs / "link_out")
    os.symlink(secret / "s.txt", docs / "file_out.txt")
    os.symlink(docs / "a.txt", docs / "sub" / "link_in.txt")
    with Engine(tmp_path / "data") as engine:
        engine.run(AddRootParams(str(docs)))
        yield engine.reader(), tmp_path


ESCAPES = [
    lambda base: str(base / "Docs" / ".." / "secret" / "s.txt"),    # ..
    lambda base: "../secret/s.txt",                                 # .. from the root, relative
    lambda base: str(base / "Docs" / "link_out" / "s.txt"),         # a folder link that leaves the root
    lambda base: str(base / "Docs" / "file_out.txt"),               # a file link that leaves the root
    lambda base: str(base / "DocsEvil" / "e.txt"),                  # a sibling sharing the prefix
    lambda base: str(base / "secret" / "s.txt"),                    # an absolute path elsewhere
    lambda base: "/etc/passwd",
    lambda base: "C:\\Windows\\win.ini",                            # another drive
    lambda base: "\\\\server\\share\\x.txt",                        # a UNC path
    lambda base: str(base / "Docs") + "/%2e%2e/secret/s.txt",        # taken literally: a name, not ..
    lambda base: "",
    lambda base: "a.txt\0/etc/passwd",
]


@pytest.mark.parametrize("escape", ESCAPES)
def test_every_way_out_is_refused_for_reading_listing_and_quoting(jail, escape):
    reader, base = jail
    path = escape(base)
    with pytest.raises((OutsideRoots, FileNotFoundError)) as refused:
        reader.read_text(path, 4000)
    assert "vault" not in str(refused.value) and "evil twin" not in str(refused.value)
    with pytest.raises((OutsideRoots, FileNotFoundError)):
        reader.list_folder(path, 10)
    if path and "\0" not in path:
        assert not reader.allows(path) or not os.path.exists(path)  # allowed only as a name that is not there
    try:
        assert reader.chunk_text(path, 0) is None
    except OutsideRoots:
        pass


def test_reading_inside_the_roots_follows_the_one_link_policy_and_the_limits(jail):
    reader, base = jail
    docs = base / "Docs"
    read = reader.read_text(str(docs / "a.txt"), 4000)
    assert read.text.startswith("the harbour opens") and len(read.text) == 4000 and read.truncated
    assert reader.read_text(str(docs / "sub" / "link_in.txt"), 100).text.startswith("the harbour")  # a link that stays in
    assert reader.read_text("a.txt", 10).path == str(docs / "a.txt")  # relative to the root
    listing = reader.list_folder(str(docs), 100)
    names = [e.name for e in listing.entries]
    assert names == ["sub", "a.txt", "broken.pdf"]  # folders first; hidden entries and links leading out left out
    assert [e.name for e in reader.list_folder(str(docs / "sub"), 100).entries] == ["b.txt", "link_in.txt"]
    assert reader.list_folder(str(docs), 1).more == 2
    with pytest.raises(FileNotFoundError):
        reader.read_text(str(docs / "sub"), 10)  # a folder is not a file
    with pytest.raises(FileNotFoundError):
        reader.list_folder(str(docs / "a.txt"), 10)
    with pytest.raises(Unreadable, match="cannot be read"):
        reader.read_text(str(docs / "broken.pdf"), 10)


def test_a_reader_for_a_scope_reads_nothing_outside_it(tmp_path):
    docs = tmp_path / "Docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.txt").write_text("outside the scope", encoding="utf-8")
    (docs / "sub" / "b.txt").write_text("inside the scope", encoding="utf-8")
    os.symlink(docs / "a.txt", docs / "sub" / "up.txt")
    with Engine(tmp_path / "data") as engine:
        engine.run(AddRootParams(str(docs)))
        scoped: Reader = engine.reader(str(docs / "sub"))
        assert scoped.read_text(str(docs / "sub" / "b.txt"), 100).text == "inside the scope"
        for path in (str(docs / "a.txt"), str(docs / "sub" / "up.txt")):
            with pytest.raises(OutsideRoots):
                scoped.read_text(path, 100)
