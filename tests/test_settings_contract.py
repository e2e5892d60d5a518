"""Settings are a contract (issue 33): every key has a type and a range, checked in every interface
(``config set``, ``PUT /api/settings``, settings.toml), the range said in the refusal; NaN and infinities
are refused; a change that would wipe the index is checked (the model must exist) and confirmed first;
a settings.toml that is not valid TOML never lets defaults wipe the index.

The property tests throw values of every kind at every key: each is refused with a ``SettingsError``
that says the key's range, or accepted and then read back the same through settings.toml and GET.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import tomlkit
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sensetree.config import (BOUNDS, CHOICES, DEFAULTS, LAST_GOOD_FILE, SETTINGS_FILE, Settings, SettingsError,
                              check, parse_value, place, value_range)
from sensetree.engine import Engine
from sensetree.interfaces.api import ServerOptions, create_app
from sensetree.operations import SetParams, StatusParams
from sensetree.store.location import location
from tests.support.index import chunk_count, stores

KEYS = sorted(DEFAULTS)
TOKEN = "s" * 43
PORT = 8765


def _near_bounds(key: str) -> st.SearchStrategy:
    low, high = BOUNDS.get(key, (0, 0))
    edges = [low, high, low - 1, high + 1, low - 0.5, high + 0.5, 0, -1]
    return st.sampled_from(edges) if key in BOUNDS else st.nothing()


def values(key: str) -> st.SearchStrategy:
    """Anything a person or a client may send for ``key``: numbers of every size (NaN, infinities, the
    edges of its range), booleans, text (its own words, odd Unicode, control characters)."""
    return st.one_of(
        st.integers(min_value=-10**12, max_value=10**12), st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(), st.text(max_size=40), st.sampled_from(CHOICES.get(key, ("",))), _near_bounds(key),
        st.sampled_from([float("nan"), float("inf"), float("-inf"), "NaN", "inf", "-1", "0", "1e999", "minlm"]))


def _refusal_says_the_range(key: str, message: str) -> bool:
    return (value_range(key) in message or "must be less than indexing.chunk_size" in message
            or "no local embedding model named" in message)


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


key_and_value = st.sampled_from(KEYS).flatmap(lambda key: st.tuples(st.just(key), values(key)))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key_value=key_and_value)
def test_a_value_set_is_refused_with_its_range_or_read_back_from_the_file(tmp_path_factory, key_value):
    """As `config set` reads it (text) and as a caller of ``Settings.set`` gives it (a value)."""
    key, value = key_value
    folder = tmp_path_factory.mktemp("settings")
    stored = Settings.load(folder)
    for given_value in (value, str(value)):
        try:
            typed = parse_value(key, given_value) if isinstance(given_value, str) else given_value
            stored.set(key, typed)
        except SettingsError as exc:
            assert _refusal_says_the_range(key, str(exc)), (key, given_value, str(exc))
            continue
        kept = stored[key]
        assert isinstance(kept, type(DEFAULTS[key][0])) and not (isinstance(kept, float) and not math.isfinite(kept))
        again = Settings.load(folder)
        assert again.problem is None and _same(again[key], stored[key]), (key, given_value)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key_value=key_and_value)
def test_a_value_in_the_file_is_taken_or_its_default_with_a_problem_naming_the_range(tmp_path_factory, key_value):
    key, value = key_value
    folder = tmp_path_factory.mktemp("toml")
    table, name = key.split(".", 1)
    document = tomlkit.document()
    document[table] = tomlkit.table()
    try:
        document[table][name] = value
        text = tomlkit.dumps(document)
        tomlkit.parse(text)
    except Exception:
        return  # not something TOML can hold
    (folder / SETTINGS_FILE).write_text(text, encoding="utf-8")
    loaded = Settings.load(folder)
    try:
        expected = check(key, float(value) if isinstance(DEFAULTS[key][0], float) and type(value) is int else value)
        if key == "indexing.overlap" and expected >= DEFAULTS["indexing.chunk_size"][0]:
            raise SettingsError("must be less than indexing.chunk_size")
    except (SettingsError, OverflowError):
        assert loaded[key] == DEFAULTS[key][0] and loaded.problem and key in loaded.problem, (key, value)
        assert "should be" in loaded.problem or "must be less than" in loaded.problem
        return
    assert loaded.problem is None and _same(loaded[key], expected), (key, value, loaded.problem)


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    """The real app over an empty data dir, in this process."""
    engine = Engine(tmp_path_factory.mktemp("api") / "data")
    app = create_app(engine, TOKEN, ServerOptions(port=PORT))
    client = TestClient(app, base_url=f"http://127.0.0.1:{PORT}", client=("127.0.0.1", 50000),
                        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
                        raise_server_exceptions=False)
    yield client, engine
    engine.close()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key_value=key_and_value)
def test_put_settings_never_writes_an_invalid_value(api, key_value):
    """Each PUT is refused (422, the range said) or accepted; either way every later GET answers, with the
    value the file holds."""
    client, engine = api
    key, value = key_value
    body = json.dumps({"key": key, "value": value, "confirm": True}, allow_nan=True)  # NaN as JavaScript sends none
    response = client.put("/api/settings", content=body)
    assert response.status_code in (200, 422), (key, value, response.status_code, response.text)
    if response.status_code == 422:
        assert _refusal_says_the_range(key, response.json()["detail"]), (key, value, response.text)
    view = client.get("/api/settings")
    assert view.status_code == 200, (key, value, view.text)
    shown = {s["key"]: s["value"] for s in view.json()["settings"]}
    on_disk = Settings.load(engine.data_dir)
    assert on_disk.problem is None and not on_disk.unreadable
    assert all(_same(shown[k], on_disk[k]) for k in DEFAULTS), key
    if response.status_code == 200:
        assert _same(shown[key], response.json()["value"])
        for k in DEFAULTS:
            check(k, on_disk[k])


def test_nan_and_infinities_are_refused_everywhere(api, tmp_path):
    client, _ = api
    for raw in ("NaN", "Infinity", "-Infinity", "1e999"):
        response = client.put("/api/settings", content=f'{{"key": "indexing.file_timeout", "value": {raw}}}')
        assert response.status_code == 422 and "from 1 to 86400" in response.json()["detail"], raw
    assert client.get("/api/settings").status_code == 200
    for raw in ("nan", "inf", "-inf", "1e999"):
        with pytest.raises(SettingsError, match="from 1 to 86400"):
            parse_value("indexing.file_timeout", raw)
    (tmp_path / SETTINGS_FILE).write_text("[indexing]\nfile_timeout = nan\nocr_page_timeout = inf\n", encoding="utf-8")
    loaded = Settings.load(tmp_path)
    assert loaded["indexing.file_timeout"] == 120.0 and loaded["indexing.ocr_page_timeout"] == 60.0
    assert "from 1 to 86400" in loaded.problem


@pytest.mark.parametrize("key, raw", [
    ("indexing.chunk_size", "0"), ("indexing.chunk_size", "-5"), ("indexing.max_file_mb", "-1"),
    ("indexing.file_timeout", "-1"), ("indexing.file_timeout", "NaN"), ("embedding.threads", "-3"),
    ("indexing.batch_size", "0"), ("chat.context_window", "-1"),
])
def test_the_probes_out_of_range_values_are_refused_saying_the_range(tmp_path, key, raw):
    with pytest.raises(SettingsError) as refused:
        parse_value(key, raw)
    assert value_range(key) in str(refused.value)
    assert str(BOUNDS[key][0]) in str(refused.value) or f"{BOUNDS[key][0]:g}" in str(refused.value)


def test_the_overlap_stays_below_the_chunk_size(tmp_path):
    stored = Settings.load(tmp_path)
    with pytest.raises(SettingsError, match="must be less than indexing.chunk_size"):
        stored.set("indexing.overlap", 5000)
    stored.set("indexing.chunk_size", 150)  # the default overlap follows: half of it
    assert stored["indexing.overlap"] == 75
    stored.set("indexing.overlap", 100)
    with pytest.raises(SettingsError, match="must be less than indexing.chunk_size"):
        stored.set("indexing.chunk_size", 100)  # not below an overlap the user chose
    assert Settings.load(tmp_path).values == {"indexing.chunk_size": 150, "indexing.overlap": 100}
    stored.set_many({"indexing.chunk_size": 64, "indexing.overlap": 10})  # both smaller: checked together
    assert Settings.load(tmp_path).values == {"indexing.chunk_size": 64, "indexing.overlap": 10}
    (tmp_path / SETTINGS_FILE).write_text("[indexing]\nchunk_size = 300\noverlap = 300\n", encoding="utf-8")
    loaded = Settings.load(tmp_path)
    assert loaded["indexing.chunk_size"] == 300 and loaded["indexing.overlap"] == 150 and "overlap" in loaded.problem


def test_every_key_has_a_type_and_a_range_the_settings_view_says(api):
    client, _ = api
    for setting in client.get("/api/settings").json()["settings"]:
        assert setting["range"] == value_range(setting["key"]) and setting["range"]
    for key, (default, _) in DEFAULTS.items():
        assert check(key, default) == default  # every default is within its own range


# wiping the index ----------------------------------------------------------------------------
@pytest.fixture
def indexed(tmp_path, write_tree, make_engine):
    tree, data = tmp_path / "tree", tmp_path / "data"
    write_tree(tree, {"a.txt": "the harbour lighthouse keeper writes about the tides"})
    make_engine(data, tree).close()
    return data


def _rows(data: Path) -> tuple[int, str | None]:
    with stores(data) as stored:  # the index as the commands left it, read by the stores themselves
        return stored.chunks.table.count(), stored.catalog.meta("embedding_identity")


@pytest.mark.slow  # indexes, runs commands
def test_a_typo_in_the_model_is_refused_before_anything_is_wiped(indexed, cli):
    before = _rows(indexed)
    assert before[0] > 0
    for command in (["config", "set", "embedding.model", "minlm"], ["config", "set", "embedding.model", "minlm", "--yes"]):
        refused = cli.run(indexed, *command, check=False)
        assert refused.returncode == 1 and "no local embedding model named 'minlm'" in refused.stderr
        assert "minilm" in refused.stderr and "unexpected" not in refused.stderr
    assert _rows(indexed) == before
    assert json.loads(cli.run(indexed, "config", "get", "embedding.model", "--json").stdout) == "minilm"
    with Engine(indexed) as engine:
        with pytest.raises(SettingsError, match="no local embedding model"):
            engine.run(SetParams("embedding.model", "minlm", confirm=True))
        with pytest.raises(SettingsError, match="no local embedding model"):
            engine.run(SetParams("embedding.model", "minlm"))
    assert _rows(indexed) == before


@pytest.mark.slow  # indexes, runs commands
def test_a_change_that_wipes_the_index_says_so_and_asks(indexed, cli):
    before = _rows(indexed)
    refused = cli.run(indexed, "config", "set", "embedding.model", "e5", check=False)  # no terminal: no question
    assert refused.returncode == 1 and "is wiped" in refused.stderr and "--yes" in refused.stderr
    assert _rows(indexed) == before
    said_no = cli.invoke(indexed, "config", "set", "embedding.model", "e5", input="y\n")  # in-process: no terminal
    assert said_no.exit_code == 1 and _rows(indexed) == before
    done = cli.run(indexed, "config", "set", "embedding.model", "e5", "--yes")
    assert "vectors were wiped" in done.stderr and _rows(indexed)[0] == 0
    cli.run(indexed, "config", "set", "retrieval.rerank", "false")  # a key that wipes nothing asks nothing


def _on_a_terminal(data: Path, args: list[str], answer: str) -> str:
    """``sensetree ARGS`` with a pseudo-terminal for its stdin and stderr, answering its question with ``answer``;
    everything it printed."""
    import os
    import pty
    import select
    import subprocess
    import sys
    import time

    from tests.conftest import _environment

    main, terminal = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "sensetree.interfaces.cli", *args], stdin=terminal,
                               stdout=terminal, stderr=terminal, env=_environment(data), close_fds=True)
    os.close(terminal)
    said, answered, deadline = b"", False, time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 1)
            if ready:
                try:
                    chunk = os.read(main, 4096)
                except OSError:  # the command ended and closed the terminal
                    break
                if not chunk:
                    break
                said += chunk
            if not answered and b"Go on?" in said:
                os.write(main, answer.encode() + b"\n")
                answered = True
            if process.poll() is not None and not ready:
                break
        process.wait(timeout=60)
    finally:
        os.close(main)
        if process.poll() is None:
            process.kill()
    assert answered, said.decode(errors="replace")
    return said.decode(errors="replace")


@pytest.mark.slow  # indexes, runs commands on a terminal
def test_on_a_terminal_a_wiping_change_asks_and_no_changes_nothing(indexed):
    before = _rows(indexed)
    said = _on_a_terminal(indexed, ["config", "set", "embedding.model", "e5"], "n")
    assert "is wiped" in said and "nothing was changed" in said and _rows(indexed) == before
    said = _on_a_terminal(indexed, ["config", "set", "embedding.model", "e5"], "y")
    assert "vectors were wiped" in said.replace("\r\n", " ").replace("\n", " ") and _rows(indexed)[0] == 0


@pytest.mark.slow  # indexes
def test_put_settings_needs_a_confirmation_to_wipe_the_index(indexed):
    engine = Engine(indexed)
    client = TestClient(create_app(engine, TOKEN, ServerOptions(port=PORT)), base_url=f"http://127.0.0.1:{PORT}",
                        client=("127.0.0.1", 50000), headers={"Authorization": f"Bearer {TOKEN}"},
                        raise_server_exceptions=False)
    try:
        count = chunk_count(engine)
        refused = client.put("/api/settings", json={"key": "embedding.model", "value": "e5"})
        assert refused.status_code == 422 and "is wiped" in refused.json()["detail"]
        assert "confirm" in refused.json()["detail"] and chunk_count(engine) == count
        typo = client.put("/api/settings", json={"key": "embedding.model", "value": "minlm", "confirm": True})
        assert typo.status_code == 422 and "minilm" in typo.json()["detail"] and chunk_count(engine) == count
        done = client.put("/api/settings", json={"key": "embedding.model", "value": "e5", "confirm": True})
        assert done.status_code == 200 and "wiped" in done.json()["notice"]
    finally:
        engine.close()


# a settings.toml that is not valid TOML --------------------------------------------------------
BROKEN = '[embedding]\nmodel = "minilm"\n\n[retrieval]\nrerank = false\n\n[embedding]\nthreads = 2\n'  # a section twice


@pytest.mark.slow  # indexes, runs commands
def test_a_broken_settings_file_keeps_the_last_good_settings_and_wipes_nothing(indexed, cli):
    assert (indexed / LAST_GOOD_FILE).exists()  # kept when the file last read whole
    before = _rows(indexed)
    (indexed / SETTINGS_FILE).write_text(BROKEN, encoding="utf-8")
    loaded = Settings.load(indexed)
    assert loaded["embedding.model"] == "minilm" and not loaded.unreadable
    assert "line 7" in loaded.problem and LAST_GOOD_FILE in loaded.problem
    result = cli.run(indexed, "index")
    assert "not valid TOML" in result.stderr and "last good" in result.stderr
    assert _rows(indexed) == before


@pytest.mark.slow  # indexes, runs commands
def test_without_a_last_good_copy_index_refuses_to_wipe_on_defaults(indexed, cli):
    before = _rows(indexed)
    (indexed / LAST_GOOD_FILE).unlink()
    (indexed / SETTINGS_FILE).write_text(BROKEN, encoding="utf-8")
    assert Settings.load(indexed).unreadable
    refused = cli.run(indexed, "index", check=False)
    assert refused.returncode == 1 and "line 7" in refused.stderr and "unexpected" not in refused.stderr
    assert _rows(indexed) == before
    set_one = cli.run(indexed, "config", "set", "retrieval.rerank", "false", check=False)
    assert set_one.returncode == 1 and "line 7" in set_one.stderr  # defaults would become the file's
    assert _rows(indexed) == before and (indexed / SETTINGS_FILE).read_text(encoding="utf-8") == BROKEN
    shutil.copy(indexed / SETTINGS_FILE, indexed / "kept.toml")
    (indexed / SETTINGS_FILE).write_text('[embedding]\nmodel = "minilm"\n', encoding="utf-8")  # fixed by hand
    cli.run(indexed, "index")
    assert _rows(indexed) == before


# settings that name places, values of the wrong type, numbers as typed (issue 42) ---------------------------
def test_a_storage_uri_that_names_no_place_is_refused_when_set(tmp_path, cli):
    for uri in ("s3://", "s3:///prefix", "ftp://host/index", "s3://two words"):
        refused = cli.invoke(tmp_path, "config", "set", "storage.uri", uri)
        assert refused.exit_code == 1 and value_range("storage.uri") in " ".join(refused.output.split())
    assert cli.invoke(tmp_path, "config", "get", "storage.uri").output.strip() == ""


@settings(max_examples=400, deadline=None)
@given(uri=st.one_of(st.text(max_size=30), st.builds("{}://{}".format, st.sampled_from(["s3", "S3", "http", "", "s3:"]),
                                                     st.text(max_size=20))))
def test_every_storage_uri_accepted_names_a_place_under_the_data_dir_or_a_bucket(uri):
    """Whatever is typed: refused with the range, or a place the index can be opened at (a folder read
    against the data dir, whatever the working folder; a bucket)."""
    data = Path("/data dir")
    try:
        value = parse_value("storage.uri", uri)
    except SettingsError as exc:
        assert value_range("storage.uri") in str(exc)
        return
    where = location(place(value, data), data / "lancedb")
    assert where.uri.startswith(("s3://", str(data))) or Path(where.uri).is_absolute()
    if not value.startswith(("/", "~")) and "://" not in value:
        assert Path(where.uri).is_relative_to(data)


def test_a_relative_storage_uri_is_the_data_dirs_from_any_working_folder(tmp_path, monkeypatch):
    data = tmp_path / "data"
    for uri in ("relative/index", "null"):
        with Engine(data) as engine:
            engine.run(SetParams("storage.uri", uri))
        for folder in ("here", "there"):
            (tmp_path / folder).mkdir(exist_ok=True)
            monkeypatch.chdir(tmp_path / folder)
            with Engine(data) as engine:
                engine.run(StatusParams())
            assert not (tmp_path / folder / uri).exists()
        assert (data / uri).is_dir()


def test_a_storage_uri_that_cannot_be_opened_never_locks_the_settings_out(tmp_path, cli):
    data = tmp_path / "data"
    data.mkdir()
    (data / "blocker").write_text("a file where the folder would be", encoding="utf-8")
    (data / SETTINGS_FILE).write_text('[storage]\nuri = "blocker/index"\n', encoding="utf-8")
    got = cli.invoke(data, "config", "get", "storage.uri")
    assert got.exit_code == 0 and got.output.strip().endswith("blocker/index")
    status = cli.invoke(data, "status")
    assert status.exit_code == 1 and "cannot be opened" in status.output and "config set storage.uri" in status.output
    assert cli.invoke(data, "config", "set", "storage.uri", "").exit_code == 0  # the way out it named
    assert cli.invoke(data, "status").exit_code == 0


JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
                    max_leaves=4)


@pytest.fixture(scope="module")
def blank(tmp_path_factory):
    with Engine(tmp_path_factory.mktemp("blank")) as engine:
        yield engine


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(KEYS), value=JSON.filter(lambda v: not isinstance(v, str)))
def test_a_json_value_of_another_type_than_the_keys_is_refused_not_stored_as_text(blank, key, value):
    """``PUT /api/settings``'s body as the handler gets it: a list is no text, a number no word."""
    try:
        changed = blank.run(SetParams(key, value))
    except SettingsError as exc:
        assert exc.status == 422 and _refusal_says_the_range(key, str(exc)), (key, value, str(exc))
        return
    default = DEFAULTS[key][0]
    assert type(changed.value) is type(default) and changed.value == value, (key, value, changed.value)


