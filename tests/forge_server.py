"""A forge's REST API on 127.0.0.1 that a test scripts: each (method, path) answers as told, and every
request is recorded. ``forge_api`` is the pytest fixture (a fresh server per test)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Answer:
    """What the server answers: ``status``, a JSON ``body``, after ``delay`` seconds."""

    status: int
    body: Any = None
    delay: float = 0.0


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class ScriptedForge:
    """The server's script (``answers``: (method, path without query) -> answers in turn; the last
    one repeats) and what it received."""

    url: str
    answers: dict[tuple[str, str], list[Answer]] = field(default_factory=dict)
    received: list[Request] = field(default_factory=list)

    def on(self, method: str, path: str, *answers: Answer) -> None:
        self.answers[(method, path)] = list(answers)

    def requests(self, method: str, path: str) -> list[Request]:
        return [r for r in self.received if r.method == method and r.path.split("?")[0] == path]


def _handler(forge: ScriptedForge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            forge.received.append(Request(self.command, self.path, dict(self.headers),
                                          json.loads(raw) if raw else None))
            queue = forge.answers.get((self.command, self.path.split("?")[0]))
            answer = (queue.pop(0) if len(queue) > 1 else queue[0]) if queue else Answer(
                404, {"message": "Not Found"})
            time.sleep(answer.delay)
            data = json.dumps(answer.body).encode() if answer.body is not None else b""
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                pass

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def forge_api() -> Iterator[ScriptedForge]:
    """A scripted forge API on 127.0.0.1; its ``url`` is the API base."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(forge := ScriptedForge(url="")))
    server.daemon_threads = True
    forge.url = f"http://127.0.0.1:{server.server_port}/api/v3"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield forge
    finally:
        server.shutdown()
        server.server_close()
