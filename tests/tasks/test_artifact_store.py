"""The artifact store against real S3 servers on 127.0.0.1 (rclone serve s3, moto), and its spool."""

from __future__ import annotations

import gzip
import threading
import time

import pytest

from equisa_core.errors import BucketNotFoundError, StorageAccessError, StorageError
from equisa_core.operations.storage import parse_location, run_key, sha256_hex
from tasks.storage.artifacts import ArtifactStore, flush_spool
from tests.s3_servers import free_port

pytestmark = pytest.mark.integration


@pytest.fixture(params=["rclone", "moto"])
def s3(request, monkeypatch):
    """Each S3 server in turn, with a fresh bucket and the client environment set."""
    server = request.getfixturevalue(f"{request.param}_s3")
    bucket = f"equisa-{request.node.name.split('[')[0][-20:].replace('_', '-')}-{free_port()}".lower()
    server.make_bucket(bucket)
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    return server, bucket


def test_objects_round_trip_and_blobs_are_stored_once(s3, tmp_path):
    server, bucket = s3
    store = ArtifactStore(parse_location(f"s3://{bucket}/nightly"), spool=tmp_path / "spool")
    report = store.put(run_key("run-1", "report.json"), b'{"status": "fixed"}', "application/json")
    trace = b'{"tests": []}' * 1000
    first = store.put_blob(trace)
    again = store.put_blob(trace)
    assert not report.spooled and not first.spooled and store.failure is None
    assert first.key == again.key == f"blobs/sha256/{sha256_hex(trace)[:2]}/{sha256_hex(trace)}.json.gz"
    assert server.keys(bucket) == {"nightly/runs/run-1/report.json", f"nightly/{first.key}"}
    assert store.get("runs/run-1/report.json") == b'{"status": "fixed"}'
    assert gzip.decompress(store.get(first.key)) == trace
    assert report.uri == f"s3://{bucket}/nightly/runs/run-1/report.json"
    store.check()


def test_wrong_credentials_spool_the_objects_and_flush_says_why(rclone_s3, tmp_path, monkeypatch):
    rclone_s3.make_bucket("equisa")
    for name, value in rclone_s3.env(secret_key="not-the-secret").items():
        monkeypatch.setenv(name, value)
    spool = tmp_path / "spool"
    store = ArtifactStore("s3://equisa/runs-by-night", spool=spool)
    stored = store.put(run_key("r1", "report.json"), b"{}")
    assert stored.spooled and isinstance(store.failure, StorageAccessError)
    assert "rejected the credentials" in store.failure.message and store.failure.exit_code == 41
    with pytest.raises(StorageAccessError):
        store.check()
    (refused,) = flush_spool(spool)
    assert (refused.uploaded, refused.remaining, refused.exit_code) == (0, 1, 41)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", rclone_s3.env()["AWS_SECRET_ACCESS_KEY"])
    (done,) = flush_spool(spool)
    assert (done.uploaded, done.remaining, done.error) == (1, 0, None)
    assert rclone_s3.keys("equisa") == {"runs-by-night/runs/r1/report.json"}


def test_a_missing_bucket_is_named_and_nothing_is_lost(moto_s3, tmp_path, monkeypatch):
    for name, value in moto_s3.env().items():
        monkeypatch.setenv(name, value)
    store = ArtifactStore("s3://no-such-bucket-here/x", spool=tmp_path / "spool")
    with pytest.raises(BucketNotFoundError, match="'no-such-bucket-here' does not exist") as missing:
        store.check()
    assert missing.value.exit_code == 42
    stored = store.put(run_key("r1", "report.html"), b"<html></html>")
    assert stored.spooled and isinstance(store.failure, BucketNotFoundError)
    assert store.spooled() == ["runs/r1/report.html"]
    moto_s3.make_bucket("no-such-bucket-here")
    assert store.flush().uploaded == 1
    assert moto_s3.keys("no-such-bucket-here") == {"x/runs/r1/report.html"}


def test_an_unreachable_endpoint_spools_at_once_after_the_first_failure(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    store = ArtifactStore("s3://equisa/p", spool=tmp_path / "spool")
    first = store.put(run_key("r1", "a.json"), b"1")
    started = time.monotonic()
    later = [store.put(run_key("r1", f"b{i}.json"), b"2") for i in range(20)]
    assert first.spooled and all(o.spooled for o in later)
    assert time.monotonic() - started < 1.0  # no timeout waited per object once the store is down
    assert type(store.failure) is StorageError and "cannot reach the artifact store" in store.failure.message
    assert store.failure.exit_code == 40 and len(store.spooled()) == 21


def test_the_server_killed_mid_run_loses_nothing(rclone_s3, tmp_path, monkeypatch):
    """Uploads go on while the server is killed; after a restart, a flush uploads every object."""
    rclone_s3.make_bucket("equisa")
    for name, value in rclone_s3.env().items():
        monkeypatch.setenv(name, value)
    spool = tmp_path / "spool"
    store = ArtifactStore("s3://equisa/nightly", spool=spool)
    payloads = {run_key(f"run-{i % 4}", f"object-{i}.json"): f'{{"n": {i}}}'.encode() * (i + 1)
                for i in range(40)}
    results = {}

    def upload() -> None:
        for key, data in payloads.items():
            results[key] = store.put(key, data)
            time.sleep(0.02)

    writer = threading.Thread(target=upload)
    writer.start()
    while len(results) < 10:
        time.sleep(0.005)
    rclone_s3.stop()
    writer.join(timeout=120)
    uploaded = {k for k, o in results.items() if not o.spooled}
    spooled = {k for k, o in results.items() if o.spooled}
    assert len(results) == 40 and len(uploaded) >= 10 and spooled, (len(uploaded), len(spooled))
    assert set(store.spooled()) == spooled
    (down,) = flush_spool(spool)  # still down: nothing moves, nothing is lost
    assert (down.uploaded, down.exit_code) == (0, 40)
    rclone_s3.start()
    (done,) = flush_spool(spool)
    assert (done.uploaded, done.remaining) == (len(spooled), 0)
    assert rclone_s3.keys("equisa") == {f"nightly/{k}" for k in payloads}
    fresh = ArtifactStore("s3://equisa/nightly", spool=spool)
    for key, data in payloads.items():
        assert fresh.get(key) == data
    assert fresh.spooled() == []