def test_put_settings_refuses_a_list_for_a_text_key(blank):
    client = TestClient(create_app(blank, TOKEN, ServerOptions(port=PORT)), base_url=f"http://127.0.0.1:{PORT}",
                        client=("127.0.0.1", 50000), headers={"Authorization": f"Bearer {TOKEN}"})
    refused = client.put("/api/settings", json={"key": "chat.model", "value": ["qwen", "llama"]})
    assert refused.status_code == 422 and "text of up to" in refused.json()["detail"]
    assert client.get("/api/settings").json()["settings"][0]["key"]  # still answers
    assert blank.settings["chat.model"] == ""


NUMBERS = [key for key in KEYS if isinstance(DEFAULTS[key][0], (int, float)) and not isinstance(DEFAULTS[key][0], bool)]


@settings(max_examples=400, deadline=None)
@given(key=st.sampled_from(NUMBERS),
       raw=st.text(st.characters(categories=["Nd"]) | st.sampled_from("0123456789_+-.eE "), min_size=1, max_size=8))
def test_config_set_reads_only_plain_decimal_numbers(key, raw):
    """Python's int() and float() read Arabic-Indic digits and 1_000; a setting takes the digits 0-9 only."""
    try:
        parse_value(key, raw)
    except SettingsError as exc:
        assert value_range(key) in str(exc)
        return
    assert raw.strip().isascii() and "_" not in raw, raw
