"""The error tree carries its kind: each class its status, mapped once by every interface; ``NotFound``
replaces ``FileNotFoundError`` as the product's error; the store repairs only on its own libraries' errors."""

from __future__ import annotations

import sqlite3

import pytest

from sensetree.config import SettingsError
from sensetree.engine import Engine
from sensetree.errors import (BadInput, DataDirReadOnly, ModelError, NotFound, ReadOnlyIndex, SenseTreeError,
                              StoreDamaged, WriterBusy)
from sensetree.interfaces.api.statuses import status_of
from sensetree.operations import FileParams, SummariseParams
from sensetree.reader import OutsideRoots, Unreadable
from sensetree.store.storage import raised_by_the_store


def test_each_error_says_its_status():
    expected = {SenseTreeError: 400, BadInput: 400, OutsideRoots: 403, ReadOnlyIndex: 403, NotFound: 404,
                WriterBusy: 409, Unreadable: 422, SettingsError: 422, ModelError: 503, StoreDamaged: 503,
                DataDirReadOnly: 400}
    assert {kind: status_of(kind("x")) for kind in expected} == expected
    assert status_of(KeyError("x")) == 500  # not ours: a bug


def test_not_found_is_ours_and_still_what_open_raises():
    error = NotFound("/nowhere is not a file")
    assert isinstance(error, SenseTreeError) and isinstance(error, FileNotFoundError)
    assert str(error) == "/nowhere is not a file"


def test_a_missing_file_is_not_found(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    with Engine(tmp_path / "data") as engine:
        engine.choose().add_root(str(root))
        with pytest.raises(NotFound):
            engine.run(FileParams(str(root / "gone.txt")))
        with pytest.raises(NotFound, match="does not exist"):
            engine.run(SummariseParams(str(root / "gone.txt")))


def test_only_errors_from_the_store_libraries_may_mean_damage(tmp_path):
    def ours():
        raise ValueError("a bug of ours")

    try:
        ours()
    except ValueError as exc:
        assert not raised_by_the_store(exc)
    with Engine(tmp_path / "data") as engine:
        checked = []
        engine.storage._repair = lambda exc: checked.append(exc) or False
        with pytest.raises(ValueError, match="a bug of ours"):
            engine.storage.recovering(ours)
        assert checked == []  # passed through without a look at the files

        def locked():
            raise sqlite3.OperationalError("database is locked")

        with pytest.raises(sqlite3.OperationalError):
            engine.storage.recovering(locked)
        assert len(checked) == 1  # SQLite's own: its files are checked
