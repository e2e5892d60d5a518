"""OCR quality and speed on rendered pages of real text.

    python bench/ocr.py [--pages 3] [--dpi 150 300] [--threads 2] [--eval ../shared/eval]
                        [--engine rapidocr|tesseract --languages eng deu]

Renders the first documents of SciFact (English) and LegalQuAD (German) as A4 pages
(DejaVu Serif, 11 pt) at each dpi, clean and as a cheap scanner returns them (blurred,
skewed by up to a degree, JPEG at quality 55), reads each page through the product's
`Ocr` (the worker process with its limits), and prints per set and dpi: the mean
character error rate per page (edit distance over the page's characters, both sides NFC
with whitespace collapsed, as the indexer sees them), pages/s, CPU seconds per page (which
a loaded machine changes less than pages/s), characters per page, and the OCR's peak
resident memory.
Run it pinned to two cores (`taskset -c 0,1`) to measure what a two-core machine gets.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support.pages

from sensetree.ingest.extract.ocr import Ocr, OcrSettings
from tests.support.pages import character_error_rate, render_page, scanned

SETS = ("scifact", "legalquad-de")  # English, German


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


def worker_usage(ocr: Ocr) -> tuple[float, int]:
    """CPU seconds used so far and peak resident bytes: of the RapidOCR worker, or of all finished
    child processes (Tesseract runs one per page)."""
    import os
    import resource

    if ocr.worker_pid is None:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return children.ru_utime + children.ru_stime, children.ru_maxrss * 1024
    with open(f"/proc/{ocr.worker_pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    with open(f"/proc/{ocr.worker_pid}/status") as status:
        peak = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=3, help="pages per set and dpi")
    parser.add_argument("--dpi", type=int, nargs="+", default=[150, 300])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--eval", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval")
    parser.add_argument("--engine", default="rapidocr", choices=("rapidocr", "tesseract"))
    parser.add_argument("--languages", nargs="*", default=[], help="Tesseract's language codes")
    args = parser.parse_args()

    settings = OcrSettings(engine=args.engine, languages=tuple(args.languages), threads=args.threads, page_timeout=600)
    with Ocr(settings) as ocr:
        ocr.read(render_page("warm up", dpi=150)[0])  # start the worker outside the timings
        print(f"{'set':14} {'dpi':>4} {'pages':>6} {'CER clean':>10} {'CER scanned':>12} {'pages/s':>8} "
              f"{'CPU s/page':>10} {'chars':>7}")
        for name in SETS:
            texts = page_texts(args.eval / name / "corpus.jsonl", args.pages)
            for dpi in args.dpi:
                rates: dict[str, list[float]] = {"clean": [], "scanned": []}
                chars, seconds = 0, 0.0
                cpu_before, _ = worker_usage(ocr)
                for number, text in enumerate(texts):
                    image, truth = render_page(text, dpi=dpi)
                    chars += len(truth)
                    for variant, page in (("clean", image), ("scanned", scanned(image, seed=number))):
                        started = time.perf_counter()
                        read = ocr.read(page)
                        seconds += time.perf_counter() - started
                        rates[variant].append(character_error_rate(read, truth))
                count = 2 * len(texts)
                cpu = (worker_usage(ocr)[0] - cpu_before) / count
                print(f"{name:14} {dpi:>4} {count:>6} {statistics.mean(rates['clean']):>10.2%} "
                      f"{statistics.mean(rates['scanned']):>12.2%} {count / seconds:>8.3f} {cpu:>10.1f} "
                      f"{chars // len(texts):>7}", flush=True)
        print(f"OCR peak resident memory: {worker_usage(ocr)[1] / 2**20:.0f} MB")


if __name__ == "__main__":
    main()
