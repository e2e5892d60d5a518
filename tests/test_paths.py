"""Path rules and scope predicates (design §4), checked as strings and against a real LanceDB table."""

from __future__ import annotations

import numpy as np
import pytest

from sensetree import paths
from sensetree.paths import (
    any_scope_predicate,
    folder_prefix,
    is_under,
    is_windows_path,
    name_of,
    normalize,
    path_key,
    scope_predicate,
    sql_literal,
)
from sensetree.store.chunks import ChunkStore
from sensetree.store.table import ChunkRow

# --- pure string rules -------------------------------------------------------------------


@pytest.mark.parametrize("path, expected", [
    (r"C:\Users\me", True), ("C:/Users/me", True), ("c:\\", True), (r"\\server\share\x", True),
    ("//server/share", True), ("/home/me", False), ("relative/path", False), ("C:relative", False),
])
def test_is_windows_path(path, expected):
    assert is_windows_path(path) is expected


@pytest.mark.parametrize("raw, expected", [
    (r"C:\Users\me\Docs", r"C:\Users\me\Docs"),
    ("C:/Users/me/Docs", r"C:\Users\me\Docs"),
    (r"c:\users\ME\docs" + "\\", r"C:\users\ME\docs"),
    (r"C:\Users\me\100%_backup" + "\\", r"C:\Users\me\100%_backup"),
    (r"C:\Users\\me\.\Docs\sub\..", r"C:\Users\me\Docs"),
    (r"C:\..\..\x", r"C:\x"),
    ("C:/", "C:\\"),
    (r"\\server\share\x", r"\\server\share\x"),
    ("//server/share/x/", r"\\server\share\x"),
    (r"\\server\share\..\..\y", r"\\server\share\y"),
    ("/home/me/O'Brien/", "/home/me/O'Brien"),
    ("/home/me/./a/../b//c/", "/home/me/b/c"),
    ("/", "/"),
])
def test_normalize(raw, expected):
    assert normalize(raw) == expected


def test_normalize_relative_posix_is_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert normalize("sub/./x") == str(tmp_path / "sub" / "x")


@pytest.mark.parametrize("folder, expected", [
    (r"C:\Users\me\Docs", "C:\\Users\\me\\Docs\\"),
    ("C:/Users/me/Docs/", "C:\\Users\\me\\Docs\\"),
    ("C:\\", "C:\\"),
    (r"\\server\share\x", "\\\\server\\share\\x\\"),
    ("/home/me/O'Brien", "/home/me/O'Brien/"),
    ("/home/me/Docs/", "/home/me/Docs/"),
    ("/", "/"),
])
def test_folder_prefix(folder, expected):
    assert folder_prefix(folder) == expected


@pytest.mark.parametrize("path, folder, expected", [
    (r"C:\Users\me\Docs\a.txt", r"C:\Users\me\Docs", True),
    (r"C:\Users\me\Docs", r"C:\Users\me\Docs", True),
    (r"C:\Users\me\Docs\sub\deep\b.txt", "C:/Users/me/Docs/", True),
    (r"C:\Users\me\DocsEvil\a.txt", r"C:\Users\me\Docs", False),
    (r"C:\Users\me\DocsEvil", r"C:\Users\me\Docs", False),
    (r"C:\USERS\ME\DOCS\a.txt", r"c:\users\ME\docs", True),
    (r"c:\users\me\docs\a.txt", r"C:\Users\Me\Docs" + "\\", True),
    (r"D:\Users\me\Docs\a.txt", r"C:\Users\me\Docs", False),
    (r"C:\Users\me\100%_backup\a.txt", r"C:\Users\me\100%_backup" + "\\", True),
    (r"C:\Users\me\100x_backup\a.txt", r"C:\Users\me\100%_backup", False),
    (r"C:\Users\me\1000_backup\a.txt", r"C:\Users\me\100%_backup", False),
    (r"C:\Users\me\100%_backupX\a.txt", r"C:\Users\me\100%_backup", False),
    (r"\\server\share\x\f.txt", r"\\server\share\x", True),
    (r"\\server\share\xy\f.txt", r"\\server\share\x", False),
    (r"\\SERVER\Share\X\f.txt", "//server/share/x", True),
    ("/home/me/O'Brien/cv.txt", "/home/me/O'Brien/", True),
    ("/home/me/OBrien/cv.txt", "/home/me/O'Brien/", False),
    ("/home/me/Docs/a.txt", "/home/me/Docs", True),
    ("/home/me/DocsEvil/a.txt", "/home/me/Docs", False),
    ("/home/me/docs/a.txt", "/home/me/Docs", False),   # POSIX is case-sensitive
    ("/home/me/100x_backup/a", "/home/me/100%_backup", False),
    ("/anything/at/all", "/", True),
    (r"C:\anything", "C:\\", True),
])
def test_is_under(path, folder, expected):
    assert is_under(path, folder) is expected


