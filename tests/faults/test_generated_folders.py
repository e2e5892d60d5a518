"""Generated hostile folders (hypothesis): archives with random member names and files with random name bytes.

Member names mix duplicates, a nested archive's path written as a literal name, NUL, control
characters, climbing, absolute and drive names, undecodable bytes (in a tar) and paths longer
than the OS allows; archives nest; names on disk are random bytes. For every generated folder:
``index`` ends on its own within RUN_BOUND seconds without raising, every ordinary file beside
the hostile ones is ``indexed``, nothing outside the root reaches the catalog or the chunks (a
secret beside the root is linked to from a tar and from the folder), and the HTTP API (the app
in this process) and the MCP tools answer every path the catalog holds without a 500 or an
unexpected exception.

One engine serves every example (a root each, removed afterwards): the models load once.
"""

from __future__ import annotations

import io
import itertools
import os
import tarfile
import threading
import warnings
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from sensetree import paths
from sensetree.engine import Engine
from sensetree.interfaces.api import ServerOptions, create_app, load_token
from sensetree.interfaces.mcp_tools import operation_tool
from sensetree.operations import TOOLS
from sensetree.operations import AddRootParams, RemoveRootParams
from tests.support.index import catalog_rows, table_rows

pytestmark = pytest.mark.slow  # an index run per generated folder

RUN_BOUND = 120.0  # seconds an index run of one generated folder may take on a busy CI machine
EXAMPLES = int(os.environ.get("SENSETREE_GENERATED_EXAMPLES", "15"))
SECRET = "zanzibar-outside-every-root"
LONG = "/".join(["d" * 200] * 22) + "/deep.txt"  # past PATH_MAX once under the archive's path

MEMBER_NAMES = st.one_of(
    st.sampled_from(["a.txt", "a.txt", "notes.md", "inner.zip/x.txt", "../up.txt", "/abs.txt", "C:drive.txt",
                     "dir/../../out.txt", "nul\0name.txt", "ctl\x1b[31mred.txt", "line\nbreak.txt", "dir/", LONG]),
    st.text(st.characters(codec="utf-8", exclude_characters="\0/"), min_size=1, max_size=12).map(lambda s: s + ".txt"),
)
TAR_NAMES = st.one_of(MEMBER_NAMES, st.binary(min_size=1, max_size=8).filter(lambda b: b"\0" not in b and b"/" not in b)
                      .map(lambda b: os.fsdecode(b) + ".txt"))  # undecodable bytes, as the OS hands them over
DISK_NAMES = st.binary(min_size=1, max_size=24).filter(lambda b: b"/" not in b and b"\0" not in b
                                                        and b not in (b".", b".."))
MEMBER_TEXT = st.sampled_from([b"", b"member text about quinces", b"\xff\xfe\x00garbage", b"PK\x03\x04broken"])


@st.composite
def folders(draw) -> dict:
    return {
        "zip": draw(st.lists(st.tuples(MEMBER_NAMES, MEMBER_TEXT), max_size=8)),
        "nested": draw(st.lists(st.tuples(MEMBER_NAMES, MEMBER_TEXT), max_size=4)),
        "tar": draw(st.lists(st.tuples(TAR_NAMES, MEMBER_TEXT), max_size=6)),
        "disk": draw(st.lists(st.tuples(DISK_NAMES, st.binary(max_size=64)), max_size=6, unique_by=lambda x: x[0])),
        "ordinary": draw(st.integers(1, 3)),
    }


