"""Errors every layer may raise for the user to act on."""


class SenseTreeError(Exception):
    """A problem the user can act on; the message says what and how."""


class WriterBusy(SenseTreeError):
    """Another process holds the data dir's writer lock."""


class ReadOnlyIndex(SenseTreeError):
    """This process only reads the index (a search node): changes are made where it is indexed."""


class DataDirReadOnly(SenseTreeError):
    """The data dir cannot be written (a read-only mount, no permission): commands that only read still work."""
