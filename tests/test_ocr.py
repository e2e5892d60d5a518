"""OCR end to end: images and image-only PDFs rendered from known text (with accents, blur, skew and
JPEG noise), read by the bundled engine in its worker process, under its time and memory limits."""

from __future__ import annotations

import io
import sys
import threading
from pathlib import Path

import pytest
from PIL import Image

from sensetree.ingest.extract import Ocr, OcrSettings, extract, tesseract_languages
from sensetree.ingest.extract.ocr import OcrFailed, _rapidocr
from tests.support.pages import character_error_rate, render_page, scanned

LINES = (
    "Le café du marché ouvre à huit heures précises.",
    "Die Straße über die Brücke führt nach Köln.",
    "El niño comió una manzana en la estación.",
    "Zażółć gęślą jaźń, powiedział żółw w Łodzi.",
    "The harbour crane was refitted in March 2026.",
)
TEXT = "\n".join(LINES)


def _page(text: str = TEXT, **kwargs) -> tuple[Image.Image, str]:
    """A short page (a few lines), so that each test reads seconds, not minutes, of OCR."""
    return render_page(text, width_in=7.0, height_in=2.8, margin_in=0.4, **kwargs)


@pytest.fixture(scope="module")
def ocr():
    with Ocr(OcrSettings(page_timeout=600)) as engine:
        yield engine


def test_the_engine_is_named_by_its_bundled_model_files() -> None:
    """Models named by path are never downloaded: the wheel must carry them."""
    import rapidocr

    models = Path(rapidocr.__file__).parent / "models"
    for name in ("PP-OCRv6_det_small.onnx", "PP-OCRv6_rec_small.onnx"):
        assert (models / name).stat().st_size > 1_000_000
    import inspect

    assert str(models.name) in inspect.getsource(_rapidocr)


@pytest.mark.slow
def test_png_in_several_languages(tmp_path: Path, ocr: Ocr) -> None:
    image, truth = _page()
    path = tmp_path / "notice.png"
    image.save(path)
    extraction = extract(path, ocr=ocr)
    assert extraction.doc_type == "image" and not extraction.context_only
    assert extraction.ocr_pages == 1 and extraction.ocr_seconds > 0 and extraction.notes == ()
    assert character_error_rate(extraction.text, truth) <= 0.02, extraction.text
    for word in ("café", "marché", "Straße", "Brücke", "Köln", "niño", "estación", "gęślą", "żółw", "2026"):
        assert word in extraction.text, word


@pytest.mark.slow
def test_scanned_jpeg_with_blur_skew_and_noise(tmp_path: Path, ocr: Ocr) -> None:
    image, truth = _page(dpi=200)
    path = tmp_path / "scan.jpg"
    scanned(image, seed=3).convert("RGB").save(path, format="JPEG", quality=50)
    extraction = extract(path, ocr=ocr)
    assert character_error_rate(extraction.text, truth) <= 0.05, extraction.text
    assert "Brücke" in extraction.text and "harbour crane" in extraction.text


@pytest.mark.slow
def test_a_phone_photo_is_turned_upright_by_its_exif_orientation(tmp_path: Path, ocr: Ocr) -> None:
    image, truth = _page("The ferry timetable changes on the first of June.")
    path = tmp_path / "IMG_2041.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6  # "turn 90 degrees clockwise to show": the camera was held sideways
    image.rotate(90, expand=True).save(path, format="JPEG", quality=90, exif=exif)
    assert character_error_rate(extract(path, ocr=ocr).text, truth) <= 0.03


def _image_pdf(path: Path, pages: list[Image.Image | str | tuple[Image.Image, str]]) -> None:
    """A PDF whose pages are images (as a scanner makes them), real text, or an image with a line
    of real text stamped on it (as a document system numbers scanned pages)."""
    from fpdf import FPDF

    pdf = FPDF(unit="in", format=(7.0, 2.8))
    pdf.set_auto_page_break(False)
    for page in pages:
        pdf.add_page()
        image, text = (None, page) if isinstance(page, str) else page if isinstance(page, tuple) else (page, None)
        if image is not None:
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            pdf.image(buffer, x=0, y=0, w=7.0, h=2.8)
        if text is not None:
            pdf.set_font("Helvetica", size=12 if image is None else 6)
            pdf.set_xy(0.4, 0.4 if image is None else 2.55)
            pdf.multi_cell(6.2, 0.25 if image is None else 0.1, text)
    pdf.output(str(path))


@pytest.mark.slow
def test_only_pages_without_a_text_layer_are_ocred(tmp_path: Path, ocr: Ocr) -> None:
    first, first_truth = _page("Procès-verbal du conseil: la séance est ouverte.")
    last, last_truth = _page("Anlage 3: Übersicht der Gebühren für 2026.")
    path = tmp_path / "scan_with_cover.pdf"
    _image_pdf(path, [first, "Typed cover letter about the tram depot budget for the harbour board.",
                      "Annex", (last, "p. 4")])  # a short typed page; a scan stamped with its number

    extraction = extract(path, ocr=ocr)
    assert extraction.ocr_pages == 2 and not extraction.context_only
    located = [(span.location, extraction.text[span.start:span.end]) for span in extraction.spans]
    assert [location for location, _ in located] == [{"page": 1}, {"page": 2}, {"page": 3}, {"page": 4}]
    assert character_error_rate(located[0][1], first_truth) <= 0.03, located[0][1]
    assert located[1][1] == "Typed cover letter about the tram depot budget for the harbour board."
    assert located[2][1] == "Annex"
    scan, stamp = located[3][1].split("\n\n")  # the OCR reads the stamp too, as its own paragraph
    assert character_error_rate(scan, last_truth) <= 0.03 and "4" in stamp, located[3][1]


