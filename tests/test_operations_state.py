"""The operations moved onto parameter objects after search (operations.py): status, queue, the
roots, a file's sense, its detail and its preview, each through the engine, the CLI and the HTTP
API on a real index (MiniLM, LanceDB), with the routes and JSON fields they had before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from sensetree.errors import BadInput
from sensetree.interfaces.api import ServerOptions, create_app
from sensetree.operations import OPERATIONS, FileParams, PreviewParams, QueueParams, SenseParams

PORT = 8767
TOKEN = "q" * 43
FILES = {
    "notes/harbour.md": "Minutes of the harbour committee: the quay opens in May, the ferry leaves at seven. " * 3,
    "notes/bread.txt": "A recipe for sourdough bread with rye flour and a long cold proof. " * 3,
    "notes/tides.txt": "Tide tables for the harbour: high water at noon, low water in the evening. " * 3,
    "broken.pdf": "%PDF-1.4 this is not really a pdf",
}


@pytest.fixture(scope="module")
def harbour(tmp_path_factory, write_tree, make_engine):
    base = tmp_path_factory.mktemp("state")
    root = base / "root"
    write_tree(root, FILES)
    engine = make_engine(base / "data", root)
    client = TestClient(create_app(engine, TOKEN, ServerOptions(port=PORT)), base_url=f"http://127.0.0.1:{PORT}",
                        client=("127.0.0.1", 50000), headers={"Authorization": f"Bearer {TOKEN}"})
    yield base, root, engine, client
    engine.close()


def _json(cli, data: Path, *args: str | Path) -> dict:
    shown = cli.invoke(data, *args, "--json")
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.output)


def test_status_and_queue_are_one_answer_everywhere_with_the_servers_progress_added(harbour, cli):
    base, root, engine, client = harbour
    data = base / "data"
    status = _json(cli, data, "status")
    served = client.get("/api/status").json()
    assert list(served)[-1] == "indexing" and {k: v for k, v in served.items() if k != "indexing"}.keys() == status.keys()
    assert served["roots"] == status["roots"] == [str(root)] and served["counts"] == status["counts"]
    assert "progress" in cli.invoke(data, "status").output

    queue = _json(cli, data, "queue")
    assert [Path(f["path"]).name for f in queue["failed"]] == ["broken.pdf"]
    answer = client.get("/api/queue").json()
    assert list(answer)[0] == "indexing" and {k: answer[k] for k in queue} == queue
    assert client.get("/api/queue", params={"limit": 1}).json()["failed"] == queue["failed"]  # every failed file
    assert client.get("/api/queue", params={"limit": 0}).status_code == 422  # the bound, from Doc
    assert cli.invoke(data, "queue", "--limit", "0").exit_code == 2
    assert "1 failed" in cli.invoke(data, "queue").output
    assert engine.run(QueueParams(limit=1)).failed == engine.run(QueueParams()).failed


def test_roots_are_listed_added_and_removed_on_their_one_route(harbour, cli, write_tree):
    base, root, engine, client = harbour
    data = base / "data"
    extra, other = base / "extra", base / "other"
    write_tree(extra, {"tide.txt": "High water at noon."})
    write_tree(other, {"moon.txt": "The moon pulls the tides."})
    assert client.get("/api/roots").json() == {"roots": [str(root)]} == _json(cli, data, "roots")

    assert client.post("/api/roots", json={"path": str(extra)}).json() == {"root": str(extra)}
    added = cli.invoke(data, "add", other)
    assert added.exit_code == 0 and f"added root {other}" in " ".join(added.output.split())
    assert set(_json(cli, data, "roots")["roots"]) == {str(root), str(extra), str(other)}
    assert client.post("/api/roots", json={}).status_code == 422

    assert client.delete("/api/roots", params={"path": str(extra)}).json() == {"removed": 0}
    removed = cli.invoke(data, "remove", other)
    assert removed.exit_code == 0 and f"removed root {other} (0 entries" in " ".join(removed.output.split())
    assert client.get("/api/roots").json() == {"roots": [str(root)]}
    missing = client.delete("/api/roots", params={"path": str(extra)})
    assert missing.status_code == 400 and "is not a root" in missing.json()["detail"]
    assert cli.invoke(data, "remove", extra).exit_code == 1


def test_a_sense_is_shown_and_pinned_through_every_interface(harbour, cli):
    base, root, engine, client = harbour
    data = base / "data"
    bread = str(root / "notes/bread.txt")
    shown = _json(cli, data, "sense", bread)
    assert shown == client.get("/api/sense", params={"path": bread}).json() == engine.run(SenseParams(bread)).as_dict()
    assert shown["path"] == bread and shown["sense"] and not shown["pinned"]

    pinned = client.put("/api/sense", json={"path": bread, "sense": "  Rye sourdough, step by step. "})
    assert pinned.status_code == 200
    assert pinned.json() == {"path": bread, "sense": "Rye sourdough, step by step.", "source": "pinned", "pinned": True}
    assert client.put("/api/sense", json={"path": "/etc/hosts", "sense": "x"}).status_code == 403
    assert client.put("/api/sense", json={"path": bread, "sense": "x" * 4001}).status_code == 422

    harbour_md = str(root / "notes/harbour.md")
    done = cli.invoke(data, "sense", harbour_md, "--set", "Harbour committee minutes.")
    assert done.exit_code == 0 and "pinned; run `sensetree index`" in done.output
    assert "Harbour committee minutes. (pinned)" in done.output
    assert _json(cli, data, "sense", harbour_md)["sense"] == "Harbour committee minutes."
    refused = cli.invoke(data, "sense", "/etc/hosts", "--set", "x")
    assert refused.exit_code == 1 and "outside the folders" in " ".join(refused.output.split())


def test_a_files_detail_and_preview_come_from_their_operations(harbour, cli):
    base, root, engine, client = harbour
    data = base / "data"
    tides = str(root / "notes/tides.txt")
    detail = client.get("/api/file", params={"path": tides}).json()
    assert detail["status"] == "indexed" and detail["chunks"] and detail["name"] == "tides.txt"
    assert _json(cli, data, "file", tides)["chunks"] == detail["chunks"]
    assert engine.run(FileParams(tides)).status == "indexed"

    preview = client.get("/api/preview", params={"path": tides, "chunk": 0, "mark": "0,7"}).json()
    assert preview["text"].startswith("Tide tables") and preview["mark"] == {"start": 0, "end": 7}
    assert preview["start"] >= 0 and preview["end"] > preview["start"]
    assert _json(cli, data, "preview", tides, "--mark", "0,7") == preview
    assert client.get("/api/preview", params={"path": tides, "mark": "seven"}).status_code == 422
    assert client.get("/api/preview", params={"path": tides, "chunk": -1}).status_code == 422
    assert client.get("/api/preview", params={"path": "/etc/passwd"}).status_code == 403
    assert client.get("/api/file", params={"path": str(root / "gone.txt")}).status_code == 404
    assert cli.invoke(data, "preview", tides, "--mark", "seven").exit_code == 1
    with pytest.raises(BadInput, match="mark must match"):
        OPERATIONS["preview"].parse({"path": tides, "mark": "1,2,3"})
    assert engine.run(PreviewParams(tides)).chunk_index == 0


def test_settings_are_read_and_changed_through_their_operations(harbour, cli):
    base, root, engine, client = harbour
    data = base / "data"
    view = client.get("/api/settings").json()
    assert {"embedding", "reranker", "chat"} <= set(view["models"])
    values = {s["key"]: s["value"] for s in view["settings"]}
    assert _json(cli, data, "config", "get") == values
    models = _json(cli, data, "models", "list")
    assert models == client.get("/api/models").json() and models["embedding"] and "rerankers" in models
    assert "retrieval.rerank = " in cli.invoke(data, "config", "get").output

    key = "retrieval.collapse_duplicates"
    changed = client.put("/api/settings", json={"key": key, "value": not values[key]})
    assert changed.json() == {"key": key, "value": not values[key], "notice": None}
    assert client.put("/api/settings", json={"key": "indexing.chunk_size", "value": "800"}).json()["value"] == 800
    for body in ({"key": "retrieval.rerank", "value": "maybe"}, {"key": "no.such", "value": 1}, {"key": "x"}):
        assert client.put("/api/settings", json=body).status_code == 422, body
    client.put("/api/settings", json={"key": key, "value": values[key]})
    client.put("/api/settings", json={"key": "indexing.chunk_size", "value": values["indexing.chunk_size"]})

    done = cli.invoke(data, "config", "set", "indexing.chunk_size", "900")
    assert done.exit_code == 0 and "indexing.chunk_size = 900" in done.output
    assert _json(cli, data, "config", "get", "indexing.chunk_size") == 900
    bad = cli.invoke(data, "config", "set", "indexing.chunk_size", "big")
    assert bad.exit_code == 1 and "indexing.chunk_size" in bad.output
    cli.invoke(data, "config", "set", "indexing.chunk_size", str(values["indexing.chunk_size"]))


def test_a_folders_mode_is_set_through_its_operation(harbour, cli):
    base, root, engine, client = harbour
    data = base / "data"
    notes = str(root / "notes")
    assert client.post("/api/folder-mode", json={"path": notes, "mode": "block"}).json() == {"path": notes,
                                                                                             "mode": "block"}
    assert client.get("/api/file", params={"path": notes}).json()["folder_mode"] == "block"
    assert client.post("/api/folder-mode", json={"path": notes, "mode": "sideways"}).status_code == 422
    assert client.post("/api/folder-mode", json={"path": str(root), "mode": "block"}).status_code == 400  # a root
    assert client.post("/api/folder-mode", json={"path": notes, "mode": None}).json() == {"path": notes, "mode": None}
    done = cli.invoke(data, "unblock", notes)
    assert done.exit_code == 0 and f"{notes} will be indexed file by file" in " ".join(done.output.split())
    assert client.get("/api/file", params={"path": notes}).json()["folder_mode"] == "recursive"
    assert cli.invoke(data, "block", root).exit_code == 1
    client.post("/api/folder-mode", json={"path": notes})


def test_an_endpoint_is_tried_through_its_operation(harbour):
    base, root, engine, client = harbour
    down = client.post("/api/endpoint-test", json={"role": "chat", "base_url": "http://127.0.0.1:9/v1", "model": "m"})
    assert down.status_code == 200 and set(down.json()) == {"ok", "reachable", "model_present", "dimension", "message"}
    assert not down.json()["reachable"] and "unreachable" in down.json()["message"]
    assert client.post("/api/endpoint-test", json={"role": "nonsense"}).status_code == 400
    assert client.post("/api/endpoint-test", json={}).status_code == 422
    assert client.get("/api/endpoint-test").status_code == 405  # a key is never put in an address


def test_the_assistants_question_is_read_from_its_one_declaration(harbour):
    base, root, engine, client = harbour
    assert client.post("/api/chat", json={"question": ""}).status_code == 422
    assert client.post("/api/chat", json={"question": "x" * 10_001}).status_code == 422
    assert client.post("/api/chat", json={"scope": str(root)}).status_code == 422
    schema = client.get("/openapi.json").json()
    body = schema["paths"]["/api/chat"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    fields = schema["components"]["schemas"][body.rsplit("/", 1)[1]]["properties"]
    assert set(fields) == {"question", "scope", "conversation"} and fields["question"]["maxLength"] == 10_000
