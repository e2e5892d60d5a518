"""Pages of known text rendered as images, clean or as a scanner would give them (for OCR tests and bench/ocr.py)."""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from sensetree.ingest.extract import normalise

FONTS = Path("/usr/share/fonts/truetype/dejavu")


def font(size_px: int, *, serif: bool = True) -> ImageFont.FreeTypeFont:
    """DejaVu where the machine has it (Debian's fonts-dejavu-core), else the font Pillow ships."""
    path = FONTS / ("DejaVuSerif.ttf" if serif else "DejaVuSans.ttf")
    return ImageFont.truetype(str(path), size_px) if path.exists() else ImageFont.load_default(size_px)


def render_page(text: str, *, dpi: int = 300, points: float = 11, serif: bool = True,
                width_in: float = 8.27, height_in: float = 11.69, margin_in: float = 0.8) -> tuple[Image.Image, str]:
    """An A4 page (by default) of ``text`` in black on white; returns the image and the text that fitted.

    Paragraphs (lines of ``text``) are wrapped to the page's width and separated by half a line;
    what does not fit on the page is left out.
    """
    width, height, margin = int(width_in * dpi), int(height_in * dpi), int(margin_in * dpi)
    face = font(round(points * dpi / 72), serif=serif)
    step = round(points * dpi / 72 * 1.45)
    image = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(image)
    y, shown = margin, []
    for paragraph in text.split("\n"):
        lines = []
        for line in _wrap(paragraph, face, width - 2 * margin):
            if y + step > height - margin:
                break
            draw.text((margin, y), line, font=face, fill=0)
            lines.append(line)
            y += step
        if lines:
            shown.append(" ".join(lines))
        if y + step > height - margin:
            break
        y += step // 2
    return image, "\n".join(shown)


def scanned(image: Image.Image, *, seed: int = 0, blur: float = 0.7, degrees: float = 1.0,
            jpeg_quality: int = 55) -> Image.Image:
    """``image`` as a cheap scanner gives it back: slightly blurred, a little skewed, JPEG-compressed."""
    rng = random.Random(seed)
    tilted = image.filter(ImageFilter.GaussianBlur(blur)).rotate(
        rng.uniform(-degrees, degrees), resample=Image.Resampling.BICUBIC, expand=False, fillcolor=255)
    buffer = io.BytesIO()
    tilted.save(buffer, format="JPEG", quality=jpeg_quality)
    return Image.open(io.BytesIO(buffer.getvalue()))


def _wrap(paragraph: str, face: ImageFont.FreeTypeFont, width: int) -> list[str]:
    lines, current = [], ""
    for word in paragraph.split():
        candidate = f"{current} {word}".strip()
        if current and face.getlength(candidate) > width:
            lines.append(current)
            current = word
        else:
            current = candidate
    return lines + [current] if current else lines


def character_error_rate(read: str, truth: str) -> float:
    """Edit distance over the true text's length, both NFC with whitespace collapsed (as the index sees them)."""
    read, truth = (" ".join(normalise(text).split()) for text in (read, truth))
    return edit_distance(read, truth) / max(len(truth), 1)


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
