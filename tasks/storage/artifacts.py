"""The artifact store: a local folder, or S3 through boto3 (any S3-compatible endpoint), with a spool.

Writes never lose data: an object that cannot reach S3 (endpoint down, credentials rejected,
bucket missing) is written to the local spool instead, and the run goes on; ``flush_spool`` (the
``equisa flush`` command, and every later run that reaches the same store) uploads what waits.
Once one write in a store fails, the store's later writes go straight to the spool, so a run
does not wait out the timeouts once per object.

S3 configuration is boto3's own: ``AWS_ENDPOINT_URL`` (any S3-compatible server),
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION`` (default ``us-east-1``),
or a profile; or a prefect-aws ``AwsCredentials`` block named by ``EQUISA_AWS_CREDENTIALS_BLOCK``
(its keys, region and client parameters such as the endpoint). Retries are botocore's
``standard`` mode (exponential backoff with jitter on connection errors, throttling and 5xx), not a
loop of our own. Path-style addressing is used
because S3-compatible servers on a host and port (MinIO, rclone, moto) do not serve buckets as
sub-domains.

Spool layout: ``<spool>/artifacts/<destination id>/destination.json`` (where the objects go) and
``objects/<key>`` (their bytes, written atomically).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from equisa_core.errors import BucketNotFoundError, StorageAccessError, StorageError
from equisa_core.operations.storage import (
    ArtifactLocation,
    StoredObject,
    blob_key,
    gzip_bytes,
    parse_location,
    resolve_spool,
    sha256_hex,
)

__all__ = ["ArtifactStore", "FlushResult", "flush_spool", "spooled_destinations", "translate_s3_error"]

#: botocore retry and timeout settings: 3 attempts in standard mode (backoff with jitter).
_S3_ATTEMPTS = 3
_S3_CONNECT_TIMEOUT_S = 3.0
_S3_READ_TIMEOUT_S = 30.0
_ACCESS_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken",
                 "ExpiredToken", "403", "Forbidden", "AllAccessDisabled"}


class FlushResult(BaseModel):
    """What one flush of the spool did."""

    model_config = ConfigDict(frozen=True)

    destination: str
    uploaded: int
    remaining: int
    error: str | None = None
    exit_code: int | None = None


def _endpoint() -> str | None:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def _destination_id(location: ArtifactLocation) -> str:
    return sha256_hex(f"{location.uri()}|{_endpoint() or ''}".encode())[:16]


def translate_s3_error(error: BaseException, location: ArtifactLocation) -> StorageError:
    """A boto3/botocore exception as one of EQUISA's storage errors, with a message people can act on."""
    from botocore.exceptions import ClientError, NoCredentialsError, PartialCredentialsError

    where = f"{location.uri()} (endpoint {_endpoint() or 'AWS'})"
    if isinstance(error, StorageError):
        return error
    if isinstance(error, NoCredentialsError | PartialCredentialsError):
        return StorageAccessError(f"no S3 credentials for {where}: set AWS_ACCESS_KEY_ID and "
                                  "AWS_SECRET_ACCESS_KEY (or a profile)")
    if isinstance(error, ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code == "NoSuchBucket":
            return BucketNotFoundError(f"the bucket {location.bucket!r} does not exist at {where}; "
                                       "create it or fix EQUISA_ARTIFACTS")
        if code in _ACCESS_CODES or status == 403:
            return StorageAccessError(f"S3 rejected the credentials for {where} ({code}): check "
                                      "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
        return StorageError(f"S3 error at {where}: {code or status}: "
                            f"{error.response.get('Error', {}).get('Message', '')}".rstrip(": "))
    return StorageError(f"cannot reach the artifact store {where}: {type(error).__name__}: {error}")


class ArtifactStore:
    """Writes a run's objects to a folder or S3; what S3 does not take waits in the spool."""

    def __init__(self, location: ArtifactLocation | str, spool: Path | None = None) -> None:
        self.location = parse_location(location) if isinstance(location, str) else location
        self.spool_root = spool or resolve_spool()
        self.problems: list[str] = []
        self._down: StorageError | None = None
        self._client: Any = None
        self._lock = threading.Lock()

    # --- writing -------------------------------------------------------------------------------

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> StoredObject:
        """Store ``data`` at ``key``; never raises for S3 faults (the object is spooled instead)."""
        digest = sha256_hex(data)
        if self.location.kind == "local":
            self._write_local(key, data)
            return StoredObject(key=key, uri=self.location.uri(key), size=len(data), sha256=digest)
        if self._down is None:
            try:
                self._upload(key, data, content_type)
                return StoredObject(key=key, uri=self.location.uri(key), size=len(data), sha256=digest)
            except Exception as error:  # translated; the object goes to the spool below
                self._down = translate_s3_error(error, self.location)
        self._spool(key, data)
        return StoredObject(key=key, uri=self.location.uri(key), size=len(data), sha256=digest, spooled=True)

    def put_blob(self, data: bytes) -> StoredObject:
        """Store large content once, gzipped, under its digest (``blobs/sha256/...``)."""
        digest = sha256_hex(data)
        key = blob_key(digest)
        packed = gzip_bytes(data)
        if self._down is None and self.exists(key):
            return StoredObject(key=key, uri=self.location.uri(key), size=len(packed),
                                sha256=sha256_hex(packed))
        return self.put(key, packed, "application/gzip")

    @property
    def failure(self) -> StorageError | None:
        """Why S3 refused this store's writes (they were spooled), or None."""
        return self._down

    def exists(self, key: str) -> bool:
        """Whether ``key`` is stored (False when the store cannot be asked)."""
        if self.location.kind == "local":
            return (Path(self.location.folder or ".") / key).is_file()
        try:
            self._s3().head_object(Bucket=self.location.bucket, Key=self.location.object_key(key))
            return True
        except Exception:  # missing, or unreachable: either way, write it
            return False

    def get(self, key: str) -> bytes:
        """The bytes at ``key`` (from the spool if they are still waiting there); raises StorageError."""
        spooled = self._spool_dir() / "objects" / key
        if self.location.kind == "local":
            path = Path(self.location.folder or ".") / key
            if not path.is_file():
                raise StorageError(f"{path} does not exist")
            return path.read_bytes()
        if spooled.is_file():
            return spooled.read_bytes()
        try:
            answer = self._s3().get_object(Bucket=self.location.bucket, Key=self.location.object_key(key))
            return answer["Body"].read()
        except Exception as error:
            from botocore.exceptions import ClientError

            if isinstance(error, ClientError) and error.response.get("Error", {}).get("Code") in (
                    "NoSuchKey", "404"):
                raise StorageError(f"{self.location.uri(key)} does not exist") from None
            raise translate_s3_error(error, self.location) from None

    def check(self) -> None:
        """Raise the StorageError that explains why the store is unusable (reachability, keys, bucket)."""
        if self.location.kind == "local":
            folder = Path(self.location.folder or ".")
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise StorageError(f"cannot create the artifact folder {folder}: {error}") from None
            return
        try:
            self._s3().head_bucket(Bucket=self.location.bucket)
        except Exception as error:
            from botocore.exceptions import ClientError

            if isinstance(error, ClientError) and str(error.response.get("Error", {}).get("Code")) == "404":
                raise BucketNotFoundError(
                    f"the bucket {self.location.bucket!r} does not exist at {self.location.uri()} "
                    f"(endpoint {_endpoint() or 'AWS'}); create it or fix EQUISA_ARTIFACTS") from None
            raise translate_s3_error(error, self.location) from None

    # --- the spool ----------------------------------------------------------------------------

    def spooled(self) -> list[str]:
        """Keys waiting in this store's spool."""
        objects = self._spool_dir() / "objects"
        return sorted(p.relative_to(objects).as_posix() for p in _files(objects))

    def flush(self) -> FlushResult:
        """Upload what waits in this store's spool; stops at the first failure (kept for next time)."""
        waiting = self.spooled()
        if self.location.kind == "local" or not waiting:
            return FlushResult(destination=self.location.uri(), uploaded=0, remaining=len(waiting))
        objects = self._spool_dir() / "objects"
        uploaded = 0
        for key in waiting:
            path = objects / key
            try:
                self._upload(key, path.read_bytes(), _content_type(key))
            except Exception as error:
                failure = translate_s3_error(error, self.location)
                return FlushResult(destination=self.location.uri(), uploaded=uploaded,
                                   remaining=len(waiting) - uploaded, error=failure.message,
                                   exit_code=failure.exit_code)
            path.unlink()
            uploaded += 1
        _prune(objects)
        self._down = None
        return FlushResult(destination=self.location.uri(), uploaded=uploaded, remaining=0)

    # --- internals ----------------------------------------------------------------------------

    def _s3(self) -> Any:
        with self._lock:
            if self._client is None:
                import boto3
                from botocore.config import Config

                config = Config(
                    retries={"total_max_attempts": _S3_ATTEMPTS, "mode": "standard"},
                    connect_timeout=_S3_CONNECT_TIMEOUT_S, read_timeout=_S3_READ_TIMEOUT_S,
                    s3={"addressing_style": "path"},
                )
                block = os.environ.get("EQUISA_AWS_CREDENTIALS_BLOCK")
                session, overrides = _block_session(block) if block else (boto3.session.Session(), {})
                if "config" in overrides:
                    config = overrides.pop("config").merge(config)  # our retries and timeouts win
                region = (session.region_name or os.environ.get("AWS_DEFAULT_REGION")
                          or os.environ.get("AWS_REGION") or "us-east-1")
                self._client = session.client("s3", region_name=region, config=config, **overrides)
            return self._client

    def _upload(self, key: str, data: bytes, content_type: str) -> None:
        self._s3().put_object(Bucket=self.location.bucket, Key=self.location.object_key(key), Body=data,
                              ContentType=content_type)

    def _write_local(self, key: str, data: bytes) -> None:
        path = Path(self.location.folder or ".") / key
        try:
            _atomic_write(path, data)
        except OSError as error:
            raise StorageError(f"cannot write {path}: {error.strerror or error}") from None

    def _spool_dir(self) -> Path:
        return self.spool_root / "artifacts" / _destination_id(self.location)

    def _spool(self, key: str, data: bytes) -> None:
        folder = self._spool_dir()
        destination = folder / "destination.json"
        if not destination.exists():
            _atomic_write(destination, json.dumps(
                {"location": self.location.uri(), "endpoint": _endpoint()}, indent=2).encode())
        _atomic_write(folder / "objects" / key, data)


def _block_session(name: str) -> tuple[Any, dict[str, Any]]:
    """A boto3 session and client parameters (endpoint, ...) from a prefect-aws ``AwsCredentials`` block."""
    try:
        from prefect_aws import AwsCredentials

        credentials = AwsCredentials.load(name)
    except Exception as error:
        raise StorageAccessError(f"cannot load the AwsCredentials block {name!r} "
                                 f"(EQUISA_AWS_CREDENTIALS_BLOCK): {error}") from None
    return credentials.get_boto3_session(), credentials.aws_client_parameters.get_params_override()


def spooled_destinations(spool: Path | None = None) -> Iterator[tuple[str, str | None, int]]:
    """Every destination with objects waiting in the spool: (location, endpoint, object count)."""
    root = (spool or resolve_spool()) / "artifacts"
    if not root.is_dir():
        return
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        try:
            meta = json.loads((folder / "destination.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        count = sum(1 for _ in _files(folder / "objects"))
        if count:
            yield meta["location"], meta.get("endpoint"), count


def flush_spool(spool: Path | None = None, only: ArtifactLocation | None = None) -> list[FlushResult]:
    """Flush every spooled destination (or only ``only``) whose endpoint is the configured one."""
    results = []
    for location, endpoint, _count in spooled_destinations(spool):
        parsed = parse_location(location)
        if only is not None and parsed != only:
            continue
        if endpoint != _endpoint():
            results.append(FlushResult(
                destination=location, uploaded=0, remaining=_count, exit_code=StorageError.exit_code,
                error=f"spooled for endpoint {endpoint or 'AWS'}, but AWS_ENDPOINT_URL is "
                      f"{_endpoint() or 'unset'}; set it to flush these"))
            continue
        results.append(ArtifactStore(parsed, spool).flush())
    return results


def _content_type(key: str) -> str:
    for suffix, kind in ((".json.gz", "application/gzip"), (".json", "application/json"),
                         (".html", "text/html; charset=utf-8"), (".diff", "text/x-diff; charset=utf-8")):
        if key.endswith(suffix):
            return kind
    return "application/octet-stream"


def _files(folder: Path) -> Iterator[Path]:
    if folder.is_dir():
        yield from (p for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.startswith(".tmp-"))


def _prune(folder: Path) -> None:
    """Remove the empty folders a flush leaves behind."""
    for path in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        try:
            path.rmdir()
        except OSError:
            pass


def _atomic_write(path: Path, data: bytes) -> None:
    """Write through a temporary file and a rename, so no reader (or flush) sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise

