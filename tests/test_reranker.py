"""Cross-encoder mechanics and model resolution, on a real (untrained-head) MiniLM cross-encoder."""

from __future__ import annotations

import http.server
import shutil
import threading
import time
from functools import partial
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from sensetree.models import registry
from sensetree.models.registry import (
    DEFAULT_RERANKER,
    RERANKERS,
    ModelDownloadError,
    find_reranker,
    list_rerankers,
    pull_reranker,
)
from sensetree.models.reranker import CrossEncoder, RerankerUnavailable, load_reranker
from tests.support.crossencoder_fixture import BASE_MODEL, build_test_cross_encoder, head_weights

QUERY = "where does the cat sleep?"
PASSAGES = [
    "The cat sleeps on the warm windowsill every afternoon.",
    "Quarterly revenue grew by four percent.",
    "Le chat dort sur le canapé.",
    "cat",
    "Python is a programming language that lets you work quickly and integrate systems. " * 6,
    "",
    "Cats spend most of the day asleep, usually somewhere warm and high up.",
]
ATOL = 1e-4


@pytest.fixture(scope="session")
def ce_folder(tmp_path_factory) -> Path:
    return build_test_cross_encoder(tmp_path_factory.mktemp("cross-encoder"))


@pytest.fixture(scope="session")
def encoder(ce_folder) -> CrossEncoder:
    return CrossEncoder(ce_folder, threads=1, batch_size=3)


