"""OCR quality and speed on rendered pages of real text.

    python bench/ocr.py [--pages 3] [--dpi 150 300] [--threads 2] [--eval ../shared/eval]

Renders the first documents of SciFact (English) and LegalQuAD (German) as A4 pages
(DejaVu Serif, 11 pt) at each dpi, clean and as a cheap scanner returns them (blurred,
skewed by up to a degree, JPEG at quality 55), reads each page through the product's
`Ocr` (the worker process with its limits), and prints per set and dpi: the character
error rate (edit distance over the page's characters, both sides NFC with whitespace
collapsed, as the indexer sees them), pages/s, and the OCR worker's peak resident memory.
Run it pinned to two cores (`taskset -c 0,1`) to measure what a two-core machine gets.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.pages

from sensetree.ingest.extract import normalise  # noqa: E402
from sensetree.ingest.extract.ocr import Ocr, OcrSettings  # noqa: E402
from tests.pages import render_page, scanned  # noqa: E402

SETS = {"scifact": "en", "legalquad-de": "de"}


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance, one row at a time in numpy (insertions as a running minimum)."""
    if len(a) < len(b):
        a, b = b, a
    target = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    steps = np.arange(len(b) + 1)
    row = steps.copy()
    for i, char in enumerate(a, start=1):
        candidates = np.empty(len(b) + 1, dtype=np.int64)
        candidates[0] = i
        candidates[1:] = np.minimum(row[1:] + 1, row[:-1] + (target != ord(char)))
        row = np.minimum.accumulate(candidates - steps) + steps
    return int(row[-1])


def flat(text: str) -> str:
    return " ".join(normalise(text).split())


def page_texts(corpus: Path, pages: int) -> list[str]:
    """Text for ``pages`` pages: consecutive documents (title and text), about 4,000 characters each."""
    texts, current = [], []
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            current.append(" ".join(part for part in (doc.get("title"), doc.get("text")) if part))
            if sum(map(len, current)) > 4500:
                texts.append("\n".join(current))
                current = []
            if len(texts) == pages:
                break
    return texts


def peak_memory(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=3, help="pages per set and dpi")
    parser.add_argument("--dpi", type=int, nargs="+", default=[150, 300])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--eval", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval")
    args = parser.parse_args()

    with Ocr(OcrSettings(threads=args.threads, page_timeout=600)) as ocr:
        ocr.read(render_page("warm up", dpi=150)[0])  # start the worker outside the timings
        print(f"{'set':14} {'dpi':>4} {'pages':>6} {'CER clean':>10} {'CER scanned':>12} {'pages/s':>8} {'chars':>7}")
        for name in SETS:
            texts = page_texts(args.eval / name / "corpus.jsonl", args.pages)
            for dpi in args.dpi:
                errors = {"clean": 0, "scanned": 0}
                chars, seconds, count = 0, 0.0, 0
                for number, text in enumerate(texts):
                    image, truth = render_page(text, dpi=dpi)
                    truth = flat(truth)
                    chars += len(truth)
                    for variant, page in (("clean", image), ("scanned", scanned(image, seed=number))):
                        started = time.perf_counter()
                        read = ocr.read(page)
                        seconds += time.perf_counter() - started
                        count += 1
                        errors[variant] += edit_distance(flat(read), truth)
                print(f"{name:14} {dpi:>4} {count:>6} {errors['clean'] / chars:>10.2%} "
                      f"{errors['scanned'] / chars:>12.2%} {count / seconds:>8.3f} {chars // len(texts):>7}",
                      flush=True)
        print(f"OCR worker peak memory: {peak_memory(ocr._worker._process.pid) / 2**20:.0f} MB")


if __name__ == "__main__":
    main()
