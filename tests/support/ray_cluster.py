"""A real Ray cluster on this machine for the tests and benches: a head and more nodes, each a raylet
started by ``ray start``, all on loopback, stopped by their process ids (never by name)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

RAY = Path(sys.executable).with_name("ray")
SRC = str(Path(__file__).resolve().parent.parent / "src")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill(victims: list[psutil.Process], timeout: float) -> None:
    for process in victims:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(victims, timeout=timeout)


class RayCluster:
    """``ray start --head`` and ``ray start --address`` nodes of ``cpus`` CPUs each; the workers import this
    checkout's ``sensetree`` (PYTHONPATH)."""

    def __init__(self, cpus: int = 1, object_store_mb: int = 150):
        # Ray's socket paths must stay short (AF_UNIX): a short folder of our own, not pytest's tmp_path.
        self.temp_dir = Path(tempfile.mkdtemp(prefix="st-ray-", dir="/tmp"))
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.cpus = cpus
        self.object_store = str(object_store_mb * 1024 * 1024)
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
                    "RAY_USAGE_STATS_ENABLED": "0", "OMP_WAIT_POLICY": "PASSIVE"}
        self.nodes: list[psutil.Process] = []  # each node's raylet

    def start_head(self) -> None:
        self._start(["--head", f"--port={self.port}", "--include-dashboard=false", f"--temp-dir={self.temp_dir}"])

    def add_node(self, hide: Path | None = None) -> psutil.Process:
        """A node; with ``hide``, one that cannot see that folder (an empty one is mounted over it, in a
        mount namespace of the node's own), as a machine without the share would."""
        return self._start([f"--address={self.address}"], hide)

    def _start(self, args: list[str], hide: Path | None = None) -> psutil.Process:
        before = {p.pid for p in self._raylets()}
        command = [str(RAY), "start", *args, "--node-ip-address=127.0.0.1", f"--num-cpus={self.cpus}",
                   f"--object-store-memory={self.object_store}", "--disable-usage-stats"]
        if hide is not None:
            command = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                       'mount -t tmpfs none "$0" && exec "$@"', str(hide), *command]
        subprocess.run(command, env=self.env, check=True, capture_output=True, timeout=120)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            new = [p for p in self._raylets() if p.pid not in before]
            if new:
                self.nodes.append(new[0])
                return new[0]
            time.sleep(0.2)
        raise RuntimeError("ray start left no raylet")

    def _processes(self) -> list[psutil.Process]:
        """Every process of this cluster: those naming its folder or its GCS port (the head's Ray client
        server names only the latter), and their children."""
        found: dict[int, psutil.Process] = {}
        gcs = f":{self.port}"
        for process in psutil.process_iter(["cmdline"]):
            try:
                if any(str(self.temp_dir) in part or (part.startswith("--address=") and part.endswith(gcs))
                       for part in process.info["cmdline"] or []):
                    found[process.pid] = process
                    for child in process.children(recursive=True):
                        found[child.pid] = child
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return list(found.values())

    def _raylets(self) -> list[psutil.Process]:
        return [p for p in self._processes() if p.name() == "raylet"]

    def kill_node(self, raylet: psutil.Process) -> None:
        """SIGKILL a node: its raylet and every process under it (its workers)."""
        _kill([raylet, *raylet.children(recursive=True)], timeout=10)

    def stop(self) -> None:
        _kill(self._processes(), timeout=15)
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> RayCluster:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
