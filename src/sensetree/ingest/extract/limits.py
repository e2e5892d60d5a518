"""Every bound the extractors keep, in one place (read at call time, so tests can lower them)."""

MAX_FILE_BYTES = 50 * 1024 * 1024
"""The default size limit of a file (and of an archive member) whose content is read; the indexer passes its own."""

MAX_TEXT_CHARS = 5_000_000
"""Longer texts are cut: past this a file is a dump, not a document, and chunking it would swamp the index."""

MAX_SHEET_CHARS = 2 * 1024 * 1024
"""Per-sheet budget, so one giant data sheet cannot crowd out the other sheets of a workbook."""

MAX_ZIP_UNCOMPRESSED = 200 * 1024 * 1024
"""What the members of one zip-based document may add up to."""

MAX_ZIP_RATIO = 100
ZIP_RATIO_FLOOR = 10 * 1024 * 1024
"""The ratio test only applies above this size: small repetitive XML legitimately compresses very well."""

DETECT_SAMPLE = 1024 * 1024
PRINTABLE_SAMPLE = 64 * 1024
