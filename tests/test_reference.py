"""docs/reference.md is what the code would write (``python -m sensetree.interfaces.reference``): the
commands, HTTP routes, MCP tools, settings and formats cannot drift from the code."""

from __future__ import annotations

from sensetree.config import DEFAULTS
from sensetree.interfaces.reference import DOCUMENT, reference
from sensetree.operations import OPERATIONS


def test_the_reference_is_what_the_code_generates():
    """Run `python -m sensetree.interfaces.reference` when this fails."""
    assert DOCUMENT.read_text(encoding="utf-8") == reference()


def test_the_reference_names_every_operation_tool_and_setting():
    text = reference()
    for op in OPERATIONS.values():
        assert f"`sensetree {op.name}" in text or op.name in ("add", "pin", "models", "settings", "set",
                                                              "folder-mode", "endpoint-test", "pull"), op.name
        assert f"`{op.verb} {op.route}`" in text or op.local, op.name  # a local one runs where it is asked
        if op.tool:
            assert f"`{op.tool}(" in text
    assert all(f"`{key}`" in text for key in DEFAULTS)
