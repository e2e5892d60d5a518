"""Settings (design §8): defaults, a TOML file that round-trips, and a corrupt file that never stops start-up."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from sensetree.config import DEFAULTS, SETTINGS_FILE, Settings, SettingsError, default_data_dir, parse_value


def test_spec_defaults():
    settings = Settings.load(Path("/nonexistent/dir/for/sure"))
    assert settings.problem is None and settings.values == {}
    assert settings.get("retrieval.hybrid") is True
    assert settings.get("retrieval.rerank") is True
    assert settings["indexing.chunk_size"] == 1000
    assert settings["indexing.overlap"] == 200
    assert settings["indexing.qualify_documents"] is True
    assert settings["indexing.qualify_context"] is True
    assert settings["embedding.model"] == "intfloat/multilingual-e5-small"
    assert settings["embedding.base_url"] == ""
    assert settings.as_dict() == {k: v[0] for k, v in DEFAULTS.items()}


def test_set_get_roundtrip_persists_to_toml(tmp_path):
    settings = Settings.load(tmp_path)
    settings.set("retrieval.hybrid", False)
    settings.set("indexing.chunk_size", 500)
    settings.set("sense.timeout", 12.5)
    settings.set("chat.model", "llama3.1:8b")
    settings.set("retrieval.reranker_model", r"C:\models\my reranker")
    assert settings.get("retrieval.hybrid") is False and settings.get("indexing.chunk_size") == 500

    document = tomllib.loads((tmp_path / SETTINGS_FILE).read_text(encoding="utf-8"))
    assert document == {
        "retrieval": {"hybrid": False, "reranker_model": r"C:\models\my reranker"},
        "indexing": {"chunk_size": 500},
        "sense": {"timeout": 12.5},
        "chat": {"model": "llama3.1:8b"},
    }
    again = Settings.load(tmp_path)
    assert again.problem is None
    assert again.values == {"retrieval.hybrid": False, "indexing.chunk_size": 500, "sense.timeout": 12.5,
                            "chat.model": "llama3.1:8b", "retrieval.reranker_model": r"C:\models\my reranker"}
    assert again.get("retrieval.rerank") is True  # untouched keys keep their defaults
    assert not (tmp_path / "settings.tmp").exists()


def test_set_overwrites_and_keeps_comments(tmp_path):
    (tmp_path / SETTINGS_FILE).write_text("# my settings\n[indexing]\n# smaller chunks\nchunk_size = 700\n",
                                          encoding="utf-8")
    settings = Settings.load(tmp_path)
    assert settings["indexing.chunk_size"] == 700
    settings.set("indexing.chunk_size", 800)
    text = (tmp_path / SETTINGS_FILE).read_text(encoding="utf-8")
    assert "# my settings" in text and "# smaller chunks" in text
    assert Settings.load(tmp_path)["indexing.chunk_size"] == 800


def test_set_creates_the_data_dir(tmp_path):
    settings = Settings.load(tmp_path / "new" / "home")
    settings.set("embedding.threads", 4)
    assert Settings.load(tmp_path / "new" / "home")["embedding.threads"] == 4


@pytest.mark.parametrize("raw, expected", [("true", True), ("TRUE", True), (" yes ", True), ("on", True), ("1", True),
                                           ("false", False), ("No", False), ("off", False), ("0", False)])
def test_parse_bool(raw, expected):
    assert parse_value("retrieval.hybrid", raw) is expected


@pytest.mark.parametrize("key, raw, expected", [
    ("indexing.chunk_size", "1500", 1500),
    ("indexing.chunk_size", " 64 ", 64),
    ("indexing.overlap", "0", 0),
    ("sense.timeout", "2.5", 2.5),
    ("sense.timeout", "30", 30.0),
    ("chat.model", "qwen2.5:7b", "qwen2.5:7b"),
    ("embedding.base_url", "", ""),
    ("embedding.base_url", "http://localhost:11434/v1", "http://localhost:11434/v1"),
])
def test_parse_typed_values(key, raw, expected):
    value = parse_value(key, raw)
    assert value == expected
    assert type(value) is type(DEFAULTS[key][0])


@pytest.mark.parametrize("key, raw", [
    ("retrieval.hybrid", "maybe"), ("retrieval.hybrid", ""), ("retrieval.rerank", "2"),
    ("indexing.chunk_size", "1.5"), ("indexing.chunk_size", "abc"), ("indexing.chunk_size", ""),
    ("sense.timeout", "soon"),
])
def test_parse_errors(key, raw):
    with pytest.raises(SettingsError):
        parse_value(key, raw)


def test_unknown_key_is_an_error(tmp_path):
    with pytest.raises(SettingsError, match="unknown setting"):
        parse_value("retrieval.nonsense", "1")
    settings = Settings.load(tmp_path)
    with pytest.raises(SettingsError):
        settings.get("retrieval.nonsense")
    with pytest.raises(SettingsError):
        settings["nonsense"]
    with pytest.raises(SettingsError):
        settings.set("indexing.nope", 3)
    assert not (tmp_path / SETTINGS_FILE).exists()


@pytest.mark.parametrize("content", [
    "[retrieval\nhybrid = false\n",
    "retrieval.hybrid = = false",
    "[retrieval]\nhybrid = false\nhybrid = true\n",   # duplicate key
    "\x00\x01 not toml at all ]]]",
])
def test_corrupt_file_gives_defaults_and_a_problem(tmp_path, content):
    (tmp_path / SETTINGS_FILE).write_text(content, encoding="utf-8")
    settings = Settings.load(tmp_path)
    assert settings.problem is not None and "not valid TOML" in settings.problem
    assert settings.values == {}
    assert settings.get("retrieval.hybrid") is True


def test_undecodable_file_gives_defaults_and_a_problem(tmp_path):
    (tmp_path / SETTINGS_FILE).write_bytes(b"[indexing]\nchunk_size = 5\n# \xff\xfe\n")
    settings = Settings.load(tmp_path)
    assert settings.problem is not None
    assert settings["indexing.chunk_size"] == 1000


def test_set_repairs_a_corrupt_file(tmp_path):
    (tmp_path / SETTINGS_FILE).write_text("[[[ broken", encoding="utf-8")
    settings = Settings.load(tmp_path)
    assert settings.problem
    settings.set("retrieval.rerank", False)
    assert settings.problem is None
    reloaded = Settings.load(tmp_path)
    assert reloaded.problem is None and reloaded["retrieval.rerank"] is False


def test_wrong_typed_values_fall_back_per_key(tmp_path):
    (tmp_path / SETTINGS_FILE).write_text(
        '[retrieval]\nhybrid = "yes"\nrerank = false\n'
        '[indexing]\nchunk_size = true\noverlap = 1.5\nbatch_size = 16\n'
        '[sense]\ntimeout = 30\n'
        '[chat]\nmodel = 42\nbase_url = "http://127.0.0.1:8080/v1"\n',
        encoding="utf-8")
    settings = Settings.load(tmp_path)
    assert settings.problem is not None and "should be" in settings.problem
    assert settings["retrieval.hybrid"] is True              # str for a bool: default
    assert settings["retrieval.rerank"] is False             # right type: kept
    assert settings["indexing.chunk_size"] == 1000           # bool for an int: default
    assert settings["indexing.overlap"] == 200               # float for an int: default
    assert settings["indexing.batch_size"] == 16
    assert settings["sense.timeout"] == 30.0 and type(settings["sense.timeout"]) is float  # int for a float: widened
    assert settings["chat.model"] == ""                      # int for a str: default
    assert settings["chat.base_url"] == "http://127.0.0.1:8080/v1"
    assert set(settings.values) == {"retrieval.rerank", "indexing.batch_size", "sense.timeout", "chat.base_url"}


def test_unknown_keys_and_odd_sections_in_the_file_are_ignored(tmp_path):
    (tmp_path / SETTINGS_FILE).write_text('indexing = 5\n[retrieval]\nfuture_knob = 3\nhybrid = false\n',
                                          encoding="utf-8")
    settings = Settings.load(tmp_path)
    assert settings.problem is None
    assert settings.values == {"retrieval.hybrid": False}
    assert settings["indexing.chunk_size"] == 1000


def test_default_data_dir_honours_sensetree_home(tmp_path, monkeypatch):
    monkeypatch.setenv("SENSETREE_HOME", str(tmp_path / "home"))
    assert default_data_dir() == tmp_path / "home"
    monkeypatch.delenv("SENSETREE_HOME")
    assert default_data_dir().name == "sensetree"


def test_fusion_takes_one_of_its_words(tmp_path):
    assert DEFAULTS["retrieval.fusion"][0] == "both"
    assert parse_value("retrieval.fusion", " rrf ") == "rrf"
    with pytest.raises(SettingsError, match="weighted or rrf"):
        parse_value("retrieval.fusion", "borda")
    settings = Settings.load(tmp_path)
    with pytest.raises(SettingsError):
        settings.set("retrieval.fusion", "borda")
    (tmp_path / SETTINGS_FILE).write_text('[retrieval]\nfusion = "borda"\nhybrid = false\n', encoding="utf-8")
    loaded = Settings.load(tmp_path)
    assert loaded["retrieval.fusion"] == "both" and loaded["retrieval.hybrid"] is False  # the default
    assert "retrieval.fusion" in loaded.problem


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root works in another user's folder")
def test_root_refuses_another_users_data_dir_and_leaves_nothing_there(tmp_path, cli):
    """`sudo sensetree search` in a user's data dir: refused, saying whose it is, before any file is made."""
    data = tmp_path / "data"
    data.mkdir()
    os.chown(data, 65534, 65534)
    for command in (["status"], ["search", "anything"], ["config", "get"]):
        done = cli.invoke(data, *command)
        assert done.exit_code == 1 and "belongs to" in done.output and "sudo -u" in done.output, done.output
    assert list(data.iterdir()) == []
