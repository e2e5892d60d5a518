"""The errors SenseTree raises on purpose: one tree, which each interface maps once to its own
form (exit codes in ``interfaces/exits.py``, HTTP statuses in ``interfaces/api/app.py``, MCP tool
errors in ``interfaces/mcp_tools.py``).

Every class the product defines derives from ``SenseTreeError``; where code outside (the standard
library, callers written before the tree) expects a built-in kind, a class also derives from it
(``BadInput`` is a ``ValueError``, ``NotFound`` a ``FileNotFoundError``, ``ModelError`` a
``RuntimeError``). Only ``StoreDamaged`` makes ``Storage.recovering`` repair; any other error of the
tree passes through it untouched, so a new error class costs no table check.

Each class carries its ``status``, the HTTP status that says what kind of problem it is (400 the
request, 403 refused, 404 not there, 409 busy, 422 cannot be processed, 503 a model or the store);
every interface maps an error through it, once: the API answers with it, a stream's error event
names it, the CLI prints one ``error:`` line and MCP a tool error whatever it is.

    SenseTreeError
    ├── BadInput             a request, setting or path that is malformed or out of range
    │   ├── OutsideRoots     a path outside the folders that may be read (ingest/confine.py)
    │   ├── NotFound         a path that is not there (also a FileNotFoundError)
    │   │   └── WrongKind    there, but not what was asked: a folder for a file, a FIFO, a device
    │   ├── DataDirUnusable  the data dir cannot be one: HOME is a file, control characters in its path
    │   │   └── NotServed    inside them, but kept out of the index by the user's rules
    │   ├── SettingsError, Unreadable, DimensionMismatch, EvalError
    ├── NotFound             a file or folder that is not there, or not what was asked (a file, a folder)
    ├── WriterBusy           another process writes the data dir
    ├── ReadOnlyIndex        a search node: it changes nothing
    ├── DataDirReadOnly      the data dir cannot be written
    ├── Unsupported          this system cannot do it (open a file in its application)
    ├── ModelError           a model or its endpoint failed
    │   ├── EmbeddingError ── EndpointUnavailable (down: wait and retry)
    │   ├── QueryEmbeddingFailed, RerankerUnavailable, LLMError, LocalModelError,
    │   │   ModelDownloadError, ModelFileError, FetchError
    ├── IndexingPaused       an endpoint stayed down longer than the run may wait
    ├── StoreDamaged         a file of the index is damaged: repaired by rolling back
    ├── ExtractionError      a file's text cannot be extracted
    ├── OcrFailed            OCR could not read a page
    ├── ChatError, AskFailed the assistant could not answer
    └── Interrupted          signals between stages, never shown: Stopped, NotText, ContextOnly,
                             AnswerStopped, NotOurs (a conditional write to object storage lost)
"""


class SenseTreeError(Exception):
    """A problem the user can act on; the message says what and how."""

    status = 400  # the kind of problem, as an HTTP status: a subclass that is another kind says its own


class BadInput(SenseTreeError, ValueError):
    """Input that is malformed or out of range: a query, a filter, a setting, a path."""


class NotFound(BadInput, FileNotFoundError):
    """A path the user named is not there. Also a ``FileNotFoundError``, so code that catches that
    (the reader's callers, the chat tools) keeps working; the message says what was looked for."""

    status = 404

    def __init__(self, message: str):
        super().__init__(message)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class WrongKind(NotFound):
    """The path is there but is not what the operation takes: a folder where a file was asked, a FIFO,
    a socket or a device (never read: reading a FIFO would wait for a writer forever)."""

    status = 422


class DataDirUnusable(BadInput):
    """The data dir cannot be made or used: a path with control characters, a parent that is a file
    (a HOME that is a file). The message names the path and the way out (``--data-dir``, ``SENSETREE_HOME``)."""


class WriterBusy(SenseTreeError):
    """Another process holds the data dir's writer lock."""

    status = 409


class ReadOnlyIndex(SenseTreeError):
    """This process only reads the index (a search node): changes are made where it is indexed."""

    status = 403


class DataDirReadOnly(SenseTreeError):
    """The data dir cannot be written (a read-only mount, no permission): commands that only read still work."""


class Unsupported(SenseTreeError):
    """What was asked cannot be done on this system: opening a file with the desktop's application where
    there is no desktop."""

    status = 501


class ModelError(SenseTreeError, RuntimeError):
    """A model, or the endpoint serving it, failed or cannot be had."""

    status = 503


class StoreDamaged(SenseTreeError, RuntimeError):
    """A file of the index is torn or corrupt (a power cut, a bad sector): the store rolls it back to its
    last sound version. The one error that makes ``Storage.recovering`` repair."""

    status = 503


class Interrupted(SenseTreeError):
    """A signal from one stage to the one that called it (stopped, not text, context only): caught
    inside the product, never shown as an error."""
