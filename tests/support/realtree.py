"""A tree of a few hundred real files, and the snapshot two indexes are compared by.

The files are small (one to three chunks each) so that embedding them is quick, but they
are real formats written by the libraries a user's applications use: plain text,
Markdown, HTML, DOCX (python-docx) and PDF (fpdf2). Everything is seeded.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from sensetree.engine import Engine
from tests.support.index import catalog_rows, table_rows

TOPICS = ("harbour", "orchard", "glacier", "violin", "tender", "invoice", "telescope", "bakery", "railway",
          "vineyard", "lighthouse", "pottery", "beekeeping", "chess", "volcano", "tram", "saffron", "kayak")
WORDS = ("survey", "budget", "schedule", "repair", "delivery", "report", "meeting", "archive", "season",
         "contract", "window", "garden", "engine", "ledger", "summit", "review", "storm", "market", "signal")
KINDS = ("txt", "txt", "md", "html", "docx", "pdf")


def paragraph(rng: random.Random, sentences: int) -> str:
    out = []
    for _ in range(sentences):
        topic = rng.choice(TOPICS)
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))
        out.append(f"The {topic} {words} was noted on day {rng.randint(1, 365)}.")
    return " ".join(out)


def write_file(path: Path, rng: random.Random) -> None:
    """Write one file of the kind its suffix names, with 1-3 short paragraphs of seeded text."""
    paragraphs = [paragraph(rng, rng.randint(1, 4)) for _ in range(rng.randint(1, 3))]
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = path.suffix
    if suffix == ".md":
        path.write_text(f"# {path.stem}\n\n" + "\n\n".join(paragraphs), encoding="utf-8")
    elif suffix == ".html":
        body = "".join(f"<p>{p}</p>" for p in paragraphs)
        path.write_text(f"<html><head><title>{path.stem}</title></head><body>{body}</body></html>", encoding="utf-8")
    elif suffix == ".docx":
        import docx

        document = docx.Document()
        for p in paragraphs:
            document.add_paragraph(p)
        document.save(str(path))
    elif suffix == ".pdf":
        from fpdf import FPDF

        pdf = FPDF()
        pdf.add_page()
        pdf.set_font("Helvetica", size=11)
        for p in paragraphs:
            pdf.multi_cell(0, 6, p)
            pdf.ln(2)
        pdf.output(str(path))
    else:
        path.write_text("\n\n".join(paragraphs), encoding="utf-8")


def build_tree(root: Path, files: int, seed: int = 1) -> list[Path]:
    rng = random.Random(seed)
    written = []
    for i in range(files):
        folder = root / f"area{i % 7}" / f"box{i % 3}"
        path = folder / f"note{i:04d}.{KINDS[i % len(KINDS)]}"
        write_file(path, rng)
        written.append(path)
    return written


def snapshot(engine: Engine) -> dict:
    """What two indexes of one tree must agree on, plus the invariants of one index.

    Returns {path: (status, chunks)} after asserting: no duplicate (path, chunk_index) in
    LanceDB, no rows for paths the catalog does not know, and every ``indexed`` row has
    exactly its ``chunks`` vectors, numbered 0..chunks-1.
    """
    rows = table_rows(engine, "path", "chunk_index")
    keys = [(r["path"], r["chunk_index"]) for r in rows]
    duplicates = [k for k, n in Counter(keys).items() if n > 1]
    assert not duplicates, f"duplicate (path, chunk_index) rows: {duplicates[:5]}"
    by_path: dict[str, list[int]] = {}
    for path, index in keys:
        by_path.setdefault(path, []).append(index)
    catalog = {r.path: r for r in catalog_rows(engine)}
    orphans = sorted(set(by_path) - set(catalog))
    assert not orphans, f"vectors of files the catalog does not know (deleted?): {orphans[:5]}"
    for path, row in catalog.items():
        if row.status == "indexed":
            assert sorted(by_path.get(path, [])) == list(range(row.chunks)), f"{path}: vectors do not match {row.chunks} chunks"
    return {path: (row.status, row.chunks) for path, row in catalog.items()}
