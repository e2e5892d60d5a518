"""Indexing on a real Ray cluster (`sensetree index --ray`): two raylets started with `ray start` on this
machine, one of which cannot see the tree (as a node without the share), a real tree, and kills:
of a worker node mid-run, of the head mid-run, of the whole cluster mid-run. Each time the index
ends equal to a clean single-machine index of the same tree."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the cluster extra is not installed (pip install -e '.[cluster]')")

from sensetree.engine import Engine  # noqa: E402
from tests.support.realtree import build_tree, snapshot  # noqa: E402
from tests.support.ray_cluster import RayCluster  # noqa: E402
from sensetree.operations import AddRootParams, SetParams
from tests.support.index import status_counts, stores

pytestmark = pytest.mark.slow
FILES = 160


def configure(engine: Engine) -> None:
    engine.run(SetParams("embedding.model", "minilm"))
    engine.run(SetParams("indexing.chunk_size", 400))
    engine.run(SetParams("indexing.overlap", 80))


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cluster") / "share"
    build_tree(folder, FILES)
    return folder


@pytest.fixture(scope="module")
def clean(tree, tmp_path_factory) -> dict:
    """The single-machine index of the tree: what every distributed run must end equal to."""
    with Engine(tmp_path_factory.mktemp("clean")) as engine:
        configure(engine)
        engine.run(AddRootParams(str(tree)))
        engine.index()
        return snapshot(engine)


@pytest.fixture(scope="module")
def cluster(tree):
    """A head that sees the tree and a node that does not (the head sends it the files' bytes)."""
    with RayCluster(cpus=1) as ray_cluster:
        ray_cluster.start_head()
        ray_cluster.add_node(hide=tree)
        yield ray_cluster


def _data_dir(path: Path, tree: Path) -> Path:
    with Engine(path) as engine:
        configure(engine)
        engine.run(AddRootParams(str(tree)))
    return path


def _index(data: Path, address: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "sensetree.interfaces.cli", "index", "--ray", address, "--quiet",
                             "--data-dir", str(data)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _statuses(data: Path) -> dict[str, int]:
    try:
        with sqlite3.connect(f"file:{data / 'catalog.sqlite'}?mode=ro", uri=True, timeout=5) as db:
            return dict(db.execute("SELECT status, COUNT(*) FROM files GROUP BY status").fetchall())
    except sqlite3.OperationalError:
        return {}


def _wait_for(condition, process: subprocess.Popen, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert process.poll() is None, f"the indexer ended before the kill: {process.stderr.read()}"
        assert time.monotonic() < deadline, "the indexer made no progress"
        time.sleep(0.1)


def test_workers_that_cannot_see_the_share_are_sent_the_files(cluster, tree, clean, tmp_path):
    with Engine(_data_dir(tmp_path / "data", tree)) as engine:
        engine.distribute(cluster.address)
        assert engine.pool.workers == 2
        progress = engine.index()
        assert progress.failed == 0
        assert engine.pool.sent > 0, "the node without the share was never sent a file"
        assert snapshot(engine) == clean
        with stores(engine.data_dir) as stored:
            assert stored.catalog.meta("embedding_identity") == "sentence-transformers/all-MiniLM-L6-v2@onnx-int8"


def test_a_stop_in_the_semantic_phase_drops_the_runs_and_the_same_engine_resumes(cluster, tree, clean, tmp_path):
    """The cluster embeds whole batches; a stop mid-batch kills the busy workers instead of waiting for them."""
    with Engine(_data_dir(tmp_path / "data", tree)) as engine:
        engine.distribute(cluster.address)
        stop = threading.Event()
        engine.index(on_update=lambda p: p.phase == "semantic" and p.embedding.count and stop.set(), stop=stop)
        counts = status_counts(engine)
        assert 0 < counts["indexed"] < FILES, counts
        progress = engine.index()  # the stopped batch's workers are replaced; the run ends where a clean one does
        assert progress.failed == 0
        assert snapshot(engine) == clean


def test_a_worker_node_killed_mid_run_still_ends_equal_to_a_clean_index(cluster, tree, clean, tmp_path):
    data = _data_dir(tmp_path / "data", tree)
    process = _index(data, cluster.address)
    _wait_for(lambda: _statuses(data).get("keyword", 0) + _statuses(data).get("indexed", 0) >= FILES // 4, process)
    cluster.kill_node(cluster.nodes[-1])
    _, errors = process.communicate(timeout=600)
    assert process.returncode == 0, errors
    assert "Traceback" not in errors, errors
    with Engine(data) as engine:
        assert snapshot(engine) == clean
    cluster.add_node()  # the next test has two nodes again


def test_the_head_killed_mid_run_resumes_and_ends_equal_to_a_clean_index(cluster, tree, clean, tmp_path):
    data = _data_dir(tmp_path / "data", tree)
    process = _index(data, cluster.address)
    _wait_for(lambda: _statuses(data).get("indexed", 0) >= 1, process)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    statuses = _statuses(data)
    assert statuses.get("indexed", 0) < FILES, "the run had finished before the kill"
    again = _index(data, cluster.address)
    _, errors = again.communicate(timeout=600)
    assert again.returncode == 0, errors
    with Engine(data) as engine:
        assert snapshot(engine) == clean


def test_the_whole_cluster_killed_mid_run_resumes_on_a_new_one(cluster, tree, clean, tmp_path):
    data = _data_dir(tmp_path / "data", tree)
    process = _index(data, cluster.address)
    _wait_for(lambda: _statuses(data).get("keyword", 0) + _statuses(data).get("indexed", 0) >= FILES // 3, process)
    os.kill(process.pid, signal.SIGKILL)
    cluster.stop()  # every raylet, worker and the GCS, by SIGKILL
    process.wait()
    with RayCluster(cpus=1) as fresh:
        fresh.start_head()
        fresh.add_node()
        again = _index(data, fresh.address)
        _, errors = again.communicate(timeout=600)
        assert again.returncode == 0, errors
    with Engine(data) as engine:
        assert snapshot(engine) == clean