@pytest.mark.slow
def test_a_page_that_fails_ocr_leaves_the_rest_indexed(tmp_path: Path) -> None:
    image, _ = _page()
    path = tmp_path / "mixed.pdf"
    _image_pdf(path, [image, "The typed page about the kayak rental survives.", image])
    with Ocr(OcrSettings(page_timeout=0.05)) as hurried:  # far too short for five lines
        extraction = extract(path, ocr=hurried)
    assert not extraction.context_only
    assert extraction.text == "The typed page about the kayak rental survives."
    assert extraction.notes == ("page 1: OCR took longer than 0.05 s", "page 3: OCR took longer than 0.05 s")
    assert extraction.ocr_pages == 2


@pytest.mark.slow
def test_a_page_over_the_memory_limit_fails_alone(tmp_path: Path) -> None:
    image, _ = _page()
    path = tmp_path / "poster.png"
    image.save(path)
    with Ocr(OcrSettings(max_memory=40 * 2**20)) as frugal:  # the engine alone needs more
        extraction = extract(path, ocr=frugal)
    assert extraction.context_only and extraction.doc_type == "image"
    assert extraction.notes == ("image with no readable text", "image: OCR needed more than 40 MB")


@pytest.mark.slow
def test_scanned_pdf_with_ocr_off_is_context_only(tmp_path: Path) -> None:
    image, _ = _page()
    path = tmp_path / "scan_0002.pdf"
    _image_pdf(path, [image])
    extraction = extract(path, ocr=None)
    assert extraction.context_only and extraction.ocr_pages == 0
    assert extraction.notes == ("PDF with no text layer (probably scanned)",)


@pytest.mark.slow
def test_multipage_tiff_by_page_and_gif_by_its_first_frame(tmp_path: Path, ocr: Ocr) -> None:
    one, _ = _page("Fax page one: delivery on Monday.")
    two, _ = _page("Fax page two: invoice attached.")
    tiff = tmp_path / "fax.tiff"
    one.save(tiff, save_all=True, append_images=[two], compression="tiff_deflate")
    extraction = extract(tiff, ocr=ocr)
    assert [span.location for span in extraction.spans] == [{"page": 1}, {"page": 2}]
    assert "delivery on Monday" in extraction.text and "invoice attached" in extraction.text

    gif = tmp_path / "banner.gif"
    one.convert("P").save(gif, save_all=True, append_images=[two.convert("P")], duration=500)
    extraction = extract(gif, ocr=ocr)
    assert "delivery on Monday" in extraction.text and "invoice" not in extraction.text
    assert extraction.ocr_pages == 1 and extraction.spans == ()


def test_an_icon_is_too_small_to_read(tmp_path: Path, ocr: Ocr) -> None:
    path = tmp_path / "favicon.png"
    Image.new("RGBA", (16, 16), (200, 0, 0, 255)).save(path)
    extraction = extract(path, ocr=ocr)
    assert extraction.context_only and extraction.ocr_pages == 0
    assert extraction.notes == ("image with no readable text",)


@pytest.mark.slow
def test_one_ocr_serves_several_threads(ocr: Ocr) -> None:
    pages = [_page(f"Thread {n} reads the lighthouse logbook.")[0] for n in range(3)]
    results: dict[int, str] = {}

    def read(n: int) -> None:
        results[n] = ocr.read(pages[n])

    threads = [threading.Thread(target=read, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(f"Thread {n} reads the lighthouse logbook." in results[n] for n in range(3)), results


@pytest.mark.slow
def test_the_worker_does_not_run_the_callers_main_module(tmp_path: Path) -> None:
    """A script without a __main__ guard can use OCR: the worker is its own program."""
    import subprocess

    script = tmp_path / "unguarded.py"
    script.write_text(
        "from PIL import Image\n"
        "from sensetree.ingest.extract import Ocr\n"
        "print(repr(Ocr().read(Image.new('L', (200, 80), 255))))\n",
        encoding="utf-8",
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "''"


needs_tesseract = pytest.mark.skipif(not {"rus", "deu"} <= set(tesseract_languages()),
                                     reason="Debian's tesseract-ocr with its rus and deu models is not installed")


@needs_tesseract
@pytest.mark.slow
def test_tesseract_reads_the_scripts_the_bundled_engine_lacks(tmp_path: Path) -> None:
    image, truth = _page("Протокол заседания: бюджет на 2026 год утверждён.\nDie Brücke über den Fluss.",
                         serif=False)
    path = tmp_path / "протокол.png"
    image.save(path)
    with Ocr(OcrSettings(engine="tesseract", languages=("rus", "deu"))) as tesseract:
        extraction = extract(path, ocr=tesseract)
    assert extraction.ocr_pages == 1 and not extraction.context_only
    assert character_error_rate(extraction.text, truth) <= 0.05, extraction.text
    assert "бюджет" in extraction.text and "Brücke" in extraction.text


@needs_tesseract
def test_tesseract_pages_keep_their_time_limit(tmp_path: Path) -> None:
    image, _ = _page()
    with Ocr(OcrSettings(engine="tesseract", languages=("eng",), page_timeout=0.01)) as tesseract, \
            pytest.raises(OcrFailed, match=r"^OCR took longer than 0.01 s$"):
        tesseract.read(image)


def test_an_unknown_engine_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown OCR engine 'paddle'"):
        Ocr(OcrSettings(engine="paddle"))
