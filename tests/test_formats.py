"""The registry of extractors: one entry per format, and the list of formats in docs/reference.md agrees with it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sensetree.ingest.extract.registry import (
    BY_EXTENSION,
    BY_TYPE,
    EXTRACTORS,
    formats_markdown,
)
from sensetree.ingest.extract.sniff import type_from_name

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference.md"  # with the other generated tables


def test_the_reference_lists_the_registered_formats() -> None:
    """Regenerate docs/reference.md with `python -m sensetree.interfaces.reference` when this fails."""
    reference = REFERENCE.read_text(encoding="utf-8")
    section = reference.split("## Formats\n", 1)[1].split("\n#", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    assert table == formats_markdown().splitlines()


def test_each_format_and_extension_belongs_to_one_extractor() -> None:
    assert len(BY_TYPE) == len(EXTRACTORS)
    claims = Counter(ext for extractor in EXTRACTORS for ext in extractor.extensions)
    assert [ext for ext, count in claims.items() if count > 1] == []
    assert all(ext == ext.lower() and not ext.startswith(".") for ext in claims)


def test_names_map_to_their_extractor() -> None:
    for extractor in EXTRACTORS:
        for ext in extractor.extensions:
            assert type_from_name(f"Some File.{ext.upper()}") == extractor.doc_type
        for name in extractor.filenames:
            assert type_from_name(name.capitalize()) == extractor.doc_type
    assert type_from_name("model.blend") is None and type_from_name("README") is None
    assert BY_EXTENSION["htm"].label == "HTML"
