"""Issue 33, second round: every mistake gets its own answer, and work on user files is bounded.

A missing path, a deleted file, a FIFO, a folder where a file was asked, a HOME that is a file, a data
dir with control characters: each is refused with its own message and the right exit code or HTTP
status, never "unexpected error: FileNotFoundError ... please report it". Comparing two large logs of
similar lines diffs a bounded number of lines and says so. The summaries here run on a stand-in chat
model (a function), so nothing waits for a real one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sensetree.config import made_data_dir
from sensetree.errors import BadInput, DataDirUnusable, NotFound, WrongKind
from sensetree.operations import CompareParams, IgnoreParams, SimilarParams, SummariseParams
from sensetree.summaries import work
from sensetree.summaries.model import ChatModel

TOKEN = "t" * 32
PORT = 8765


@dataclass
class _Turn:
    content: str


class _Notes:
    """A chat client that answers every call with a fixed note, and counts the calls."""

    def __init__(self) -> None:
        self.calls = 0

    def stream(self, messages, max_tokens=None, temperature=None):
        self.calls += 1
        return _Turn("The part is about harbour logs.")


def _model() -> ChatModel:
    return ChatModel(_Notes(), context_window=4096, max_tokens=256, label="stand-in")


@pytest.fixture(scope="module")
def place(tmp_path_factory, make_engine):
    base = tmp_path_factory.mktemp("mistakes")
    root = base / "root"
    (root / "sub").mkdir(parents=True)
    (root / "mixed").mkdir()
    (root / "doc.txt").write_text("The harbour opens at nine and closes at six.\n", encoding="utf-8")
    (root / "blob.bin").write_bytes(bytes(range(256)) * 12)
    for name in ("b-copy.txt", "a-copy.txt", "c-copy.txt"):
        (root / "copies" / name).parent.mkdir(exist_ok=True)
        (root / "copies" / name).write_text("The lighthouse keeper's ledger of passing schooners.\n", encoding="utf-8")
    (root / "gone.txt").write_text("A note about the tide tables of March.\n", encoding="utf-8")
    (root / "sub" / "inner.txt").write_text("inner notes\n", encoding="utf-8")
    (root / "mixed" / "kept.txt").write_text("Mooring costs twelve euros a night in summer.\n", encoding="utf-8")
    (root / "mixed" / "private.txt").write_text("the private diary of the harbour master\n", encoding="utf-8")
    os.symlink(root / "doc.txt", root / "link-to-doc.txt")
    os.mkfifo(root / "pipe")
    engine = make_engine(base / "data", root)
    engine.run(IgnoreParams(str(root / "mixed" / "private.txt")))
    (root / "gone.txt").unlink()  # deleted after indexing: still in the index until the next scan
    yield engine, root, base
    engine.close()


@pytest.fixture(scope="module")
def http(place):
    from sensetree.interfaces.api import ServerOptions, create_app

    engine, _, _ = place
    client = TestClient(create_app(engine, TOKEN, ServerOptions(port=PORT)), base_url=f"http://127.0.0.1:{PORT}",
                        client=("127.0.0.1", 50000), headers={"Authorization": f"Bearer {TOKEN}"},
                        raise_server_exceptions=False)
    yield client


# every mistake its own answer ----------------------------------------------------------------
def test_summarise_of_a_missing_a_deleted_path_a_fifo_and_a_folder_each_says_what_is_wrong(place):
    engine, root, _ = place
    cases = {
        str(root / "nothing.txt"): (NotFound, "does not exist"),
        str(root / "gone.txt"): (NotFound, "does not exist"),
        str(root / "pipe"): (WrongKind, "named pipe (FIFO), not a file"),
    }
    for path, (kind, said) in cases.items():
        with pytest.raises(kind, match=r".*") as refused:
            engine.run(SummariseParams(path), model=_model())
        assert said in str(refused.value), path
        assert isinstance(refused.value, FileNotFoundError) and isinstance(refused.value, BadInput)
    with pytest.raises(WrongKind, match="is a folder, not a file .compare takes two files"):
        engine.run(CompareParams(str(root / "doc.txt"), str(root / "sub")), model=_model())


def test_compare_of_a_file_and_a_link_to_it_says_they_are_the_same_file(place):
    engine, root, _ = place
    notes = _model()
    with pytest.raises(BadInput, match="the same file twice"):
        engine.run(CompareParams(str(root / "doc.txt"), str(root / "link-to-doc.txt")), model=notes)
    assert notes.client.calls == 0  # refused before any model call


def test_similar_of_a_deleted_file_is_refused_not_answered(place):
    engine, root, _ = place
    with pytest.raises(NotFound, match="gone.txt does not exist"):
        engine.run(SimilarParams(str(root / "gone.txt")))


def test_the_http_statuses_of_the_mistakes(place, http):
    _, root, _ = place
    missing = http.get("/api/summarise", params={"path": str(root / "nothing.txt")})
    assert missing.status_code == 404 and "does not exist" in missing.json()["detail"]
    fifo = http.post("/api/summarise/stream", json={"path": str(root / "pipe")})
    assert fifo.status_code == 422 and "FIFO" in fifo.json()["detail"]
    folder = http.get("/api/compare", params={"path": str(root / "doc.txt"), "other": str(root / "sub")})
    assert folder.status_code == 422 and "is a folder" in folder.json()["detail"]


def test_a_lone_surrogate_in_any_body_is_a_422_not_a_500(http):
    """The body is refused (a field missing) and FastAPI echoes it back: with "\\ud800" in it, writing
    that answer failed, on every body and /stream route."""
    from sensetree.operations import OPERATIONS

    routes = [(op.route + "/stream") for op in OPERATIONS.values() if op.progress]
    routes += [op.route for op in OPERATIONS.values() if not op.in_query and op.verb == "POST"]
    routes += ["/api/chat", "/api/open"]  # the assistant's and the files' routers answer through the same app
    assert "/api/compare/stream" in routes
    for route in routes:
        for body in (b'{"\\ud800": "\\ud800", "path": 7}', b'{"path": ["\\udcff"]}', b'{"path": "\\ud800"'):
            answer = http.post(route, content=body, headers={"content-type": "application/json"})
            assert answer.status_code in (400, 404, 422), (route, body, answer.status_code, answer.text)
            assert "\ud800" not in answer.text
    answer = http.post("/api/compare/stream", content=b'{"path": "\\ud800"}', headers={"content-type": "application/json"})
    assert answer.status_code == 422 and "other" in answer.text and "\ufffd" in answer.text


def test_a_home_that_is_a_file_and_a_data_dir_with_control_characters_are_refused_in_words(tmp_path):
    home = tmp_path / "home-file"
    home.write_text("not a folder")
    command = [sys.executable, "-m", "sensetree.interfaces.cli", "status"]
    env = {k: v for k, v in os.environ.items() if k != "SENSETREE_HOME"}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env={**env, "HOME": str(home), "COLUMNS": "400",
                                                                         "XDG_DATA_HOME": ""}, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "is a file, not a folder (HOME is set to a file)" in done.stderr
    assert "unexpected error" not in done.stderr and "Traceback" not in done.stderr
    with pytest.raises(DataDirUnusable, match="control characters"):
        made_data_dir(tmp_path / "da\x01ta")
    assert not (tmp_path / "da\x01ta").exists()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(min_size=1, max_size=12).filter(lambda n: "/" not in n and "\x00" not in n and n not in (".", "..")))
def test_any_data_dir_name_is_made_or_refused_in_words(tmp_path, name):
    """People type data dirs: any name becomes a folder or a DataDirUnusable, nothing else."""
    target = tmp_path / "dirs" / name
    try:
        made = made_data_dir(target)
    except DataDirUnusable as exc:
        assert "choose another" in str(exc)
        assert any(ord(c) < 32 or ord(c) == 127 for c in name)
    except OSError as exc:  # a name the file system itself refuses (too long, not encodable)
        assert exc.errno is not None
    else:
        assert made.is_dir()


# a folder holding one ignored file -----------------------------------------------------------
def test_a_folder_holding_a_file_the_user_ignored_is_summarised_without_it(place):
    engine, root, _ = place
    summary = engine.run(SummariseParams(str(root / "mixed")), model=_model())
    assert summary.kind == "folder" and summary.summary
    assert {n.name for n in summary.notes} == {"kept.txt"}
    assert any("private.txt not read" in n and "ignored" in n for n in summary.notices)


# bounded work ----------------------------------------------------------------------------------
def test_two_large_similar_logs_are_compared_with_a_bounded_diff_that_says_so(place, monkeypatch):
    """Two 300 KB logs of 30,000 similar lines: difflib's work grows with the square of the lines it is
    given, so it gets at most MAX_DIFF_LINES of each, after the common start and end are set aside."""
    engine, _, base = place
    logs = base / "root" / "logs"
    logs.mkdir(exist_ok=True)
    lines = [f"2026-01-01 12:00:{i % 60:02d} worker {i % 7} item ok\n" for i in range(30_000)]
    changed = list(lines)
    for i in range(100, 30_000, 50):
        changed[i] = changed[i].replace("ok", "failed")
    (logs / "a.log").write_text("".join(lines), encoding="utf-8")
    (logs / "b.log").write_text("".join(changed), encoding="utf-8")
    assert (logs / "a.log").stat().st_size > 300_000

    given_sizes = []
    matcher = work.difflib.SequenceMatcher

    def counted(junk, a, b, autojunk=True):
        given_sizes.append((len(a), len(b)))
        return matcher(junk, a, b, autojunk=autojunk)

    monkeypatch.setattr(work.difflib, "SequenceMatcher", counted)
    steps = []
    summary = engine.run(CompareParams(str(logs / "a.log"), str(logs / "b.log")), on_progress=steps.append, model=_model())
    assert given_sizes and all(max(sizes) <= work.MAX_DIFF_LINES for sizes in given_sizes)
    assert any("compared line by line" in n for n in summary.notices), summary.notices
    assert any(s.endswith("changed passage(s) between a.log and b.log") and not s.startswith("0 ") for s in steps)


def test_the_common_start_and_end_are_not_diffed(place):
    """One changed line in the middle of long identical files: difflib sees only that line."""
    read = lambda text: work._Read("x", "x.txt", text, [], 0)
    same = "".join(f"line {i}\n" for i in range(10_000))
    changes = work._changes(read(same + "old middle\n" + same), read(same + "new middle\n" + same), notices := [])
    assert notices == [] and len(changes) == 1 and "old middle" in changes[0][2] and "new middle" in changes[0][2]


@settings(max_examples=200, deadline=None)
@given(a=st.lists(st.sampled_from(["alpha", "beta", "gamma", "", "  delta  "]), max_size=40),
       b=st.lists(st.sampled_from(["alpha", "beta", "gamma", "", "  delta  "]), max_size=40))
def test_the_bounded_diff_agrees_with_difflib_where_no_bound_is_reached(a, b):
    """The linear pre-pass changes nothing of what difflib says, only how much it is given."""
    read = lambda lines: work._Read("x", "x.txt", "\n".join(lines), [], 0)
    ours = work._changes(read(a), read(b))
    keys_a, keys_b = [" ".join(x.split()) for x in a if x.strip()], [" ".join(x.split()) for x in b if x.strip()]
    if keys_a == keys_b:
        assert ours == []
    elif ours is not None:
        assert ours, "files that differ have at least one change"
        for _, _, text in ours:
            assert text.startswith(("A had", "B adds", "A said"))


# reads on a full disk ---------------------------------------------------------------------------
def test_the_settings_view_never_joins_or_hashes_the_embedded_chat_model(place, monkeypatch):
    """``config get`` and ``GET /api/settings`` joined the 469 MB chat model into the data dir (and failed
    on a full disk), even with chat on an endpoint: whether it is installed is read without that."""
    from sensetree.models import local_llm
    from sensetree.operations import SettingsParams

    engine, _, _ = place

    def refuse(*_):
        raise AssertionError("a settings view joined or hashed a model")

    monkeypatch.setattr(local_llm, "_assembled", refuse)
    monkeypatch.setattr(local_llm, "_checked_resource", refuse)
    view = engine.run(SettingsParams())
    assert {m["name"] for m in view.models["chat"]} >= set(local_llm.EMBEDDED)


def test_a_query_model_that_cannot_be_prepared_on_a_full_disk_leaves_keyword_search(place, monkeypatch):
    import errno

    from sensetree.operations import SearchParams

    engine, root, _ = place

    def no_room(_):
        raise OSError(errno.ENOSPC, "No space left on device", "/cache/sensetree/models/e5.onnx")

    monkeypatch.setattr(type(engine.models), "embedder", property(no_room))
    found = engine.run(SearchParams("harbour opens at nine"))
    assert [r.path for r in found.results][:1] == [str(root / "doc.txt")]
    assert any("could not be prepared: the disk is full" in n and "keyword" in n for n in found.notices), found.notices


# small wrong results ------------------------------------------------------------------------------
def test_a_refusal_that_describes_a_file_is_one_line_without_escaped_line_breaks(place):
    engine, root, _ = place
    with pytest.raises(BadInput) as refused:
        engine.run(SummariseParams(str(root / "blob.bin")), model=_model())
    message = str(refused.value)
    assert "no text to summarise" in message and "binary" in message
    assert "\n" not in message and "\\x0a" not in message


@settings(max_examples=200, deadline=None)
@given(scores=st.lists(st.floats(0, 1), max_size=30))
def test_scores_shown_never_rise_down_the_list(scores):
    from sensetree.handlers.search import _rank_consistent
    from sensetree.search.types import SearchResponse, SearchResult

    response = SearchResponse("q", results=[SearchResult(f"/r/{i}", str(i), score, "", 0, [], None, None, 0.0, None)
                                            for i, score in enumerate(scores)])
    _rank_consistent(response)
    shown = [r.score for r in response.results]
    assert shown == sorted(shown, reverse=True)
    assert all(s <= raw for s, raw in zip(shown, scores)) and shown[:1] == scores[:1]


def test_an_engine_search_without_the_reranker_shows_scores_in_rank_order(place):
    from sensetree.operations import SearchParams

    engine, _, _ = place
    for query in ("harbour", "ledger of schooners", "tide tables notes", "mooring euros"):
        shown = [r.score for r in engine.run(SearchParams(query, rerank=False)).results]
        assert shown == sorted(shown, reverse=True), (query, shown)


def test_identical_files_are_stood_for_by_the_first_path_in_every_run(place):
    from sensetree.operations import SearchParams

    engine, root, _ = place
    for _ in range(3):
        found = engine.run(SearchParams("lighthouse keeper ledger schooners"))
        top = next(r for r in found.results if "copy" in r.name)
        assert top.path == str(root / "copies" / "a-copy.txt")
        assert top.duplicates == [str(root / "copies" / "b-copy.txt"), str(root / "copies" / "c-copy.txt")]


@settings(max_examples=50, deadline=None)
@given(order=st.permutations(["/r/b.txt", "/r/a.txt", "/r/c.txt", "/r/a/z.txt"]))
def test_which_copy_stands_for_the_others_does_not_depend_on_their_order(order):
    from sensetree.search.facts import list_copies
    from sensetree.search.types import SearchResponse, SearchResult

    class _Files:
        def with_hashes(self, hashes):
            return {h: list(order) for h in hashes}

    class _Catalog:
        files = _Files()

    result = SearchResult(order[0], order[0].rsplit("/", 1)[1], 0.9, "", 0, [], None, None, 0.0, None,
                          content_hash="h")
    result.duplicates = list(order[1:])
    response = SearchResponse("q", results=[result])
    list_copies(_Catalog(), response)
    assert (result.path, result.name) == ("/r/a.txt", "a.txt")
    assert result.duplicates == ["/r/a/z.txt", "/r/b.txt", "/r/c.txt"]


def test_a_200_kb_query_string_gets_414_from_the_real_server_not_a_reset(place):
    """uvicorn's h11 dropped a request line past 16 KiB while the client was still sending it."""
    import socket
    import threading
    import time

    import uvicorn

    from sensetree.interfaces.api import ServerOptions, create_app
    from sensetree.interfaces.serve import server_config

    engine, _, _ = place
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(server_config(create_app(engine, TOKEN, ServerOptions(port=port))))
    server.config.port = port
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(b"GET /api/search?q=" + b"a" * 200_000 + b" HTTP/1.1\r\nHost: 127.0.0.1:"
                         + str(port).encode() + b"\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n\r\n")
            answer = b""
            while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 414"), answer[:200]
        assert b"POST body" in answer
    finally:
        server.should_exit = True
        thread.join(10)
