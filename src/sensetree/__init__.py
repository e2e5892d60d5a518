"""SenseTree: local-first semantic search over your own folders, as a Python library.

    from sensetree import Engine, AddRootParams, SearchParams

    with Engine("/tmp/st-data") as engine:               # a data dir: settings, the index, the models
        engine.run(AddRootParams("~/Documents"))
        engine.index()                                    # keyword first, then vectors
        for result in engine.run(SearchParams("harbour survey", limit=5)).results:
            print(result.score, result.path, result.snippet)

Every operation of the CLI, the HTTP API and MCP is ``engine.run(<its parameters>)``, answered by one
handler (``handlers/``) with one result type; ``OPERATIONS`` lists them (``operations.py``). Errors
the user can act on are ``SenseTreeError``s, each with its HTTP-like ``status``.

Importing ``sensetree`` loads nothing else: each name is imported when first used (the engine loads
LanceDB and the models; the command line starts without them).

Nothing leaves the machine unless an endpoint is configured (design §5): before any library that
could phone home is imported, its telemetry is turned off here, once, for this process and every
process it starts (worker processes, Ray workers, the service). onnxruntime's builds carry a
telemetry client that looks up Microsoft's events collector when a session is made (ORT reads
``ORT_DISABLE_TELEMETRY``); Hugging Face's hub client, Ray's usage statistics and any library that
honours ``DO_NOT_TRACK`` are told the same. ``tests/faults/test_network.py`` runs real commands in a
network namespace and fails on any connection that leaves loopback.
"""

from __future__ import annotations

import importlib
import os as _os
from typing import TYPE_CHECKING, Any

TELEMETRY_OFF = {
    "ORT_DISABLE_TELEMETRY": "1",  # onnxruntime (its OneDS client: mobile.events.data.microsoft.com)
    "HF_HUB_DISABLE_TELEMETRY": "1",  # huggingface_hub
    "RAY_USAGE_STATS_ENABLED": "0",  # Ray (`index --ray`)
    "DO_NOT_TRACK": "1",  # https://donottrack.sh: any library that honours it
}
_os.environ.update(TELEMETRY_OFF)

# name -> the module that defines it
_PUBLIC = {
    "Engine": "engine",
    # the operations, their parameters
    "OPERATIONS": "operations",
    "Operation": "operations",
    "Effect": "operations",
    "AskParams": "operations",
    **dict.fromkeys(
        [
            "SearchParams",
            "TreeParams",
            "SimilarParams",
            "BrowseParams",
            "RetryParams",
            "ReindexParams",
            "IgnoreParams",
            "UnignoreParams",
            "SummariseParams",
            "CompareParams",
            "StatusParams",
            "QueueParams",
            "RootsParams",
            "AddRootParams",
            "RemoveRootParams",
            "SenseParams",
            "PinParams",
            "FileParams",
            "PreviewParams",
            "FolderModeParams",
            "SettingsParams",
            "SetParams",
            "ModelsParams",
            "ProbeParams",
            "IndexParams",
            "ReadParams",
            "PageParams",
            "OpenParams",
            "PullParams",
            "DoctorParams",
        ],
        "operations",
    ),
    # their results
    **dict.fromkeys(
        [
            "SearchResponse",
            "SearchResult",
            "Coverage",
            "SimilarResponse",
            "TreeResponse",
            "TreeNode",
            "Version",
            "Filters",
        ],
        "search.types",
    ),
    **dict.fromkeys(
        [
            "Entry",
            "Listing",
            "Requeued",
            "Ignored",
            "TakenBack",
            "Phases",
            "Queue",
            "QueuedFile",
            "Status",
            "Roots",
            "RootAdded",
            "RootRemoved",
            "Sense",
            "FileDetail",
            "Preview",
            "SettingsView",
            "SettingChanged",
            "FolderMode",
            "ProbeReport",
            "ModelsCatalogue",
            "Note",
            "Summary",
            "Indexed",
            "FileContents",
            "PageImage",
            "Opened",
            "Download",
            "Pulled",
            "Diagnosis",
        ],
        "answers",
    ),
    "Progress": "ingest.progress",
    # the errors
    **dict.fromkeys(
        [
            "SenseTreeError",
            "BadInput",
            "NotFound",
            "WriterBusy",
            "ReadOnlyIndex",
            "DataDirReadOnly",
            "ModelError",
            "StoreDamaged",
            "Unsupported",
        ],
        "errors",
    ),
    "OutsideRoots": "ingest.confine",
    "NotServed": "ingest.confine",
    "Unreadable": "reader",
    "SettingsError": "config",
    "IndexingPaused": "ingest.pause",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'sensetree' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # once: the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what a type checker and an IDE see; nothing of it is imported at run time
    from .answers import (
        Diagnosis,
        Download,
        Entry,
        FileContents,
        FileDetail,
        FolderMode,
        Ignored,
        Indexed,
        Listing,
        ModelsCatalogue,
        Note,
        Opened,
        PageImage,
        Phases,
        Preview,
        ProbeReport,
        Pulled,
        Queue,
        QueuedFile,
        Requeued,
        RootAdded,
        RootRemoved,
        Roots,
        Sense,
        SettingChanged,
        SettingsView,
        Status,
        Summary,
        TakenBack,
    )
    from .config import SettingsError
    from .engine import Engine
    from .errors import (
        BadInput,
        DataDirReadOnly,
        ModelError,
        NotFound,
        ReadOnlyIndex,
        SenseTreeError,
        StoreDamaged,
        Unsupported,
        WriterBusy,
    )
    from .ingest.confine import NotServed, OutsideRoots
    from .ingest.pause import IndexingPaused
    from .ingest.progress import Progress
    from .operations import (
        OPERATIONS,
        AddRootParams,
        AskParams,
        BrowseParams,
        CompareParams,
        DoctorParams,
        Effect,
        FileParams,
        FolderModeParams,
        IgnoreParams,
        IndexParams,
        ModelsParams,
        OpenParams,
        Operation,
        PageParams,
        PinParams,
        PreviewParams,
        ProbeParams,
        PullParams,
        QueueParams,
        ReadParams,
        ReindexParams,
        RemoveRootParams,
        RetryParams,
        RootsParams,
        SearchParams,
        SenseParams,
        SetParams,
        SettingsParams,
        SimilarParams,
        StatusParams,
        SummariseParams,
        TreeParams,
        UnignoreParams,
    )
    from .reader import Unreadable
    from .search.types import (
        Coverage,
        Filters,
        SearchResponse,
        SearchResult,
        SimilarResponse,
        TreeNode,
        TreeResponse,
        Version,
    )
