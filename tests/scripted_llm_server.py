"""A real OpenAI-compatible HTTP server on 127.0.0.1 that a test scripts, and its fixture.

The ``openai`` client talks to it over real sockets, so retries, timeouts and connection handling
are the client's own. A test scripts the answers either as a queue (``enqueue``: one response per
request, in order) or with a callable (``respond_with``: called with each request, returns the
response); a queued response wins over the callable. A response is a ``Reply`` (an answer, with
optional usage and logprobs, optionally after a delay) or a ``Fault``: an HTTP error status (429
with Retry-After, 500, ...), a stall longer than the client's timeout, or a 200 whose body is not
JSON. An unscripted request gets HTTP 400 with "unscripted request", which the client does not
retry, so a test that under-scripts fails fast and clearly.

Every request is recorded (path, model, messages, the whole body, arrival time) in ``requests``.

Served paths: ``POST /v1/chat/completions`` and ``POST /chat/completions``; ``POST /v1/embeddings``
once a test sets ``embed_with(function)`` (text -> vector; recorded in ``requests`` too, 404
otherwise). Use ``base_url`` (ends with ``/v1``) as the client's ``base_url``.

Fixture: ``scripted_llm`` (function scope; defined as ``scripted_llm_fixture`` so that importing it
does not clash with test parameters of that name) yields a started ``ScriptedLLM`` and stops it
after the test. Register it in a conftest with
``from tests.scripted_llm_server import scripted_llm_fixture  # noqa: F401``.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

__all__ = ["Reply", "Fault", "RecordedRequest", "ScriptedLLM", "Response", "scripted_llm_fixture"]

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
EMBEDDING_PATHS = ("/v1/embeddings", "/embeddings")


@dataclass(frozen=True)
class Reply:
    """A successful chat completion.

    ``logprobs``: per answer token, its top alternatives as (token, logprob), the chosen token
    first; sent as the OpenAI ``choices[0].logprobs.content`` structure. ``usage`` is omitted from
    the body when ``prompt_tokens`` is None. ``delay_s`` waits before answering.
    """

    text: str
    prompt_tokens: int | None = 100
    completion_tokens: int | None = 20
    logprobs: Sequence[Sequence[tuple[str, float]]] | None = None
    finish_reason: str = "stop"
    delay_s: float = 0.0


@dataclass(frozen=True)
class Fault:
    """A failure: ``status`` with a JSON error body, optionally after ``delay_s``.

    ``malformed`` sends HTTP 200 with a body that is not JSON. ``retry_after`` sets the
    Retry-After header (seconds).
    """

    status: int = 500
    message: str = "scripted fault"
    retry_after: float | None = None
    delay_s: float = 0.0
    malformed: bool = False

    @classmethod
    def rate_limit(cls, retry_after: float | None = 1.0) -> Fault:
        """HTTP 429, with Retry-After when given."""
        return cls(status=429, message="rate limited", retry_after=retry_after)

    @classmethod
    def server_error(cls, status: int = 500) -> Fault:
        """An HTTP 5xx."""
        return cls(status=status, message="internal error")

    @classmethod
    def stall(cls, seconds: float) -> Fault:
        """No answer for ``seconds`` (longer than the client's timeout), then a 500."""
        return cls(status=500, message="stalled", delay_s=seconds)

    @classmethod
    def malformed_json(cls) -> Fault:
        """HTTP 200 whose body is truncated JSON."""
        return cls(status=200, malformed=True)


Response = Reply | Fault
Responder = Callable[["RecordedRequest"], Response]


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str] = field(compare=False)  # names lower-cased
    received_at: float = field(compare=False)

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def last_user_message(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return str(users[-1].get("content", "")) if users else ""


def _completion(reply: Reply, model: str, number: int) -> dict[str, Any]:
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": reply.text},
        "finish_reason": reply.finish_reason,
        "logprobs": None,
    }
    if reply.logprobs is not None:
        content = []
        for alternatives in reply.logprobs:
            token, logprob = alternatives[0]
            content.append({
                "token": token,
                "logprob": logprob,
                "bytes": list(token.encode()),
                "top_logprobs": [
                    {"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in alternatives
                ],
            })
        choice["logprobs"] = {"content": content, "refusal": None}
    body: dict[str, Any] = {
        "id": f"chatcmpl-scripted-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
    }
    if reply.prompt_tokens is not None:
        completion = reply.completion_tokens or 0
        body["usage"] = {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": reply.prompt_tokens + completion,
        }
    return body


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a stalled handler must not hold up the test's teardown
    request_queue_size = 128  # concurrent clients must not wait in a full listen backlog


class ScriptedLLM:
    """The scripted server; use as a context manager or ``start()`` / ``stop()``."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Response] = deque()
        self._responder: Responder | None = None
        self._embedder: Callable[[str], list[float]] | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- scripting -------------------------------------------------------------------------------

    def enqueue(self, *responses: Response) -> None:
        """Answer the next requests with ``responses``, one each, in order."""
        with self._lock:
            self._queue.extend(responses)

    def embed_with(self, embedder: Callable[[str], list[float]] | None) -> None:
        """Serve ``/v1/embeddings``: each input text's vector is ``embedder(text)``."""
        with self._lock:
            self._embedder = embedder

    def respond_with(self, responder: Responder | None) -> None:
        """Answer every request not covered by the queue with ``responder(request)``."""
        with self._lock:
            self._responder = responder

    @property
    def base_url(self) -> str:
        """The client's ``base_url``: ``http://127.0.0.1:PORT/v1``."""
        if self._server is None:
            raise RuntimeError("the scripted server is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def models_seen(self) -> list[str]:
        """The model of each request, in arrival order."""
        with self._lock:
            return [r.model for r in self.requests]

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> ScriptedLLM:
        handler = type("_Handler", (_Handler,), {"script": self})
        server = _Server(("127.0.0.1", 0), handler)
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="scripted-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- serving ---------------------------------------------------------------------------------

    def _next_response(self, request: RecordedRequest) -> Response | None:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.popleft()
            responder = self._responder
        return responder(request) if responder is not None else None

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    script: ScriptedLLM

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.split("?")[0] in EMBEDDING_PATHS and self.script._embedder is not None:
            self._embeddings(raw)
            return
        if self.path.split("?")[0] not in CHAT_PATHS:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "request body is not JSON", "type": "bad_request"}})
            return
        request = RecordedRequest(
            path=self.path,
            body=body,
            headers={k.lower(): v for k, v in self.headers.items()},
            received_at=time.monotonic(),
        )
        response = self.script._next_response(request)
        if response is None:
            error = {"message": "unscripted request", "type": "invalid_request_error"}
            self._send_json(400, {"error": error})
            return
        if response.delay_s:
            self.script._wait(response.delay_s)
        try:
            if isinstance(response, Reply):
                self._send_json(200, _completion(response, request.model, len(self.script.requests)))
            elif response.malformed:
                self._send_raw(200, b'{"id": "chatcmpl-broken", "choices": [{"message": ', {})
            else:
                headers = {}
                if response.retry_after is not None:
                    headers["Retry-After"] = f"{response.retry_after:g}"
                error = {"error": {"message": response.message, "type": "scripted", "code": None}}
                self._send_json(response.status, error, headers)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
            self.close_connection = True

    def _embeddings(self, raw: bytes) -> None:
        body = json.loads(raw or b"{}")
        inputs = body.get("input", [])
        inputs = [inputs] if isinstance(inputs, str) else list(inputs)
        with self.script._lock:
            self.script.requests.append(RecordedRequest(path=self.path, body=body, headers={},
                                                        received_at=time.monotonic()))
            embedder = self.script._embedder
        assert embedder is not None
        data = [{"object": "embedding", "index": i, "embedding": embedder(text)}
                for i, text in enumerate(inputs)]
        self._send_json(200, {"object": "list", "data": data, "model": body.get("model", ""),
                              "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}})

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), headers or {})

    def _send_raw(self, status: int, data: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


@pytest.fixture(name="scripted_llm")
def scripted_llm_fixture() -> Iterator[ScriptedLLM]:
    """A started scripted OpenAI-compatible server, stopped after the test."""
    with ScriptedLLM() as server:
        yield server
