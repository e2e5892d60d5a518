"""Each distinct embedded text goes to the model once per model identity (ingest/reuse.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from sensetree.ingest.reuse import VECTORS_FILE, VectorReuse
from sensetree.models.embeddings import load_embedder
from tests.support.endpoint_server import EndpointServer
from tests.support.index import table_rows

LICENCE = ("Permission is hereby granted, free of charge, to any person obtaining a copy of this software "
           "and associated documentation files, to deal in the Software without restriction. ") * 12
CHANGES = "Version 2.4 fixes the parser for nested brackets and speeds up the cache of compiled patterns. " * 14


def _copies() -> dict[str, str]:
    """Packages with the same licence file (same name, same text) and their own notes: most chunks repeat."""
    files = {}
    for package in ("alpha", "beta", "gamma", "delta"):
        files[f"{package}/copyright"] = LICENCE
        files[f"{package}/changelog"] = CHANGES
        files[f"{package}/README"] = f"The {package} package parses bracketed expressions for the {package} tools. " * 5
    return files


def _vectors(engine) -> dict[tuple[str, int], np.ndarray]:
    table = table_rows(engine, "path", "chunk_index", "vector")
    return {(Path(r["path"]).relative_to(Path(r["path"]).parents[1]).as_posix(), r["chunk_index"]):
            np.asarray(r["vector"], np.float32) for r in table}


@pytest.fixture
def server():
    endpoint = EndpointServer()
    yield endpoint
    endpoint.stop()


def _index(tmp_path: Path, name: str, server, write_tree, make_engine, reuse: bool):
    tree = tmp_path / f"tree-{name}"
    write_tree(tree, _copies())
    settings = {"embedding.base_url": server.url, "indexing.reuse_vectors": reuse}
    return make_engine(tmp_path / f"data-{name}", tree, model="all-MiniLM-L6-v2", settings=settings)


@pytest.mark.slow  # starts an endpoint server and indexes twice
def test_an_endpoint_receives_each_distinct_text_once_and_the_index_is_the_same(tmp_path, server, write_tree,
                                                                                make_engine):
    with _index(tmp_path, "off", server, write_tree, make_engine, reuse=False) as engine:
        without = _vectors(engine)
    sent_without = Counter(server.embedding_inputs[1:])  # the first call probes the dimension
    assert max(sent_without.values()) == 4, "without reuse every copy goes to the model"

    server.embedding_inputs.clear()
    with _index(tmp_path, "on", server, write_tree, make_engine, reuse=True) as engine:
        with_reuse = _vectors(engine)
        sent = Counter(server.embedding_inputs[1:])
        assert set(sent) == set(sent_without) and max(sent.values()) == 1
        assert sum(sent.values()) < 0.5 * sum(sent_without.values())
        assert (tmp_path / "data-on" / VECTORS_FILE).exists()

        # A new copy, in a later run, is not sent either: its vectors were kept.
        server.embedding_inputs.clear()
        (tmp_path / "tree-on" / "epsilon").mkdir()
        (tmp_path / "tree-on" / "epsilon" / "copyright").write_text(LICENCE, encoding="utf-8")
        progress = engine.index()
        assert server.embedding_inputs[1:] == [] and progress.sent_to_model == 0
        assert progress.embedding.count > 0
        again = _vectors(engine)
        np.testing.assert_array_equal(again[("epsilon/copyright", 1)], again[("alpha/copyright", 1)])

    assert with_reuse.keys() == without.keys()
    for key, vector in without.items():  # the endpoint's vectors depend on the text alone: equal, byte for byte
        np.testing.assert_array_equal(with_reuse[key], vector, err_msg=str(key))


@pytest.mark.slow  # indexes twice, with worker processes
def test_the_bundled_model_gives_the_same_vectors_with_reuse_as_without(tmp_path, write_tree, make_engine):
    indexes = {}
    for reuse in (False, True):
        tree = tmp_path / f"tree-{reuse}"
        write_tree(tree, _copies())
        with make_engine(tmp_path / f"data-{reuse}", tree, settings={"indexing.reuse_vectors": reuse}) as engine:
            indexes[reuse] = _vectors(engine)
    assert indexes[True].keys() == indexes[False].keys()
    for key, vector in indexes[False].items():
        # int8 activations are scaled per call, so a row's vector moves in the 6th decimal with its batch
        # neighbours, reuse or not: the same vector, up to that.
        assert float(vector @ indexes[True][key]) > 0.99999, key
    copies = [indexes[True][(f"{p}/copyright", 0)] for p in ("alpha", "beta", "gamma", "delta")]
    assert all(np.array_equal(copies[0], c) for c in copies[1:]), "with reuse, copies share one vector"


def test_the_store_keeps_vectors_per_model_and_embeds_repeats_once(tmp_path):
    model = load_embedder("minilm")
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return model.embed_passages(texts)

    reuse = VectorReuse(tmp_path / VECTORS_FILE)
    texts = ["a licence paragraph", "a changelog line", "a licence paragraph"]
    first = reuse.vectors("minilm@1", 384, texts, embed)
    assert calls == [["a licence paragraph", "a changelog line"]]
    np.testing.assert_array_equal(first[0], first[2])

    again = reuse.vectors("minilm@1", 384, ["a changelog line"], embed)
    assert len(calls) == 1
    np.testing.assert_array_equal(again[0], first[1])

    reuse.vectors("other-model", 384, ["a changelog line"], embed)  # another identity embeds again
    assert calls[-1] == ["a changelog line"]
    reuse.vectors("minilm@1", 384, ["a changelog line"], embed)  # ... and its rows replaced the old model's
    assert calls[-1] == ["a changelog line"] and len(calls) == 3
    assert reuse.counts.texts == 6 and reuse.counts.sent == 4
    reuse.close()


@pytest.mark.slow  # indexes with worker processes, through the command
@pytest.mark.parametrize("damage", ["junk", "folder"])
def test_a_damaged_store_is_set_aside_and_rebuilt_with_one_line(tmp_path, write_tree, make_engine, cli, damage):
    """Junk bytes or a folder in place of vectors.sqlite: `index` sets it aside, says so once, and goes on."""
    tree, data = tmp_path / "tree", tmp_path / "data"
    write_tree(tree, {"a.txt": "the harbour lighthouse keeper writes about the tides"})
    make_engine(data, tree).close()
    store = data / VECTORS_FILE
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    if damage == "junk":
        store.write_bytes(b"\x00junk, not a database\xff" * 300)
    else:
        store.mkdir()
        (store / "inside.txt").write_text("a folder where the cache should be", encoding="utf-8")
    (tree / "b.txt").write_text("an otter swims in the estuary at dawn", encoding="utf-8")

    result = cli.run(data, "index")
    said = [line for line in result.stderr.splitlines() if "reuse cache was damaged" in line]
    assert len(said) == 1, result.stderr
    assert "unexpected error" not in result.stderr
    aside = [p for p in data.iterdir() if p.name.startswith("vectors.damaged-")]
    assert len(aside) == 1 and store.is_file()
    found = cli.run(data, "search", "otter estuary", "--json")
    assert "b.txt" in found.stdout
    again = cli.run(data, "index")  # healed: nothing more to say
    assert "damaged" not in again.stderr