@pytest.fixture(autouse=True)
def empty_hf_cache(tmp_path, monkeypatch):
    """Keep the developer's real HF cache and mirror settings out of resolution tests."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-hub"))
    monkeypatch.delenv("HF_ENDPOINT", raising=False)


def test_logits_shape_and_dtype(encoder):
    scores = encoder.logits(QUERY, PASSAGES)
    assert scores.shape == (len(PASSAGES),)
    assert scores.dtype == np.float32
    assert np.all(np.isfinite(scores))
    assert encoder.logits(QUERY, []).shape == (0,)


def test_head_matches_numpy_recomputation(encoder, ce_folder):
    """The appended head is CLS-state @ W + b of the base graph's last_hidden_state."""
    tokenizer = Tokenizer.from_file(str(ce_folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    base = ort.InferenceSession(str(BASE_MODEL), providers=["CPUExecutionProvider"])
    weight, bias = head_weights()
    expected = []
    for passage in PASSAGES:
        enc = tokenizer.encode(QUERY, passage)
        feed = {
            "input_ids": np.array([enc.ids], dtype=np.int64),
            "attention_mask": np.array([enc.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([enc.type_ids], dtype=np.int64),
        }
        hidden = base.run(["last_hidden_state"], feed)[0]
        expected.append((hidden[:, 0, :] @ weight + bias)[0, 0])
    single = CrossEncoder(ce_folder, threads=1, batch_size=1)
    np.testing.assert_allclose(single.logits(QUERY, PASSAGES), expected, atol=ATOL)
    # Padding inside batches must not change a passage's score.
    np.testing.assert_allclose(encoder.logits(QUERY, PASSAGES), expected, atol=ATOL)


@pytest.mark.parametrize("batch_size", [1, 2, 16])
def test_scores_do_not_depend_on_batch_size(encoder, ce_folder, batch_size):
    other = CrossEncoder(ce_folder, threads=1, batch_size=batch_size)
    np.testing.assert_allclose(other.logits(QUERY, PASSAGES), encoder.logits(QUERY, PASSAGES), atol=ATOL)


def test_scores_follow_input_order(encoder):
    scores = encoder.logits(QUERY, PASSAGES)
    perm = np.random.default_rng(7).permutation(len(PASSAGES))
    permuted = encoder.logits(QUERY, [PASSAGES[i] for i in perm])
    np.testing.assert_allclose(permuted, scores[perm], atol=ATOL)
    assert len(set(np.round(scores, 4))) > 1, "an untrained head still separates different passages"


def test_long_passages_are_truncated_to_max_length(ce_folder):
    short = CrossEncoder(ce_folder, threads=1, max_length=32)
    long_passage = " ".join(f"word{i}" for i in range(20_000))
    first = short.logits(QUERY, [long_passage, long_passage + " and a different ending"])
    again = short.logits(QUERY, [long_passage])
    # Both passages are cut at the same token, so they score the same, run after run.
    assert first[0] == pytest.approx(first[1], abs=ATOL)
    assert again[0] == pytest.approx(first[0], abs=ATOL)
    # A query longer than max_length must not fail either.
    assert np.isfinite(short.logits(long_passage, ["a passage"])).all()


def test_max_length_is_capped_by_model_positions(ce_folder):
    assert CrossEncoder(ce_folder, max_length=100_000).max_length == 510


def test_folder_without_model_is_unavailable(ce_folder, tmp_path):
    folder = tmp_path / "no-model"
    folder.mkdir()
    shutil.copyfile(ce_folder / "tokenizer.json", folder / "tokenizer.json")
    with pytest.raises(RerankerUnavailable, match=r"model\.onnx.*sensetree models pull"):
        CrossEncoder(folder)


def test_corrupt_model_is_unavailable(ce_folder, tmp_path):
    folder = tmp_path / "corrupt"
    folder.mkdir()
    shutil.copyfile(ce_folder / "tokenizer.json", folder / "tokenizer.json")
    (folder / "model.onnx").write_bytes(b"not an onnx graph")
    with pytest.raises(RerankerUnavailable, match="Could not load"):
        CrossEncoder(folder)


def test_load_missing_default_says_how_to_enable(tmp_path):
    with pytest.raises(RerankerUnavailable) as err:
        load_reranker(DEFAULT_RERANKER, tmp_path / "models")
    message = str(err.value)
    assert f"sensetree models pull {DEFAULT_RERANKER}" in message
    assert str(tmp_path / "models" / "BAAI--bge-reranker-v2-m3") in message


def test_find_by_path(ce_folder, tmp_path):
    assert find_reranker(str(ce_folder), tmp_path / "models") == ce_folder


def test_find_in_models_dir(ce_folder, tmp_path):
    models = tmp_path / "models"
    shutil.copytree(ce_folder, models / "acme--tiny-reranker")
    assert find_reranker("acme/tiny-reranker", models) == models / "acme--tiny-reranker"
    encoder = load_reranker("acme/tiny-reranker", models, threads=1)
    assert encoder.name == "acme/tiny-reranker"
    assert encoder.logits(QUERY, ["a cat"]).shape == (1,)


def _fake_snapshot(hub: Path, repo: str, files: dict[str, Path], revision: str = "0123abc") -> Path:
    """An HF-cache snapshot: files are symlinks into blobs/, as huggingface_hub lays them out."""
    repo_dir = hub / f"models--{repo.replace('/', '--')}"
    snapshot = repo_dir / "snapshots" / revision
    for rel, source in files.items():
        blob = repo_dir / "blobs" / f"{revision}-{Path(rel).name}"
        blob.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, blob)
        (snapshot / rel).parent.mkdir(parents=True, exist_ok=True)
        (snapshot / rel).symlink_to(blob)
    (repo_dir / "refs").mkdir(exist_ok=True)
    (repo_dir / "refs" / "main").write_text(revision)
    return snapshot


def test_find_in_hf_cache(ce_folder, tmp_path, monkeypatch):
    hub = tmp_path / "custom-hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    files = {"onnx/model_quantized.onnx": ce_folder / "model.onnx", "tokenizer.json": ce_folder / "tokenizer.json"}
    snapshot = _fake_snapshot(hub, RERANKERS[DEFAULT_RERANKER].repo, files)
    assert find_reranker(DEFAULT_RERANKER, tmp_path / "models") == snapshot


def test_find_in_hf_home(ce_folder, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    files = {"model.onnx": ce_folder / "model.onnx", "tokenizer.json": ce_folder / "tokenizer.json"}
    snapshot = _fake_snapshot(tmp_path / "hf-home" / "hub", "acme/tiny-reranker", files)
    assert find_reranker("acme/tiny-reranker", tmp_path / "models") == snapshot


def test_hf_snapshot_without_onnx_is_ignored(ce_folder, tmp_path):
    _fake_snapshot(tmp_path / "hf-hub", "BAAI/bge-reranker-v2-m3", {"tokenizer.json": ce_folder / "tokenizer.json"})
    assert find_reranker(DEFAULT_RERANKER, tmp_path / "models") is None


def test_default_reranker_is_not_installed_here(tmp_path):
    assert find_reranker(DEFAULT_RERANKER, tmp_path / "models") is None
    rows = {row["name"]: row for row in list_rerankers(tmp_path / "models")}
    assert set(rows) == set(RERANKERS)
    assert rows[DEFAULT_RERANKER]["default"] and not rows[DEFAULT_RERANKER]["installed"]
    assert rows[DEFAULT_RERANKER]["where"] is None


def test_every_spec_file_is_one_the_loader_looks_for():
    assert all(spec.onnx_file in registry.ONNX_CANDIDATES for spec in RERANKERS.values())


def test_pull_offline_fails_quickly(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "HF_BASE_URL", "http://127.0.0.1:9")
    started = time.monotonic()
    with pytest.raises(ModelDownloadError, match="Could not download"):
        pull_reranker(DEFAULT_RERANKER, tmp_path / "models")
    assert time.monotonic() - started < 10
    assert find_reranker(DEFAULT_RERANKER, tmp_path / "models") is None
    assert not list((tmp_path / "models").rglob("*.part"))


def test_pull_unknown_model(tmp_path):
    with pytest.raises(ModelDownloadError, match="Unknown reranker"):
        pull_reranker("nobody/nothing", tmp_path / "models")


def test_pull_from_a_local_mirror(ce_folder, tmp_path, monkeypatch):
    """The whole download path, served by a local HTTP server laid out like the hub."""
    spec = RERANKERS["BAAI/bge-reranker-base"]
    root = tmp_path / "mirror"
    served = root / spec.repo / "resolve" / "main"
    (served / spec.onnx_file).parent.mkdir(parents=True)
    shutil.copyfile(ce_folder / "model.onnx", served / spec.onnx_file)
    shutil.copyfile(ce_folder / "tokenizer.json", served / "tokenizer.json")  # no config.json: optional
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    seen: dict[str, tuple[int, int]] = {}
    try:
        folder = pull_reranker(spec.name, tmp_path / "models", lambda f, done, total: seen.update({f: (done, total)}))
    finally:
        server.shutdown()
    assert folder == tmp_path / "models" / "BAAI--bge-reranker-base"
    assert find_reranker(spec.name, tmp_path / "models") == folder
    size = (ce_folder / "model.onnx").stat().st_size
    assert seen[spec.onnx_file] == (size, size)
    assert load_reranker(spec.name, tmp_path / "models", threads=1).logits(QUERY, ["cat"]).shape == (1,)
