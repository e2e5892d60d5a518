"""Where an index lives: a folder on this machine, or a prefix in an S3-compatible bucket.

Both hold the LanceDB ``chunks`` table and, beside it, a few small objects of ours (what a
search node needs besides the chunks: ``manifest.py``; on a bucket, the writer's lease:
``lease.py``). LanceDB reaches the bucket itself (its own S3 client); the small objects go
through botocore (the ``s3`` extra), which reads the endpoint, region and credentials the
usual way: ``AWS_*`` variables, then ``~/.aws/config`` and ``~/.aws/credentials``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from ..config import place_problem
from ..errors import Interrupted, SenseTreeError


class NotOurs(Interrupted):
    """A conditional write lost: the object exists already, or changed since it was read."""


@dataclass(frozen=True)
class StoredObject:
    data: bytes
    etag: str
    age: float  # seconds since it was last written, by the store's own clock


class LocalLocation:
    """A folder: the default, ``<data dir>/lancedb``."""

    remote = False

    def __init__(self, directory: Path):
        self.directory = directory

    @property
    def uri(self) -> str:
        return str(self.directory)

    @property
    def storage_options(self) -> dict[str, str]:
        return {}

    def read(self, name: str) -> bytes | None:
        try:
            return (self.directory / name).read_bytes()
        except FileNotFoundError:
            return None

    def write(self, name: str, data: bytes) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / f".{name}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, self.directory / name)

    def size_bytes(self) -> int:
        return sum(f.stat().st_size for f in self.directory.rglob("*") if f.is_file()) if self.directory.is_dir() else 0

    def __str__(self) -> str:
        return self.uri


@dataclass
class S3Location:
    """``s3://bucket/prefix`` on AWS or any S3-compatible store (MinIO, Ceph, R2...)."""

    bucket: str
    prefix: str
    endpoint: str = ""
    region: str = ""
    _client: Any = field(default=None, repr=False)
    remote = True

    @classmethod
    def parse(cls, uri: str, endpoint: str = "", region: str = "") -> S3Location:
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        if not bucket:
            raise SenseTreeError(f"{uri!r} names no bucket; write s3://bucket/prefix")
        endpoint = endpoint or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL", "")
        return cls(bucket, prefix.strip("/"), endpoint, region)

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    @property
    def storage_options(self) -> dict[str, str]:
        """What LanceDB's own S3 client needs to find the bucket; it reads the credentials itself,
        from the same variables and files."""
        options = {}
        if self.endpoint:
            options["aws_endpoint"] = self.endpoint
            if self.endpoint.startswith("http://"):
                options["allow_http"] = "true"
        region = self.region or self.client.meta.region_name
        if region:
            options["aws_region"] = region
        return options

    @property
    def client(self):
        if self._client is None:
            try:
                import boto3
            except ImportError:
                raise SenseTreeError("an index on S3 needs the s3 extra: pip install 'sensetree[s3]'") from None
            self._client = boto3.session.Session().client(
                "s3", endpoint_url=self.endpoint or None, region_name=self.region or None
            )
        return self._client

    def _key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def get(self, name: str) -> StoredObject | None:
        from botocore.exceptions import ClientError

        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=self._key(name))
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("NoSuchKey", "404"):
                return None
            raise self._error(exc) from None
        now = parsedate_to_datetime(answer["ResponseMetadata"]["HTTPHeaders"]["date"])
        return StoredObject(answer["Body"].read(), answer["ETag"], (now - answer["LastModified"]).total_seconds())

    def read(self, name: str) -> bytes | None:
        found = self.get(name)
        return found.data if found else None

    def write(self, name: str, data: bytes) -> None:
        from botocore.exceptions import ClientError

        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(name), Body=data)
        except ClientError as exc:
            raise self._error(exc) from None

    def create(self, name: str, data: bytes) -> str:
        """Write ``name`` only if no object has that name (``If-None-Match: *``); its ETag. NotOurs otherwise."""
        return self._conditional_put(name, data, IfNoneMatch="*")

    def replace(self, name: str, data: bytes, etag: str) -> str:
        """Overwrite ``name`` only if it is still the version ``etag`` (``If-Match``); NotOurs otherwise."""
        return self._conditional_put(name, data, IfMatch=etag)

    def _conditional_put(self, name: str, data: bytes, **condition: str) -> str:
        from botocore.exceptions import ClientError

        try:
            return self.client.put_object(Bucket=self.bucket, Key=self._key(name), Body=data, **condition)["ETag"]
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409"):
                raise NotOurs(name) from None
            raise self._error(exc) from None

    def delete(self, name: str) -> None:
        from botocore.exceptions import ClientError

        try:
            self.client.delete_object(Bucket=self.bucket, Key=self._key(name))
        except ClientError as exc:
            raise self._error(exc) from None

    def size_bytes(self) -> int:
        total = 0
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self._key("")):
            total += sum(item["Size"] for item in page.get("Contents", []))
        return total

    def _error(self, exc: Exception) -> SenseTreeError:
        return SenseTreeError(f"{self.uri}: {exc}")

    def __str__(self) -> str:
        return self.uri


Location = LocalLocation | S3Location


def location(uri: str, default: Path, endpoint: str = "", region: str = "") -> Location:
    """The location a ``storage.uri`` names: empty = ``default``, ``s3://...``, or a folder."""
    if not uri:
        return LocalLocation(default)
    problem = place_problem(uri)
    if problem:
        raise SenseTreeError(f"storage.uri {uri!r}: {problem}")
    if uri.startswith("s3://"):
        return S3Location.parse(uri, endpoint, region)
    return LocalLocation(Path(os.path.expanduser(uri)))  # Path.expanduser raises for an unknown ~user
