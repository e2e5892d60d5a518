"""What the settings say about indexing, as the indexing stages need it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import Settings
from ..models.devices import requested_device
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
    file_timeout: float = 120.0  # seconds one file may take to read (OCR pages have their own limit)
    ocr: OcrOptions = field(default_factory=OcrOptions)
    on_battery: str = "slow"  # pause, slow or run (ingest/pace.py)
    low_priority: bool = True  # the indexing thread yields to the user's work (ingest/pace.py)


def index_options(settings: Settings) -> IndexOptions:
    """The indexing stages' options from the user's settings."""
    s = settings
    ocr = OcrSettings(
        engine=s["indexing.ocr_engine"],
        page_timeout=s["indexing.ocr_page_timeout"],
        max_pages=s["indexing.ocr_max_pages"],
        device=requested_device(s, "ocr"),
        languages=tuple(x.strip() for x in s["indexing.ocr_languages"].split(",") if x.strip()),
    )
    return IndexOptions(
        chunk_size=s["indexing.chunk_size"],
        overlap=s["indexing.overlap"],
        max_file_bytes=int(s["indexing.max_file_mb"] * 1024 * 1024),
        qualify_documents=s["indexing.qualify_documents"],
        qualify_context=s["indexing.qualify_context"],
        max_endpoint_wait=s["indexing.endpoint_wait"],
        file_timeout=s["indexing.file_timeout"],
        ocr=OcrOptions(s["indexing.ocr"], ocr),
        on_battery=s["indexing.on_battery"],
        low_priority=s["indexing.low_priority"],
    )
