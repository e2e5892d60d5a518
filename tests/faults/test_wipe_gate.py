"""One gate in front of every wipe (issue 42): a settings.toml edited by hand to name another embedding model
wipes nothing, whichever door notices it. A command that can ask (`index` on a terminal) asks; one that
cannot (`index` in a script) refuses; one that runs on its own (`index --watch`, `serve`, the login service)
keeps the index and its model, searches included, and says why in the log and in `status` (the web app's
status payload too) until the change is confirmed (`config set embedding.model ... --yes`, `index --yes`)."""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from sensetree.answers import Indexed
from sensetree.config import SETTINGS_FILE, NeedsConfirmation
from sensetree.engine import Engine
from sensetree.interfaces.api import ServerOptions, create_app
from sensetree.interfaces.background import BackgroundIndexer
from sensetree.models.embeddings import ALIASES, IDENTITIES, canonical_model, expected_identity, model_of
from sensetree.operations import IndexParams, SearchParams
from tests.support.index import stores

TOKEN = "w" * 43
PORT = 8765
MINILM_INDEX = IDENTITIES[canonical_model("minilm")]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, write_tree, make_engine) -> Path:
    """A data dir indexed with MiniLM, once for the module."""
    base = tmp_path_factory.mktemp("indexed")
    tree, data = base / "tree", base / "data"
    write_tree(tree, {"a.txt": "the harbour lighthouse keeper writes about the tides and the ships"})
    make_engine(data, tree).close()
    return data


@pytest.fixture
def edited(indexed, tmp_path) -> Path:
    """A copy of that data dir, whose settings.toml a person then edited to name E5 (the roots are the same)."""
    data = tmp_path / "data"
    shutil.copytree(indexed, data, ignore=shutil.ignore_patterns("writer.lock", "served*"))
    (data / SETTINGS_FILE).write_text('[embedding]\nmodel = "e5"\n', encoding="utf-8")
    return data


def _rows(data: Path) -> tuple[int, str | None]:
    with stores(data) as stored:
        return stored.chunks.table.count(), stored.catalog.meta("embedding_identity")


def _searched_by_meaning(engine: Engine) -> None:
    """A search still embeds its query, with the model the index was made with."""
    found = engine.run(SearchParams("a beacon on the coast"))
    assert [Path(r.path).name for r in found.results] == ["a.txt"]
    assert not any("embedded" in notice or "rebuild" in notice for notice in found.notices), found.notices
    assert found.results[0].dense_rank == 1


@pytest.mark.slow  # indexes, runs a server's indexer and commands
def test_a_model_named_by_hand_wipes_nothing_until_confirmed(edited, cli, caplog):
    before = _rows(edited)
    assert before[0] > 0 and before[1] == MINILM_INDEX

    refused = cli.invoke(edited, "index")  # no terminal: nothing to ask, so nothing is wiped
    assert refused.exit_code == 1 and "is wiped" in refused.output and "--yes" in refused.output
    assert _rows(edited) == before

    # what `serve` and the login service do at start: a round of their own indexer
    with caplog.at_level(logging.WARNING), Engine(edited) as engine:
        indexer = BackgroundIndexer(engine, watch_disk=False)
        indexer.start()
        deadline = time.monotonic() + 60
        while "Nothing was wiped" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.2)
        assert indexer.stop(timeout=30)
        assert "Nothing was wiped" in caplog.text and "--yes" in caplog.text  # the log says why, and the way on
        client = TestClient(create_app(engine, TOKEN, ServerOptions(port=PORT), indexer),
                            base_url=f"http://127.0.0.1:{PORT}", client=("127.0.0.1", 50000),
                            headers={"Authorization": f"Bearer {TOKEN}"})
        status = client.get("/api/status").json()
        assert "Nothing was wiped" in status["unconfirmed_change"] and status["embedding_model"] == MINILM_INDEX
        _searched_by_meaning(engine)

        # `index --watch`: its rounds keep the index too
        stop = threading.Event()
        engine.run(IndexParams(watch=True), on_progress=lambda told: stop.set() if isinstance(told, Indexed) else None,
                   stop=stop)
        with pytest.raises(NeedsConfirmation):
            engine.run(IndexParams())
    assert _rows(edited) == before

    shown = json.loads(cli.invoke(edited, "status", "--json").output)
    assert "config set embedding.model e5 --yes" in shown["unconfirmed_change"]

    confirmed = cli.invoke(edited, "config", "set", "embedding.model", "e5", "--yes")  # the way on, as told
    assert confirmed.exit_code == 0 and "vectors were wiped" in confirmed.output
    assert _rows(edited)[0] == 0
    assert json.loads(cli.invoke(edited, "status", "--json").output)["unconfirmed_change"] is None


@pytest.mark.slow  # indexes, runs a command on a terminal
def test_on_a_terminal_index_asks_and_no_keeps_the_index(edited):
    from tests.test_settings_contract import _on_a_terminal

    before = _rows(edited)
    said = _on_a_terminal(edited, ["index"], "n")
    assert "is wiped" in said and "nothing was changed" in said
    assert _rows(edited) == before


@pytest.mark.slow  # indexes
def test_setting_the_model_back_releases_the_hold(edited, cli):
    before = _rows(edited)
    back = cli.invoke(edited, "config", "set", "embedding.model", "minilm")  # wipes nothing: no question
    assert back.exit_code == 0 and _rows(edited) == before
    assert json.loads(cli.invoke(edited, "status", "--json").output)["unconfirmed_change"] is None


MODEL_NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=30)
BASE_URLS = st.builds(lambda scheme, host, path: f"{scheme}://{host}{path}", st.sampled_from(["http", "https"]),
                      st.from_regex(r"[a-z0-9.@:-]{1,20}", fullmatch=True), st.from_regex(r"(/[a-z0-9@]{0,8}){0,3}",
                                                                                         fullmatch=True))


@settings(max_examples=60, deadline=None)
@given(model=st.one_of(st.sampled_from(sorted(ALIASES)), MODEL_NAMES), base_url=st.one_of(st.just(""), BASE_URLS))
def test_the_model_an_index_was_made_with_is_read_back_from_its_identity(model, base_url):
    """The index keeps its model while a change is held: its identity names the settings that make it again."""
    identity = expected_identity(model, base_url)
    named = model_of(identity)
    if not base_url and canonical_model(model) not in IDENTITIES:
        return  # a local model this install does not have: searches answer by keywords
    assert named is not None and expected_identity(*named) == identity
