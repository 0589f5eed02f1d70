"""Where a run's artifacts and history go: locations, the key layout, content digests. Pure.

Layout inside an artifact store (a folder, or ``s3://bucket/prefix``)::

    runs/<run_id>/manifest.json      what the run stored, with sizes and sha256 digests
    runs/<run_id>/report.json        the run's report (TraceReport, LocalizationReport, RepairReport)
    runs/<run_id>/report.html        the self-contained HTML report
    runs/<run_id>/patch.diff         the accepted (or best plausible) patch, when there is one
    blobs/sha256/<aa>/<digest>.json.gz   large content (traces), stored once whatever the run

The I/O (local folder, boto3, the spool) is in ``tasks/storage/artifacts.py``.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.errors import InputError

__all__ = [
    "ArtifactLocation",
    "StoredObject",
    "RunManifest",
    "parse_location",
    "resolve_artifacts",
    "resolve_db",
    "resolve_spool",
    "run_key",
    "blob_key",
    "sha256_hex",
    "gzip_bytes",
]

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


class ArtifactLocation(BaseModel):
    """A parsed artifact store location: a local folder or an S3 bucket and prefix."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["local", "s3"]
    folder: str | None = Field(None, description="Absolute folder (local).")
    bucket: str | None = Field(None, description="Bucket name (s3).")
    prefix: str = Field("", description="Key prefix without leading or trailing '/' (s3).")

    def uri(self, key: str = "") -> str:
        """The location (or one key in it) as people write it: a path or ``s3://bucket/prefix/key``."""
        if self.kind == "local":
            return str(Path(self.folder or ".") / key) if key else str(self.folder)
        parts = [p for p in (self.prefix, key) if p]
        return f"s3://{self.bucket}/{'/'.join(parts)}" if parts else f"s3://{self.bucket}"

    def object_key(self, key: str) -> str:
        """The S3 object key of a layout key (the prefix prepended)."""
        return f"{self.prefix}/{key}" if self.prefix else key


class StoredObject(BaseModel):
    """One object a run stored (or spooled, to be uploaded later)."""

    model_config = ConfigDict(frozen=True)

    key: str = Field(description="Key in the layout, e.g. 'runs/<id>/report.json'.")
    uri: str = Field(description="Where it is (or will be once flushed).")
    size: int
    sha256: str
    spooled: bool = Field(False, description="Not uploaded yet: kept in the local spool.")


class RunManifest(BaseModel):
    """``runs/<run_id>/manifest.json``: what one run stored."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    kind: str
    repository: str
    objects: tuple[StoredObject, ...] = ()


def parse_location(text: str, base: Path | None = None) -> ArtifactLocation:
    """``s3://bucket[/prefix]`` or a folder (relative ones against ``base``, default the cwd)."""
    text = text.strip()
    if not text:
        raise InputError("the artifact location is empty (EQUISA_ARTIFACTS / --artifacts)")
    if text.startswith("s3://"):
        bucket, _, prefix = text[len("s3://"):].partition("/")
        if not _BUCKET.match(bucket):
            raise InputError(f"{text!r}: {bucket!r} is not a valid S3 bucket name")
        return ArtifactLocation(kind="s3", bucket=bucket, prefix=prefix.strip("/"))
    if "://" in text:
        raise InputError(f"{text!r}: artifacts go to a folder or s3://bucket/prefix")
    folder = Path(text).expanduser()
    if not folder.is_absolute():
        folder = (base or Path.cwd()) / folder
    return ArtifactLocation(kind="local", folder=str(folder))


def _data_home(env: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME/equisa``, else ``~/.local/share/equisa``: results people keep (not a cache)."""
    root = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(root) / "equisa"


def resolve_artifacts(option: str | None, env: Mapping[str, str] | None = None) -> ArtifactLocation:
    """The artifact store: ``--artifacts``, else ``EQUISA_ARTIFACTS``, else the local default folder."""
    env = os.environ if env is None else env
    text = option or env.get("EQUISA_ARTIFACTS") or str(_data_home(env) / "artifacts")
    return parse_location(text)


def resolve_db(option: str | None, env: Mapping[str, str] | None = None) -> Path:
    """The DuckDB history file: ``--db``, else ``EQUISA_DB``, else ``<data home>/history.duckdb``."""
    env = os.environ if env is None else env
    text = option or env.get("EQUISA_DB") or str(_data_home(env) / "history.duckdb")
    return Path(text).expanduser().absolute()


def resolve_spool(env: Mapping[str, str] | None = None) -> Path:
    """The local spool (``EQUISA_SPOOL``, else ``<data home>/spool``): what waits to be written."""
    env = os.environ if env is None else env
    return Path(env.get("EQUISA_SPOOL") or str(_data_home(env) / "spool")).expanduser().absolute()


def run_key(run_id: str, name: str) -> str:
    """``runs/<run_id>/<name>``; run ids are checked so a key never escapes its folder."""
    if not _RUN_ID.match(run_id):
        raise InputError(f"{run_id!r} is not a valid run id")
    if not name or name.startswith("/") or ".." in name.split("/"):
        raise InputError(f"{name!r} is not a valid artifact name")
    return f"runs/{run_id}/{name}"


def blob_key(digest: str, suffix: str = ".json.gz") -> str:
    """``blobs/sha256/<first two hex digits>/<digest><suffix>``: content-addressed, stored once."""
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise ValueError(f"not a sha256 hex digest: {digest!r}")
    return f"blobs/sha256/{digest[:2]}/{digest}{suffix}"


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex."""
    return hashlib.sha256(data).hexdigest()


def gzip_bytes(data: bytes) -> bytes:
    """gzip with a zero timestamp, so equal content gives equal bytes (and one blob)."""
    return gzip.compress(data, compresslevel=6, mtime=0)
