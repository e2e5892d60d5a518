"""Run ``sensetree serve`` as a real process for tests and benchmarks, and talk to its API."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

_URL = re.compile(r"(http://127\.0\.0\.1:(\d+))/#token=(\S+)")


class Served:
    def __init__(self, data_dir: Path, *extra: str, env: dict[str, str] | None = None):
        self.data_dir = Path(data_dir)
        self.log = open(self.data_dir.parent / f"serve-{os.getpid()}-{time.monotonic_ns()}.log", "w+")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sensetree.interfaces.cli", "serve", "--port", "0", "--no-browser",
             "--data-dir", str(data_dir), *extra],
            stdout=subprocess.PIPE, stderr=self.log, text=True, env={**os.environ, **(env or {})})
        line = self.process.stdout.readline()
        match = _URL.search(line)
        if not match:
            self.stop()
            raise RuntimeError(f"sensetree serve did not start: {line!r}\n{self.stderr()}")
        self.base, self.port, self.token = match.group(1), int(match.group(2)), match.group(3)
        self.url = f"{self.base}/#token={self.token}"
        self.client = httpx.Client(base_url=self.base, headers={"Authorization": f"Bearer {self.token}"}, timeout=120)

    def get(self, endpoint: str, **params) -> dict:
        response = self.client.get(endpoint, params=params)
        response.raise_for_status()
        return response.json()

    def wait_indexed(self, timeout: float = 180) -> dict:
        """Until no file waits for either phase and no round runs; returns the queue."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            queue = self.get("/api/queue")
            if (not queue["indexing"]["running"] and queue["pending_count"] == 0 and queue["keyword_count"] == 0
                    and queue["indexing"]["files"]):
                return queue
            time.sleep(0.3)
        raise TimeoutError(f"indexing did not finish: {queue}")

    def stderr(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if hasattr(self, "client"):
            self.client.close()
