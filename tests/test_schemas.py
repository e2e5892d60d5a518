"""The results' JSON schemas come from their types (pydantic's TypeAdapter) where an answer's JSON is
its fields: each such answer, as an engine gives it, reads back through its schema's type unchanged,
and the HTTP routes document it in OpenAPI."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from sensetree.interfaces.api import ServerOptions, create_app
from sensetree.interfaces.schemas import adapter, declared, result_schema
from sensetree.operations import (OPERATIONS, FileParams, ModelsParams, PreviewParams, QueueParams, RootsParams,
                                  SenseParams, SettingsParams, StatusParams)

TOKEN = "s" * 43


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, write_tree, make_engine):
    base = tmp_path_factory.mktemp("schemas")
    write_tree(base / "root", {"notes/harbour.md": "Minutes of the harbour committee: the quay opens in May. " * 3})
    engine = make_engine(base / "data", base / "root")
    yield engine, base / "root" / "notes" / "harbour.md"
    engine.close()


def test_every_answer_whose_json_is_its_fields_has_a_schema():
    for op in OPERATIONS.values():
        schema = result_schema(op)
        if declared(op.result):
            assert schema is not None and schema["type"] == "object", op.name
            fields = set(op.result.__dataclass_fields__)
            assert set(schema["properties"]) == fields, op.name
        else:
            assert schema is None and (op.name in ("search", "tree", "similar", "summarise", "compare", "browse")
                                       or op.media is not None)  # bytes (a PNG), not JSON


def test_answers_read_back_through_their_schemas_type(indexed):
    engine, harbour = indexed
    for params in (StatusParams(), QueueParams(), RootsParams(), SettingsParams(), ModelsParams(),
                   SenseParams(str(harbour)), FileParams(str(harbour)), PreviewParams(str(harbour))):
        answer = engine.run(params)
        assert declared(type(answer))
        read = adapter(type(answer)).validate_python(answer.as_dict())
        assert read.as_dict() == answer.as_dict(), type(answer).__name__
        assert adapter(type(answer)).dump_python(answer, mode="json") == answer.as_dict()


def test_the_routes_document_their_answers(indexed):
    engine, _ = indexed
    client = TestClient(create_app(engine, TOKEN, ServerOptions(port=8768)), base_url="http://127.0.0.1:8768",
                        client=("127.0.0.1", 50000))
    schema = client.get("/openapi.json").json()
    status = schema["paths"]["/api/status"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema["components"]["schemas"][status["$ref"].rsplit("/", 1)[1]]["properties"].keys() >= {
        "roots", "counts", "phases", "index_bytes"}
    search = schema["paths"]["/api/search"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert "$ref" not in search  # writes its own JSON: not derived (yet)
