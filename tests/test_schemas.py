"""The results' JSON schemas come from their types (pydantic's TypeAdapter over the dataclasses): each
answer, as an engine gives it, validates against its schema and reads back through its type unchanged,
and the HTTP routes document it in OpenAPI."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from fastapi.testclient import TestClient

from sensetree.interfaces.api import ServerOptions, create_app
from sensetree.interfaces.schemas import adapter, declared, result_schema
from sensetree.operations import (OPERATIONS, BrowseParams, FileParams, ModelsParams, PreviewParams, QueueParams,
                                  RootsParams, SearchParams, SenseParams, SettingsParams, SimilarParams, StatusParams,
                                  TreeParams)

jsonschema = pytest.importorskip("jsonschema")

TOKEN = "s" * 43


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, write_tree, make_engine):
    base = tmp_path_factory.mktemp("schemas")
    write_tree(base / "root", {"notes/harbour.md": "Minutes of the harbour committee: the quay opens in May. " * 3,
                               "notes/quay.md": "The harbour quay: its opening in May, the committee's minutes. " * 3,
                               "ledger/costs.csv": "item,cost\nquay,1200\nharbour wall,800\n"})
    engine = make_engine(base / "data", base / "root")
    yield engine, base / "root" / "notes" / "harbour.md"
    engine.close()


def _json_names(result: type) -> set[str]:
    """The keys of ``result``'s JSON: its fields, under their aliases, less those left out."""
    return {f.metadata.get("alias", f.name) for f in fields(result) if not f.metadata.get("exclude")}


def test_every_answer_has_a_schema_from_its_type():
    for op in OPERATIONS.values():
        if op.media is not None:  # bytes (a PNG), not JSON: the route documents their media type
            assert not declared(op.result), op.name
            continue
        assert declared(op.result), op.name
        schema = result_schema(op)
        assert schema["type"] == "object", op.name
        assert set(schema["properties"]) == _json_names(op.result), op.name
    search = result_schema(OPERATIONS["search"])["$defs"]["SearchResult"]["properties"]
    assert "rrf" in search and "fused" not in search and "content_hash" not in search


def test_answers_validate_against_their_schema_and_read_back_through_its_type(indexed):
    engine, harbour = indexed
    asked = (StatusParams(), QueueParams(), RootsParams(), SettingsParams(), ModelsParams(), SenseParams(str(harbour)),
             FileParams(str(harbour)), PreviewParams(str(harbour)), SearchParams("harbour quay"),
             SearchParams("quay", literal=True), TreeParams("harbour committee"), SimilarParams(str(harbour)),
             BrowseParams(), BrowseParams(str(harbour.parent)))
    for params in asked:
        answer = engine.run(params)
        op = next(op for op in OPERATIONS.values() if op.params is type(params))
        assert type(answer) is op.result or issubclass(type(answer), op.result)
        sent = json.loads(json.dumps(answer.as_dict()))  # as an interface sends it
        jsonschema.validate(sent, result_schema(op))
        read = type(answer).from_dict(sent)
        assert read.as_dict() == answer.as_dict(), type(answer).__name__
        assert adapter(type(answer)).dump_python(answer, mode="json", by_alias=True) == sent
    found = engine.run(SearchParams("harbour quay"))
    assert found.results and found.as_dict()["results"][0]["rrf"] == round(found.results[0].fused, 6)


def test_the_routes_document_their_answers(indexed):
    engine, _ = indexed
    client = TestClient(create_app(engine, TOKEN, ServerOptions(port=8768)), base_url="http://127.0.0.1:8768",
                        client=("127.0.0.1", 50000))
    schema = client.get("/openapi.json").json()
    components = schema["components"]["schemas"]

    def documented(route: str, verb: str = "get") -> dict:
        answer = schema["paths"][route][verb]["responses"]["200"]["content"]["application/json"]["schema"]
        return components[answer["$ref"].rsplit("/", 1)[1]]

    assert documented("/api/status")["properties"].keys() >= {"roots", "counts", "phases", "index_bytes"}
    for name in ("search", "tree", "similar", "browse"):
        assert set(documented(OPERATIONS[name].route)["properties"]) == _json_names(OPERATIONS[name].result), name
    assert "rrf" in components["SearchResult"]["properties"]
    assert documented("/api/summarise", OPERATIONS["summarise"].verb.lower())["properties"].keys() >= {"summary", "notes", "seconds"}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    sent = client.get("/api/search", params={"q": "harbour"}, headers=headers)
    assert sent.status_code == 200, sent.text
    jsonschema.validate(sent.json(), result_schema(OPERATIONS["search"]))