def _zip(members: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w") as archive:
        warnings.simplefilter("ignore")  # duplicate names, on purpose
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


def _tar(members: list[tuple[str, bytes]], secret: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT, encoding="utf-8",
                      errors="surrogateescape") as archive:
        for name, data in [*members, ("link-out", b"")]:
            info = tarfile.TarInfo(name)
            if name == "link-out":
                info.type, info.linkname = tarfile.SYMTYPE, str(secret)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _write(root: Path, folder: dict, secret: Path) -> list[Path]:
    """The generated folder under ``root``; returns the ordinary files, which must end indexed."""
    root.mkdir()
    ordinary = []
    for number in range(folder["ordinary"]):
        path = root / f"ordinary-{number}.txt"
        path.write_text(f"Ordinary file {number}: the allotment's rhubarb needs forcing pots.", encoding="utf-8")
        ordinary.append(path)
    nested = _zip(folder["nested"])
    (root / "box.zip").write_bytes(_zip([*folder["zip"], ("inner.zip", nested), ("inner.zip/x.txt", b"literal")]))
    (root / "links.tar").write_bytes(_tar(folder["tar"], secret))
    for name, data in folder["disk"]:
        with open(os.path.join(os.fsencode(root), name), "wb") as file:
            file.write(data)
    os.symlink(secret, root / "link-to-secret.txt")
    return ordinary


@pytest.fixture(scope="module")
def world(tmp_path_factory, make_engine):
    base = tmp_path_factory.mktemp("generated")
    secret = base / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(f"The password is {SECRET}.", encoding="utf-8")
    engine = make_engine(base / "data", index=False)
    try:
        yield engine, base, secret
    finally:
        engine.close()
        print(f"\ngenerated folders indexed: {len(world_cases)}")


world_cases: list[int] = []  # one entry per generated folder run, for the count printed at the end


@settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.generate],  # no shrinking: minutes

          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(folder=folders())
def test_any_generated_folder_indexes_to_the_end_and_every_interface_answers(world, folder):
    engine, base, secret = world
    root = base / f"case-{len(world_cases)}"
    world_cases.append(1)
    ordinary = _write(root, folder, secret)
    engine.run(AddRootParams(str(root)))
    try:
        stop = threading.Event()
        timer = threading.Timer(RUN_BOUND, stop.set)
        timer.start()
        try:
            engine.index(stop=stop)
        finally:
            timer.cancel()
        assert not stop.is_set(), "indexing did not end on its own"

        rows = list(catalog_rows(engine))
        statuses = {row.path: row.status for row in rows}
        assert all(statuses.get(str(path)) == "indexed" for path in ordinary), statuses
        assert not [row for row in rows if row.status in ("pending", "keyword")]
        assert all(paths.is_under(row.path, str(root)) for row in rows)
        assert not any(SECRET in row["text"] for row in table_rows(engine, "text"))

        _every_interface_answers(engine, root, [row.path for row in rows])
    finally:
        engine.run(RemoveRootParams(str(root)))


def _every_interface_answers(engine: Engine, root: Path, catalog_paths: list[str]) -> None:
    """No 500 from the HTTP API and no exception but a refusal (ToolError) from the MCP tools."""
    from fastapi.testclient import TestClient
    from mcp.server.mcpserver.exceptions import ToolError

    token = load_token(engine.data_dir)
    app = create_app(engine, token, ServerOptions("127.0.0.1", 8765))
    client = TestClient(app, base_url="http://127.0.0.1:8765", client=("127.0.0.1", 50000),
                        raise_server_exceptions=False, headers={"Authorization": f"Bearer {token}"})
    sample = list(itertools.islice(catalog_paths, 40))
    requests = [("/api/search", {"q": "rhubarb forcing pots"}), ("/api/tree", {"q": "rhubarb"}),
                ("/api/queue", {}), ("/api/status", {}), ("/api/browse", {"path": str(root)}),
                *(("/api/file", {"path": path}) for path in sample),
                *(("/api/preview", {"path": path}) for path in sample)]
    for url, params in requests:
        response = client.get(url, params=params)
        assert response.status_code < 500, (url, params, response.text)
    secret = client.get("/api/search", params={"q": SECRET})
    assert secret.status_code < 500, secret.text
    assert SECRET not in str(secret.json()["results"])

    search_files, meaning_tree, list_directory, read_file = (operation_tool(engine, TOOLS[name]) for name in
                                                             ("search_files", "meaning_tree", "list_directory",
                                                              "read_file"))
    calls = [lambda: search_files(query="rhubarb forcing pots"), lambda: meaning_tree(query="rhubarb"),
             lambda: list_directory(path=str(root)), *(lambda p=path: read_file(path=p) for path in sample)]
    for call in calls:
        try:
            call()
        except ToolError:
            pass  # a refusal with its reason is an answer
