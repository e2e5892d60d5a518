"""The engine's operations (operations.py), declared once and served by every interface: the
parameter object's reading and bounds, and ``similar`` through the engine, the CLI, the HTTP API,
MCP and the assistant's tools on a real index (MiniLM, LanceDB)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client

from sensetree.chat.tools import SCHEMAS, Sources, Toolbox
from sensetree.errors import BadInput, WrongKind
from sensetree.ingest.confine import OutsideRoots
from sensetree.interfaces.api import ServerOptions, create_app
from sensetree.interfaces.mcp_tools import build_server
from sensetree.operations import OPERATIONS, TOOLS, SimilarParams
from tests.support.index import stores

PORT = 8766
TOKEN = "s" * 43
PEARS = ("Pear trees need pruning in late winter, before the buds break. Pears are grafted onto quince rootstock "
         "to keep the trees small. A young tree is trained to an open centre over its first three years. Thin the "
         "fruitlets in June so that the remaining pears grow large. Pick pears before they are ripe and let them "
         "ripen indoors. Fire blight and pear scab are the diseases to watch for in wet springs. ")
PEARS_V2 = PEARS.replace("Pick pears before they are ripe and let them ripen indoors.",
                         "Pick pears when they part easily from the spur, then ripen them indoors for a week.")
FILES = {
    "orchard/pears.txt": PEARS,
    "orchard/pears v2.txt": PEARS_V2,  # an edited version: most of the wording shared
    "orchard/apples.md": "Apple orchards: prune apple trees in winter and graft scions onto rootstock in spring. "
                         "Thin apples after the June drop; store late varieties in a cool shed. " * 2,
    "backup/pears copy.txt": PEARS,    # an identical copy
    "money/taxes.txt": "The tax return is due in April; keep receipts and invoices for every deduction you claim. " * 4,
    "money/budget.csv": "month,rent,groceries,savings\nJanuary,900,310,200\nFebruary,900,295,250\n",
}


def test_parameters_are_read_and_bounded_once_for_every_interface():
    similar = OPERATIONS["similar"]
    assert similar.parse({"path": "/a/b.txt", "limit": "5"}) == SimilarParams("/a/b.txt", None, 5)
    assert similar.parse({"path": "/a/b.txt", "scope": ""}) == SimilarParams("/a/b.txt")  # empty: the default
    for values, message in [({}, "similar needs path"), ({"path": "/a", "limit": "0"}, r"at least 1 \(and at most 100\)"),
                            ({"path": "/a", "limit": 101}, "at most 100"),
                            ({"path": "/a", "limit": 2.5}, "limit must be int"),
                            ({"path": "/a", "limit": "many"}, "limit must be int"),
                            ({"path": "/a", "colour": "red"}, "takes no colour"),
                            ({"path": "x" * 40_000}, "longer than")]:
        with pytest.raises(BadInput, match=message):
            similar.parse(values)
    assert TOOLS["similar_files"] is similar
    schema = next(s["function"] for s in SCHEMAS if s["function"]["name"] == "similar_files")
    assert schema["parameters"]["required"] == ["path"]
    assert schema["parameters"]["properties"]["limit"]["type"] == "integer"


@pytest.fixture(scope="module")
def orchard(tmp_path_factory, write_tree, make_engine):
    base = tmp_path_factory.mktemp("operations")
    root = base / "root"
    write_tree(root, FILES)
    engine = make_engine(base / "data", root)
    yield base, root, engine
    engine.close()


def _names(results: list[dict]) -> list[str]:
    return [Path(r["path"]).name for r in results]


def test_similar_ranks_files_by_meaning_with_copies_and_versions_apart(orchard):
    _, root, engine = orchard
    pears = str(root / "orchard/pears.txt")
    response = engine.run(SimilarParams(pears))
    names = _names([r.as_dict() for r in response.results])
    assert names[0] == "apples.md"  # the other orchard file, then the rest
    assert not {"pears.txt", "pears copy.txt", "pears v2.txt"} & set(names)
    assert response.copies == [str(root / "backup/pears copy.txt")]
    [version] = response.versions
    assert version.path == str(root / "orchard/pears v2.txt") and 0.5 <= version.shared < 1
    assert version.mtime == pytest.approx((root / "orchard/pears v2.txt").stat().st_mtime)
    assert response.results[0].score > response.results[-1].score
    scoped = engine.run(SimilarParams(pears, scope=str(root / "money"), limit=1))
    assert _names([r.as_dict() for r in scoped.results]) in (["taxes.txt"], ["budget.csv"])
    with pytest.raises(OutsideRoots):
        engine.run(SimilarParams("/etc/passwd"))


def test_every_interface_serves_similar_from_the_one_declaration(orchard, cli):
    base, root, engine = orchard
    pears = str(root / "orchard/pears.txt")
    expected = _names([r.as_dict() for r in engine.run(SimilarParams(pears, limit=3)).results])

    shown = cli.invoke(base / "data", "similar", pears, "--limit", "3", "--json")
    assert shown.exit_code == 0, shown.output
    answer = json.loads(shown.output)
    assert _names(answer["results"]) == expected and _names(answer["versions"]) == ["pears v2.txt"]
    assert _names([{"path": p} for p in answer["copies"]]) == ["pears copy.txt"]
    human = cli.invoke(base / "data", "similar", pears, "-n", "3")
    assert human.exit_code == 0 and "apples.md" in human.output
    assert "versions of this file" in human.output and "identical copies" in human.output
    refused = cli.invoke(base / "data", "similar", "/etc/passwd")
    assert refused.exit_code == 1 and "outside the folders" in " ".join(refused.output.split())
    assert cli.invoke(base / "data", "similar", pears, "--limit", "0").exit_code == 2  # typer's bound, from Doc

    client = TestClient(create_app(engine, TOKEN, ServerOptions(port=PORT)), base_url=f"http://127.0.0.1:{PORT}",
                        client=("127.0.0.1", 50000), headers={"Authorization": f"Bearer {TOKEN}"})
    answer = client.get("/api/similar", params={"path": pears, "limit": 3})
    assert answer.status_code == 200 and _names(answer.json()["results"]) == expected
    assert _names(answer.json()["versions"]) == ["pears v2.txt"]
    assert client.get("/api/similar", params={"path": "/etc/passwd"}).status_code == 403
    assert client.get("/api/similar", params={"path": pears, "limit": 500}).status_code == 422
    assert client.get("/api/similar").status_code == 422

    async def mcp() -> tuple:
        async with Client(build_server(engine)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            found = await client.call_tool("similar_files", {"path": pears, "limit": 3})
            refused = await client.call_tool("similar_files", {"path": "/etc/passwd"})
            return tools["similar_files"], found, refused

    tool, found, refused = anyio.run(mcp)
    assert tool.input_schema["required"] == ["path"] and tool.output_schema and tool.annotations.read_only_hint
    assert _names(found.structured_content["results"]) == expected
    assert _names(found.structured_content["versions"]) == ["pears v2.txt"]
    assert found.structured_content["copies"] == [str(root / "backup/pears copy.txt")]
    assert found.structured_content["results"][0]["rank"] == 1
    assert refused.is_error and "refused" in refused.content[0].text

    sources = Sources()
    outcome = Toolbox(engine, None, sources).run("similar_files", {"path": pears, "limit": 3, "why": "extra"})
    assert outcome.text.startswith("version of it") and "identical copy:" in outcome.text
    assert "[1] apples.md" in outcome.text and len(outcome.new_sources) == 3
    assert [s.name for s in sources] == expected
    refused = Toolbox(engine, str(root / "money"), Sources()).run("similar_files", {"path": pears})
    assert refused.text.startswith("refused:")  # a chat kept to a folder reads nothing outside it


def test_a_file_still_waiting_for_its_vectors_says_so(tmp_path, write_tree, make_engine):
    root = tmp_path / "root"
    write_tree(root, FILES)
    with make_engine(tmp_path / "data", root) as engine:
        keyword_only = threading.Event()
        keyword_only.set()
        write_tree(root, {"orchard/quinces.txt": "Quince trees are the rootstock of dwarf pears; prune them in winter."})
        engine.index(interrupt=keyword_only)  # the keyword phase only: keyword-ready, not embedded yet
        quinces = str(root / "orchard/quinces.txt")
        with stores(engine.data_dir) as stored:  # which chunks have vectors: no operation says
            assert len(stored.chunks.queries.vectors_of(quinces)) == 0
        response = engine.run(SimilarParams(quinces))
        assert response.results == [] and "waiting for its vectors" in response.notices[0]
        with pytest.raises(WrongKind, match="is a folder, not a file .*give it as the scope"):  # issue 42
            engine.run(SimilarParams(str(root / "orchard")))
