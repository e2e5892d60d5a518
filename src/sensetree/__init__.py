"""SenseTree: local semantic search over your own folders.

Nothing leaves the machine unless an endpoint is configured (design §5): before any library that
could phone home is imported, its telemetry is turned off here, once, for this process and every
process it starts (worker processes, Ray workers, the service). onnxruntime's builds carry a
telemetry client that looks up Microsoft's events collector when a session is made (ORT reads
``ORT_DISABLE_TELEMETRY``); Hugging Face's hub client, Ray's usage statistics and any library that
honours ``DO_NOT_TRACK`` are told the same. ``tests/faults/test_network.py`` runs real commands in a
network namespace and fails on any connection that leaves loopback.
"""

import os as _os

TELEMETRY_OFF = {
    "ORT_DISABLE_TELEMETRY": "1",        # onnxruntime (its OneDS client: mobile.events.data.microsoft.com)
    "HF_HUB_DISABLE_TELEMETRY": "1",     # huggingface_hub
    "RAY_USAGE_STATS_ENABLED": "0",      # Ray (`index --ray`)
    "DO_NOT_TRACK": "1",                 # https://donottrack.sh: any library that honours it
}
_os.environ.update(TELEMETRY_OFF)
