"""A real S3-compatible server on loopback for the tests and benches: moto's standalone server, which
speaks the S3 protocol over HTTP, conditional writes (If-None-Match, If-Match) included."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

MOTO = Path(sys.executable).with_name("moto_server")
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"}


class S3Server:
    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        executable = str(MOTO) if MOTO.exists() else shutil.which("moto_server")
        self.process = subprocess.Popen([executable, "-H", "127.0.0.1", "-p", str(self.port)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(self.endpoint, timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError("moto_server did not start")
                time.sleep(0.2)

    @property
    def env(self) -> dict[str, str]:
        """What a process needs to reach the server: the usual AWS variables."""
        return {**CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint}

    def bucket(self, name: str) -> str:
        import boto3

        boto3.client("s3", endpoint_url=self.endpoint, **_keys()).create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _keys() -> dict[str, str]:
    return {"aws_access_key_id": "test", "aws_secret_access_key": "test", "region_name": "us-east-1"}


def in_environment(server: S3Server) -> dict[str, str | None]:
    """Put the server's variables into this process's environment; returns what to restore."""
    saved = {key: os.environ.get(key) for key in server.env}
    os.environ.update(server.env)
    return saved


def restore(saved: dict[str, str | None]) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
