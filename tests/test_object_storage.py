"""The index on S3-compatible storage: a real S3 server on loopback (SeaweedFS), one process writing the
index there and two `serve --read-only` processes searching it; the store's conditional writes,
and a second writer refused."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("boto3", reason="the s3 extra is not installed (pip install -e '.[s3]')")

import pyarrow as pa  # noqa: E402

from sensetree.engine import Engine  # noqa: E402
from sensetree.errors import ReadOnlyIndex, WriterBusy  # noqa: E402
from sensetree.store.lease import LEASE  # noqa: E402
from sensetree.store.location import NotOurs, S3Location  # noqa: E402
from tests.support.s3_server import S3Server, in_environment, restore  # noqa: E402
from tests.support.serve_process import Served  # noqa: E402
from sensetree.operations import SearchParams
from sensetree.operations import AddRootParams, SetParams

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def s3():
    server = S3Server()
    saved = in_environment(server)
    yield server
    restore(saved)
    server.stop()


@pytest.fixture
def uri(s3, request) -> str:
    bucket = s3.bucket(f"st-{request.node.name.replace('_', '-')[:40].lower().rstrip('-')}")  # S3 names end alnum
    return f"s3://{bucket}/team/index"


def _writer(data: Path, uri: str, tree: Path | None = None) -> Engine:
    engine = Engine(data)
    engine.run(SetParams("storage.uri", uri))
    engine.run(SetParams("embedding.model", "minilm"))
    engine.close()
    engine = Engine(data)
    if tree is not None:
        engine.run(AddRootParams(str(tree)))
    return engine


def _tree(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "lighthouse.txt").write_text("The lighthouse keeper logs every storm at midnight.", encoding="utf-8")
    (folder / "orchard.md").write_text("# Orchard\n\nThe apple harvest starts in late September.", encoding="utf-8")
    return folder


def test_the_store_refuses_a_second_create_and_a_stale_overwrite(uri):
    where = S3Location.parse(uri)
    etag = where.create("probe", b"first")
    with pytest.raises(NotOurs):
        where.create("probe", b"second")
    newer = where.replace("probe", b"third", etag)
    with pytest.raises(NotOurs):
        where.replace("probe", b"fourth", etag)  # the version it read is gone
    assert where.get("probe").data == b"third" and where.get("probe").etag == newer


def test_lance_commits_from_two_writers_at_once_lose_nothing(uri):
    """Lance writes each version's manifest with If-None-Match: racing commits are retried, not lost."""
    import lancedb

    where = S3Location.parse(uri)
    lancedb.connect(where.uri, storage_options=where.storage_options).create_table("race", pa.table({"n": [0]}))

    def append(start: int) -> None:
        table = lancedb.connect(where.uri, storage_options=where.storage_options).open_table("race")
        for n in range(start, start + 10):
            table.add(pa.table({"n": [n]}))

    threads = [threading.Thread(target=append, args=(start,)) for start in (1, 101)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    table = lancedb.connect(where.uri, storage_options=where.storage_options).open_table("race")
    assert sorted(table.to_arrow()["n"].to_pylist()) == [0, *range(1, 11), *range(101, 111)]


def test_a_second_writer_is_refused_with_who_holds_the_index(uri, tmp_path, s3):
    first = _writer(tmp_path / "first", uri, _tree(tmp_path / "tree"))
    second = _writer(tmp_path / "second", uri, tmp_path / "tree")
    try:
        with first.writer():
            with pytest.raises(WriterBusy, match=f"another sensetree process writes the index at {uri}"):
                with second.writer():
                    pass
            other = subprocess.run([sys.executable, "-m", "sensetree.interfaces.cli", "index", "--quiet",
                                    "--data-dir", str(tmp_path / "second")], capture_output=True, text=True,
                                   timeout=120, env={**os.environ, **s3.env})
            assert other.returncode == 1 and "writes the index at" in other.stderr, other.stderr
        with second.writer():  # released: the second one may write now
            pass
    finally:
        first.close()
        second.close()


def test_a_lease_left_by_a_killed_writer_on_this_machine_is_taken_over(uri, tmp_path):
    engine = _writer(tmp_path / "data", uri)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    where = S3Location.parse(uri)
    where.create(LEASE, json.dumps({"who": "killed", "host": socket.gethostname(), "pid": int(dead.stdout)}).encode())
    try:
        with engine.writer():
            assert json.loads(where.get(LEASE).data)["pid"] == os.getpid()
        assert where.get(LEASE) is None  # let go
    finally:
        engine.close()


def test_one_writer_two_read_only_search_nodes(uri, tmp_path, s3):
    tree = _tree(tmp_path / "tree")
    writer = _writer(tmp_path / "writer", uri, tree)
    nodes = []
    try:
        writer.index()
        assert not (tmp_path / "writer" / "lancedb" / "chunks.lance").exists()  # the chunks are in the bucket
        nodes = [Served(tmp_path / f"node{n}", "--read-only", "--index", uri, env=s3.env) for n in (1, 2)]
        for node in nodes:
            found = node.get("/api/search", q="lighthouse storm", rerank="false")
            assert found["results"][0]["path"] == str(tree / "lighthouse.txt")
            tree_view = node.get("/api/tree", q="apple harvest")
            assert tree_view["tree"] is not None
            preview = node.get("/api/preview", path=str(tree / "orchard.md"))
            assert "September" in preview["text"]
            refused = node.client.post("/api/roots", json={"path": str(tmp_path)})
            assert refused.status_code == 403 and "only searches" in refused.json()["detail"]
        assert nodes[0].token != nodes[1].token  # each node its own data dir, its own token
        assert nodes[0].client.get("/api/search", params={"q": "x"}, headers={"Authorization": "Bearer wrong"}
                                   ).status_code == 401

        (tree / "violin.txt").write_text("The violin workshop moved to the old railway station.", encoding="utf-8")
        writer.index()
        committed = time.monotonic()
        for node in nodes:
            while True:
                paths = [r["path"] for r in node.get("/api/search", q="violin workshop", rerank="false")["results"]]
                if str(tree / "violin.txt") in paths:
                    break
                assert time.monotonic() - committed < 15, "a search node did not see the new commit"
                time.sleep(0.2)
        print(f"new commit seen by both nodes {time.monotonic() - committed:.1f} s after it was made")
    finally:
        for node in nodes:
            node.stop()
        writer.close()


def test_a_read_only_engine_needs_only_the_uri_and_refuses_changes(uri, tmp_path):
    tree = _tree(tmp_path / "tree")
    with _writer(tmp_path / "writer", uri, tree) as writer:
        writer.run(SetParams("retrieval.hybrid", False))
        writer.index()
    with Engine(tmp_path / "reader", index=uri) as reader:
        assert reader.roots() == [str(tree)]
        assert reader.settings["embedding.model"] == "minilm" and reader.settings["retrieval.hybrid"] is False
        assert reader.run(SearchParams("lighthouse keeper", rerank=False)).results[0].path == str(tree / "lighthouse.txt")
        with pytest.raises(ReadOnlyIndex):
            reader.run(AddRootParams(str(tmp_path)))
        with pytest.raises(ReadOnlyIndex):
            reader.index()
    with pytest.raises(ReadOnlyIndex, match="no index at"):
        Engine(tmp_path / "elsewhere", index=uri.replace("/team/index", "/nothing"))
