"""One writer at a time for an index in a bucket: a lease object taken with the store's conditional writes.

A lock file means nothing to two machines. The bucket itself arbitrates instead: the writer
creates ``writer.lease`` with ``If-None-Match: *`` (only one create can succeed), renews it
every few seconds with ``If-Match`` on the ETag it holds (so a lease taken over meanwhile is
noticed, never overwritten), and deletes it when done. A lease not renewed for LEASE_SECONDS,
by the bucket's own clock, belongs to a writer that died: the next one takes it over, again
with ``If-Match``, so two of them cannot both succeed. Lance's commits are safe on their own
(each version's manifest is written with ``If-None-Match``); the lease is what keeps a second
indexer, with a catalog of its own, from interleaving its work with the first one's.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid

from ..errors import WriterBusy
from ..system import process_alive
from .location import NotOurs, S3Location

log = logging.getLogger(__name__)

LEASE = "writer.lease"
LEASE_SECONDS = 30.0
RENEW_SECONDS = 5.0


class WriterLease:
    def __init__(self, location: S3Location, describe: str):
        self.location = location
        self.describe = describe  # who we are, for the error another writer reads
        self._etag: str | None = None
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._lock = threading.Lock()

    def acquire(self) -> None:
        """Take the lease, or raise WriterBusy naming who holds it."""
        body = self._body()
        try:
            self._etag = self.location.create(LEASE, body)
        except NotOurs:
            current = self.location.get(LEASE)
            if current is None:  # released between our two calls: try once more
                return self.acquire()
            holder = _holder(current.data)
            if current.age < LEASE_SECONDS and not _dead_here(holder):
                raise WriterBusy(
                    f"another sensetree process writes the index at {self.location}: "
                    f"{holder.get('who', 'unknown')}, renewed {current.age:.0f} s ago; one writer at "
                    "a time (its lease lapses "
                    f"{LEASE_SECONDS:.0f} s after it stops)"
                ) from None
            try:
                self._etag = self.location.replace(LEASE, body, current.etag)
            except NotOurs:
                raise WriterBusy(f"another sensetree process just took the writer's lease of {self.location}") from None
            log.warning(
                "took over the writer's lease of %s from %s (not renewed for %.0f s)",
                self.location,
                holder.get("who", "unknown"),
                current.age,
            )
        self._stop.clear()
        self._renewer = threading.Thread(target=self._renew, name="writer-lease", daemon=True)
        self._renewer.start()

    def release(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=10)
            self._renewer = None
        with self._lock:
            if self._etag is not None:
                current = self.location.get(LEASE)
                if current is not None and current.etag == self._etag:
                    self.location.delete(LEASE)
                self._etag = None

    def _renew(self) -> None:
        while not self._stop.wait(RENEW_SECONDS):
            with self._lock:
                if self._etag is None:
                    return
                try:
                    self._etag = self.location.replace(LEASE, self._body(), self._etag)
                except NotOurs:
                    log.error("the writer's lease of %s was taken over by another process", self.location)
                    self._etag = None
                    return
                except Exception as exc:  # the store is unreachable for a moment: try again at the next beat
                    log.warning("could not renew the writer's lease of %s: %s", self.location, exc)

    def _body(self) -> bytes:
        return json.dumps(
            {
                "who": self.describe,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "id": uuid.uuid4().hex,
                "at": time.time(),
            }
        ).encode()


def _holder(data: bytes) -> dict:
    try:
        value = json.loads(data)
        return value if isinstance(value, dict) else {}
    except ValueError:
        return {}


def _dead_here(holder: dict) -> bool:
    """The holder ran on this machine and its process is gone (killed): no need to wait for the lease to lapse."""
    if holder.get("host") != socket.gethostname() or not isinstance(holder.get("pid"), int):
        return False
    return not process_alive(holder["pid"])