def test_path_key_case_folds_only_windows():
    assert path_key(r"C:\Users\ME\x") == path_key("c:/users/me/X") == r"c:\users\me\x"
    assert path_key("/Home/Me") == "/Home/Me"


def test_name_of():
    assert name_of(r"C:\Users\me\a.txt") == "a.txt"
    assert name_of("/home/me/O'Brien/") == "O'Brien"


def test_sql_literal_doubles_quotes_only():
    assert sql_literal("O'Brien") == "'O''Brien'"
    assert sql_literal("a\\b%_c") == "'a\\b%_c'"
    assert sql_literal("''") == "''''''"


@pytest.mark.parametrize("scope, expected", [
    (r"C:\Users\me\100%_backup" + "\\", r"starts_with(lower(upper(path)), 'c:\users\me\100%_backup" + "\\')"),
    ("C:/Users/me/Docs", r"starts_with(lower(upper(path)), 'c:\users\me\docs" + "\\')"),
    (r"c:\users\ME\docs", r"starts_with(lower(upper(path)), 'c:\users\me\docs" + "\\')"),
    (r"\\server\share\x", r"starts_with(lower(upper(path)), '\\server\share\x" + "\\')"),
    ("/home/me/O'Brien/", "starts_with(path, '/home/me/O''Brien/')"),
    ("/home/me/Docs", "starts_with(path, '/home/me/Docs/')"),
])
def test_scope_predicate_text(scope, expected):
    assert scope_predicate(scope) == expected


def test_any_scope_predicate_text():
    assert any_scope_predicate(["/a", r"C:\B"]) == (
        "(starts_with(path, '/a/')) OR (starts_with(lower(upper(path)), 'c:\\b\\'))")


# --- the same predicates inside a real LanceDB table -------------------------------------------

STORED = [
    r"C:\Users\me\Docs\report.txt",
    r"C:\Users\me\Docs\sub\notes.txt",
    r"C:\USERS\ME\DOCS\shouting.txt",
    r"C:\Users\me\DocsEvil\evil.txt",
    r"C:\Users\me\100%_backup\a.txt",
    r"C:\Users\me\100x_backup\b.txt",
    r"C:\Users\me\1000_backup\c.txt",
    r"C:\Users\me\100%_backupX\d.txt",
    r"C:\Users\O'Neil\letter.txt",
    r"C:\Users\Élodie\cv.txt",
    r"D:\Users\me\Docs\other_drive.txt",
    r"\\server\share\x\unc.txt",
    r"\\server\share\xy\unc2.txt",
    "/home/me/O'Brien/cv.txt",
    "/home/me/OBrien/cv.txt",
    "/home/me/Docs/a.txt",
    "/home/me/DocsEvil/b.txt",
    "/home/me/docs/lower.txt",
    "/home/me/100%_backup/p.txt",
    "/home/me/100x_backup/q.txt",
    "/home/me/back\\slash/r.txt",
]

SCOPES = {
    r"C:\Users\me\Docs": {r"C:\Users\me\Docs\report.txt", r"C:\Users\me\Docs\sub\notes.txt",
                          r"C:\USERS\ME\DOCS\shouting.txt"},
    "C:/Users/me/Docs/": {r"C:\Users\me\Docs\report.txt", r"C:\Users\me\Docs\sub\notes.txt",
                          r"C:\USERS\ME\DOCS\shouting.txt"},
    r"c:\users\ME\docs": {r"C:\Users\me\Docs\report.txt", r"C:\Users\me\Docs\sub\notes.txt",
                          r"C:\USERS\ME\DOCS\shouting.txt"},
    r"C:\Users\me\Docs\sub": {r"C:\Users\me\Docs\sub\notes.txt"},
    r"C:\Users\me\100%_backup" + "\\": {r"C:\Users\me\100%_backup\a.txt"},
    r"C:\Users\O'Neil": {r"C:\Users\O'Neil\letter.txt"},
    r"c:\users\élodie": {r"C:\Users\Élodie\cv.txt"},
    r"\\server\share\x": {r"\\server\share\x\unc.txt"},
    r"\\SERVER\share": {r"\\server\share\x\unc.txt", r"\\server\share\xy\unc2.txt"},
    "/home/me/O'Brien/": {"/home/me/O'Brien/cv.txt"},
    "/home/me/Docs": {"/home/me/Docs/a.txt"},
    "/home/me/100%_backup": {"/home/me/100%_backup/p.txt"},
    "/home/me/back\\slash": {"/home/me/back\\slash/r.txt"},
    "/home/me/nothing-here": set(),
    "/home": {p for p in STORED if p.startswith("/home/")},
}


