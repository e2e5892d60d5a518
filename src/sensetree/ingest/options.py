"""What the settings say about indexing, as the indexing stages need it."""

from __future__ import annotations

from dataclasses import dataclass, field

from .extract import OcrSettings


@dataclass(frozen=True)
class OcrOptions:
    enabled: bool = True  # pages without a text layer and images are read by OCR (a pass after the keyword phase)
    settings: OcrSettings = field(default_factory=OcrSettings)


@dataclass
class IndexOptions:
    chunk_size: int = 1000
    overlap: int = 200
    max_file_bytes: int = 50 * 1024 * 1024
    qualify_documents: bool = True
    qualify_context: bool = True
    max_endpoint_wait: float = 600.0  # seconds the queue waits for a down endpoint before pausing
    file_timeout: float = 120.0       # seconds one file may take to read (OCR pages have their own limit)
    ocr: OcrOptions = field(default_factory=OcrOptions)
