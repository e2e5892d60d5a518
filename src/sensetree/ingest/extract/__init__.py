"""Turn one file into plain text for indexing.

Files come from people's disks, so they can be huge, corrupt, hostile (zip
bombs) or not what their extension claims. Every file therefore ends in one of
three ways: readable text, a *context descriptor* (name, folder, size and
neighbours, so the file is still findable by name), or an `ExtractionError`
whose message is one line a user can act on.

One module per family of formats implements the small protocol in `base`
(`Extractor`: a reader from bytes to blocks of text, and the names it answers
to); `registry` holds the one table of them; `core` assembles and normalises.
"""

from .base import Extraction, ExtractionError
from .context import context_descriptor
from .core import extract
from .normalise import normalise

__all__ = ["Extraction", "ExtractionError", "context_descriptor", "extract", "normalise"]