def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(384).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> ChunkStore:
    rng = np.random.default_rng(7)
    store = ChunkStore(tmp_path_factory.mktemp("paths-db"))
    rows = [ChunkRow(p, 0, f"commonword file number {i}", unit(rng), f"h{i}", 0.0) for i, p in enumerate(STORED)]
    store.writes.replace_files(STORED, rows, "test-model", 384)
    assert store.upkeep.has_fts_index()
    return store


@pytest.mark.parametrize("scope", list(SCOPES))
def test_scope_predicates_inside_lancedb(store, scope):
    expected = SCOPES[scope]
    where = scope_predicate(scope)
    assert {p for p in STORED if is_under(p, scope)} == expected  # the Python rule agrees
    assert store.table.count(where) == len(expected)
    query = unit(np.random.default_rng(1))
    assert {h["path"] for h in store.queries.dense(query, 100, where)} == expected
    assert {h["path"] for h in store.queries.sparse("commonword", 100, where)} == expected


def test_any_scope_predicate_inside_lancedb(store):
    where = any_scope_predicate([r"C:\Users\me\100%_backup", "/home/me/O'Brien", r"\\server\share\x"])
    expected = {r"C:\Users\me\100%_backup\a.txt", "/home/me/O'Brien/cv.txt", r"\\server\share\x\unc.txt"}
    assert store.table.count(where) == 3
    assert {h["path"] for h in store.queries.dense(unit(np.random.default_rng(2)), 100, where)} == expected
    assert {h["path"] for h in store.queries.sparse("commonword", 100, where)} == expected


def test_scope_is_a_prefilter_not_a_postfilter(store):
    """k=1 under a scope still finds the scope's row: the filter runs before the top-k cut."""
    where = scope_predicate(r"\\server\share\x")
    for seed in range(5):
        hits = store.queries.dense(unit(np.random.default_rng(100 + seed)), 1, where)
        assert [h["path"] for h in hits] == [r"\\server\share\x\unc.txt"]
    assert [h["path"] for h in store.queries.sparse("commonword", 1, where)] == [r"\\server\share\x\unc.txt"]


def test_rows_added_after_the_index_are_found_in_scope(tmp_path):
    rng = np.random.default_rng(3)
    store = ChunkStore(tmp_path / "db")
    first = [r"C:\Users\me\Docs\one.txt"]
    store.writes.replace_files(first, [ChunkRow(first[0], 0, "zebra crossing", unit(rng), "h", 0.0)], "test-model", 384)
    later = [r"C:\Users\me\Docs\two.txt", r"C:\Users\me\DocsEvil\three.txt"]
    store.writes.replace_files(later, [ChunkRow(p, 0, "zebra stripes", unit(rng), "h", 0.0) for p in later],
                               "test-model", 384)
    where = scope_predicate("c:/users/me/docs")
    assert {h["path"] for h in store.queries.sparse("zebra", 10, where)} == {r"C:\Users\me\Docs\one.txt",
                                                                              r"C:\Users\me\Docs\two.txt"}
    assert {h["path"] for h in store.queries.sparse("stripes", 10, None)} == set(later)
    assert store.table.count(where) == 2
    # replacing a file swaps its rows: the old text is gone from BM25
    store.writes.replace_files([later[0]], [ChunkRow(later[0], 0, "giraffe neck", unit(rng), "h2", 1.0)], "test-model", 384)
    assert {h["path"] for h in store.queries.sparse("stripes", 10, where)} == set()
    assert {h["path"] for h in store.queries.sparse("giraffe", 10, where)} == {later[0]}


def test_paths_module_has_no_like_patterns():
    """LIKE would make % and _ wildcards; the predicates must not use it."""
    for scope in SCOPES:
        assert " like " not in scope_predicate(scope).lower()
    assert paths.scope_predicate("/x") == "starts_with(path, '/x/')"
