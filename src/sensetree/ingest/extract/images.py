"""Image files (PNG, JPEG, TIFF, WebP, BMP, GIF): their text, read by OCR.

A multi-page TIFF (a fax, a scanner's output) is read page by page, up to
MAX_FRAMES; a GIF only by its first frame.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

from .base import Block, ContextOnly, Job, Part
from .ocr import ocr_page

MAX_DECODED_PIXELS = 80_000_000
"""Larger images are not decoded at all: a few bytes of PNG can claim a gigapixel (and Pillow
itself warns above 89 million)."""

MAX_FRAMES = 200


def read_image(data: bytes, job: Job) -> Iterator[Block]:
    if job.ocr is None:
        if job.ocr_later:
            job.ocr_wanted += 1
            raise ContextOnly("image (waiting for OCR)")
        raise ContextOnly("image (OCR is off)")
    from PIL import Image, ImageOps, ImageSequence

    with Image.open(io.BytesIO(data)) as image:  # reads the header only
        if image.width * image.height > MAX_DECODED_PIXELS:
            raise ContextOnly(f"image too large to read ({image.width} × {image.height} pixels)")
        frames = getattr(image, "n_frames", 1) if image.format == "TIFF" else 1
        for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
            if number > min(frames, MAX_FRAMES):
                break
            upright = ImageOps.exif_transpose(frame)  # phones store photos sideways and say so in EXIF
            text = ocr_page(job, upright, f"page {number}" if frames > 1 else "image")
            if text.strip():
                yield Part(text, {"page": number}) if frames > 1 else text
