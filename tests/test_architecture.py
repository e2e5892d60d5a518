"""The import graph flows one way: interfaces -> chat/eval -> engine -> ingest/search -> store -> models/config/paths.

Every import in the package is read from the source (also those inside functions, which a
lazy import would otherwise hide), mapped to its layer, and checked: a module may import its
own layer or the ones below (imports under ``if TYPE_CHECKING:``, which never run, are left out
of that rule, as import-linter's ``exclude_type_checking_imports`` does), stages of one layer stay
apart, and no modules import each other in a circle, counting the type-only imports too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "sensetree"

# (rank, group): higher ranks may import lower ones; two groups of one rank may not import each other.
LAYERS = {
    "sensetree.interfaces": (5, "interfaces"),
    "sensetree.chat": (4, "chat"),
    "sensetree.eval": (4, "eval"),
    "sensetree.engine": (3, "engine"),
    "sensetree.context": (3, "engine"),
    "sensetree.handlers": (3, "engine"),
    "sensetree.reader": (3, "engine"),
    "sensetree.filters": (3, "engine"),
    "sensetree.operations": (3, "engine"),
    "sensetree.overview": (3, "engine"),
    "sensetree.explorer": (3, "engine"),
    "sensetree.pages": (3, "engine"),
    "sensetree.summaries": (3, "engine"),
    "sensetree.diagnosis": (3, "engine"),
    "sensetree.ingest": (2, "ingest"),
    "sensetree.search": (2, "search"),
    "sensetree.store": (1, "store"),
    "sensetree.models": (0, "base"),
    "sensetree.config": (0, "base"),
    "sensetree.paths": (0, "base"),
    "sensetree.fs_rules": (0, "base"),
    "sensetree.system": (0, "base"),
    "sensetree.errors": (0, "base"),
    "sensetree.safe_text": (0, "base"),
    "sensetree.notices": (0, "base"),
    "sensetree.answers": (0, "base"),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(name: str, path: Path, known: set[str], type_only_too: bool = False) -> set[str]:
    """The package's modules that ``name`` imports, at any depth of its code (with ``type_only_too``,
    also under ``if TYPE_CHECKING:``)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = set() if type_only_too else {id(n) for block in ast.walk(tree) if _is_type_checking(block)
                                             for statement in block.body for n in ast.walk(statement)}
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {m for m in found if m in known and m not in (name, "sensetree")}


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _layer(module: str) -> tuple[int, str]:
    for prefix, layer in LAYERS.items():
        if module == prefix or module.startswith(prefix + "."):
            return layer
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS")


def _graph(type_only_too: bool = False) -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, set(modules), type_only_too) for name, path in modules.items()
            if name != "sensetree"}


def test_every_import_goes_to_the_same_layer_or_below():
    wrong = []
    for module, targets in _graph().items():
        rank, group = _layer(module)
        for target in targets:
            target_rank, target_group = _layer(target)
            if target_rank > rank or (target_rank == rank and target_group != group):
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports against the layers:\n" + "\n".join(sorted(wrong))


def test_no_modules_import_each_other_in_a_circle():
    """Counting the imports made for type hints only: a circle there is a circle in the design."""
    graph = _graph(type_only_too=True)
    done: set[str] = set()
    cycles = []

    def visit(module: str, trail: list[str]) -> None:
        if module in trail:
            cycles.append(" -> ".join(trail[trail.index(module):] + [module]))
            return
        if module in done:
            return
        for target in sorted(graph.get(module, ())):
            if not target.startswith(module + "."):  # a package may import its own modules
                visit(target, [*trail, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
    assert not cycles, "import cycles:\n" + "\n".join(sorted(set(cycles)))


def test_the_layers_cover_the_whole_package():
    for module in _graph():
        _layer(module)


def test_every_error_the_package_defines_is_in_the_tree():
    """One error tree (errors.py): each interface maps it once, and only StoreDamaged makes the store
    repair; a class outside it would be mapped by nobody. Private signals (``_Late``) stay in their module."""
    import importlib
    import inspect

    from sensetree.errors import SenseTreeError

    outside = []
    for name in _modules():
        if name.startswith("sensetree.interfaces.web"):
            continue
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == name
                    and not attribute.startswith("_") and not issubclass(value, SenseTreeError)):
                outside.append(f"{name}.{attribute}")
    assert outside == []


def test_the_interfaces_reach_the_stages_only_through_the_engine():
    """The CLI, the API, MCP, the web app and the assistant's tools parse and render: indexing, the catalog,
    the chunk store and the models are the engine's (``engine``, ``context``, ``handlers``, ``operations``,
    ``overview``, ``reader``, ``diagnosis`` re-export or wrap what an interface needs). Type-only imports count."""
    stages = ("sensetree.ingest", "sensetree.store", "sensetree.models")
    reaching = sorted(f"{module} -> {target}" for module, targets in _graph(type_only_too=True).items()
                      if module.startswith("sensetree.interfaces") or module == "sensetree.chat.tools"
                      for target in targets
                      if target in stages or target.startswith(tuple(stage + "." for stage in stages)))
    assert not reaching, "\n".join(reaching)


# What an interface may not reach by attribute on the engine (or the context, or a request's context): the
# stores, the writer lock, the user's choices, the workers, the models. It asks the engine's operations.
ENGINE_INTERNALS = {"catalog", "storage", "store", "writer", "writable", "choices", "choose", "pool", "cluster",
                    "models", "embedder", "retriever", "scan", "context", "ctx"}
ENGINE_NAMES = {"engine", "ctx", "context", "self.engine", "ctx.engine", "self.ctx", "self.context"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def test_the_interfaces_do_not_reach_into_the_engine_by_attribute():
    """``engine.catalog``, ``engine.storage``, ``ctx.engine.store``, ``engine.models...``: what an import rule
    cannot see. Each attribute read on a name that holds the engine (or a context of it) is checked."""
    reaching = []
    for name, path in _modules().items():
        if not (name.startswith("sensetree.interfaces") or name == "sensetree.chat.tools"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr in ENGINE_INTERNALS
                    and _dotted(node.value) in ENGINE_NAMES):
                reaching.append(f"{name}:{node.lineno}: {_dotted(node)}")
    assert not reaching, "\n".join(reaching)


def test_the_command_line_starts_without_the_stores_and_the_models():
    """A command a running server answers must not pay for loading the index or the models: the
    operations' declarations and their answers are light modules."""
    probe = ("import sys, sensetree.interfaces.cli\n"
             "heavy = [m for m in sys.modules if m.split('.')[0] in ('lancedb', 'onnxruntime', 'tokenizers')\n"
             "         or m.startswith(('sensetree.store', 'sensetree.engine', 'sensetree.explorer',"
             "                         'sensetree.context', 'sensetree.handlers'))]\n"
             "print(','.join(sorted(heavy)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "", done.stdout
