"""``import sensetree``: every name of ``__all__`` resolves, each operation's parameter and result types
and the error tree are among them, and importing the package alone loads none of them."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import sensetree
from sensetree.errors import SenseTreeError
from sensetree.operations import OPERATIONS


def test_every_public_name_resolves():
    for name in sensetree.__all__:
        assert getattr(sensetree, name) is not None, name
    assert set(sensetree.__all__) <= set(dir(sensetree))


def test_the_operations_and_the_errors_are_public():
    public = {getattr(sensetree, name) for name in sensetree.__all__ if isinstance(getattr(sensetree, name), type)}
    for op in OPERATIONS.values():
        assert op.params in public and op.result in public, op.name
    assert sensetree.Engine.__module__ == "sensetree.engine"
    errors = {cls for cls in public if isinstance(cls, type) and issubclass(cls, SenseTreeError)}
    assert {"SenseTreeError", "BadInput", "NotFound", "OutsideRoots", "WriterBusy"} <= {c.__name__ for c in errors}


def test_importing_the_package_loads_nothing_else():
    probe = ("import sys, sensetree\n"
             "print(','.join(sorted(m for m in sys.modules if m.startswith('sensetree.'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


# --- tests, benchmarks and eval go through the public API ---------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*(ROOT / "bench").glob("*.py"), *(ROOT / "src" / "sensetree" / "eval").glob("*.py")])

# What the benchmark labs and eval still import past ``sensetree``'s public names: they measure a stage by
# itself (the fusions and legs, an embedder alone, the chunks table, OCR, the chat runtimes; ``sensetree.eval``, the
# dataset runner, is theirs to use). A module
# leaves this table when its script moves to the public API; a new one fails the test.
STAGES = {
    "bench/accelerator.py": {"sensetree.models.devices"},
    "bench/chat_citations.py": {"sensetree.chat", "sensetree.chat.agent", "sensetree.chat.citations", "sensetree.config"},
    "bench/chat_runtimes.py": {"sensetree.models.local_llm"},
    "bench/coverage.py": {"sensetree.ingest.on_demand", "sensetree.store.table"},
    "bench/embed_rate.py": {"sensetree.ingest.chunker"},
    "bench/fusion_lab.py": {"sensetree.config", "sensetree.search.fusion",
                            "sensetree.search.legs", "sensetree.search.types", "sensetree.store.terms"},
    "bench/index_throughput.py": {"sensetree.ingest.sense"},
    "bench/memory_rounds.py": {"sensetree.interfaces.cli"},
    "bench/ocr.py": {"sensetree.ingest.extract.ocr"},
    "bench/quality_tables.py": {"sensetree.config"},
    "bench/reuse_vectors.py": {"sensetree.ingest.chunker", "sensetree.ingest.sense"},
    "bench/scale.py": {"sensetree.ingest.chunker", "sensetree.models.embeddings", "sensetree.search.pipeline",
                       "sensetree.store.chunks", "sensetree.store.location", "sensetree.store.manifest",
                       "sensetree.store.table"},
    "bench/search_latency.py": {"sensetree.models.embeddings", "sensetree.search.pipeline", "sensetree.store.chunks",
                                "sensetree.store.table", "sensetree.store.upkeep"},
    "bench/signals_lab.py": {"sensetree.search.fusion", "sensetree.search.legs",
                             "sensetree.search.types"},
    "bench/similar_quality.py": {"sensetree.config"},
    "bench/summarise.py": {"sensetree.models.local_llm"},
    "bench/time_to_search.py": {"sensetree.ingest.sense"},
    "bench/typos.py": {"sensetree.config"},
    "src/sensetree/eval/runner.py": {"sensetree.search.fusion"},
}

# Reaches through an engine into its stores (``engine.catalog``, ``engine.store``...) that remain, per file: a
# test that patches or breaks the engine's own store (fault injection), a stand-in engine, a benchmark that
# measures a stage inside a running engine. Tests read what the index holds through the operations or, for what
# none tells, through ``tests/support/index.py`` (the stores opened by themselves); a new reach fails.
REACH = re.compile(r"engine\.(catalog|storage|store|context|ctx)\b")
REACHES = {
    "tests/test_similar_bounds.py": 2,  # counts the reads of the engine's own store (a monkeypatch)
    "tests/test_on_demand.py": 1,  # the engine's store refuses the vectors (a monkeypatch)
    "tests/test_errors.py": 3,  # which errors the engine's Storage.recovering repairs
    "tests/test_pace.py": 2,  # an Indexer built on the engine's stores, paused from outside
    "tests/faults/test_hostile_files.py": 2,  # scripts of their own process (its peak memory; run as another user)
    "tests/test_chat_parts.py": 1,  # a stand-in engine's ``store`` (a comment naming what it stands for)
    "tests/test_architecture.py": 3,
    "tests/test_exact_lookups.py": 1,  # an earlier version's table made from the engine's own (its names dropped)  # the docstring of the check that no interface reaches into the stores
    "bench/coverage.py": 5, "bench/time_to_search.py": 5, "bench/reuse_vectors.py": 1, "bench/memory_rounds.py": 1,
}


def _imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every ``sensetree`` import in ``path`` (a package module's relative ones resolved)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                package = path.relative_to(ROOT / "src").with_suffix("").parts[:-node.level]
                module = ".".join([*package, *filter(None, [module])])
            if module == "sensetree" or module.startswith("sensetree."):
                found += [(module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names if alias.name.startswith("sensetree.")]
    return found


def test_benchmarks_and_eval_import_public_names_from_the_package_and_no_new_stage():
    public = set(sensetree.__all__)
    for path in SCRIPTS:
        name = path.relative_to(ROOT).as_posix()
        imported = _imports(path)
        if not name.startswith("src/"):  # the package's own modules import where a name is defined
            assert not [(m, n) for m, n in imported if m != "sensetree" and n in public], name
        stages = {m for m, n in imported if m != "sensetree" and n not in public and not m.startswith("sensetree.eval")}
        assert stages <= STAGES.get(name, set()), (name, stages - STAGES.get(name, set()))


def test_no_new_reach_into_an_engines_stores():
    for path in sorted([*(ROOT / "tests").rglob("*.py"), *SCRIPTS]):
        name = path.relative_to(ROOT).as_posix()
        if name == "tests/test_public_api.py":
            continue
        count = len(REACH.findall(path.read_text(encoding="utf-8")))
        assert count == REACHES.get(name, 0), f"{name}: {count} reaches into an engine's stores"
