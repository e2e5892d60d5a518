"""Refusing zip archives that would expand to far more than they weigh (zip bombs).

Shared by every zip-based format (DOCX, PPTX, XLSX, EPUB, OpenDocument) and by
the archive reader.
"""

from __future__ import annotations

import io
import zipfile

from . import limits
from .base import ExtractionError, human_size, reason


def check_zip(data: bytes, label: str) -> None:
    """Refuse archives that would expand to far more than they weigh.

    The check trusts the sizes declared in the zip directory, so it also refuses a
    member that declares fewer bytes than its compressed stream must inflate to:
    `zipfile.read` inflates the whole stream before cutting it to the declared size.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ExtractionError(f"corrupt {label}: not a valid zip archive ({reason(exc)})") from None
    for member in members:
        if member.compress_size > most_compressed_bytes(member.file_size):
            raise ExtractionError(
                f"corrupt {label}: {member.filename} declares {human_size(member.file_size)} "
                f"but holds {human_size(member.compress_size)} compressed"
            )
    expanded = sum(member.file_size for member in members)
    too_big = expanded > limits.MAX_ZIP_UNCOMPRESSED
    too_dense = expanded > limits.ZIP_RATIO_FLOOR and expanded > len(data) * limits.MAX_ZIP_RATIO
    if too_big or too_dense:
        raise ExtractionError(
            f"refusing {label}: {human_size(len(data))} would expand to {human_size(expanded)} (possible zip bomb)"
        )


def most_compressed_bytes(size: int) -> int:
    """The most bytes any zip method stores ``size`` bytes in: deflate's stored blocks add
    5 bytes per 16 KB, and encryption headers or descriptors a few dozen more."""
    return size + 5 * (size // 16_384 + 1) + 1024
