"""A scriptable OpenAI-compatible HTTP server on 127.0.0.1, for tests of model clients.

It is a real server (stdlib ThreadingHTTPServer, one thread a connection), so clients go through
real sockets, HTTP parsing and timeouts. Each request to ``/v1/chat/completions`` takes the next
scripted ``Reply`` from the queue, or, when the queue is empty, asks the ``responder`` function
(default: a short text answer). A reply can be delayed, hang, reset the connection, return any
status with or without ``Retry-After``, send a truncated or malformed body, an empty completion,
or tool calls with any name and any (even invalid JSON) arguments.

    with FakeOpenAI() as server:
        server.script(Reply.error(429, retry_after=1), Reply.tool_call("memory_search",
                      {"query": "x"}), Reply.text("done"))
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k")

Or as a pytest fixture: ``from tests.support.fake_openai import fake_openai`` in a test module.
"""

from __future__ import annotations

import itertools
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

_ids = itertools.count(1)


@dataclass
class Reply:
    """What the server does for one request."""

    status: int = 200
    body: dict[str, Any] | None = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    hang: bool = False
    reset: bool = False
    truncate_at: int | None = None

    # -- constructors --------------------------------------------------------------------------
    @staticmethod
    def completion(message: dict[str, Any], *, finish_reason: str = "stop",
                   prompt_tokens: int = 10, completion_tokens: int = 5,
                   usage: bool = True, **kw: Any) -> Reply:
        body: dict[str, Any] = {
            "id": f"chatcmpl-{next(_ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "fake-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        }
        if usage:
            body["usage"] = {"prompt_tokens": prompt_tokens,
                             "completion_tokens": completion_tokens,
                             "total_tokens": prompt_tokens + completion_tokens}
        return Reply(body=body, **kw)

    @staticmethod
    def text(text: str, **kw: Any) -> Reply:
        return Reply.completion({"role": "assistant", "content": text}, **kw)

    @staticmethod
    def empty(**kw: Any) -> Reply:
        """A completion with neither content nor tool calls."""
        return Reply.completion({"role": "assistant", "content": None}, **kw)

    @staticmethod
    def tool_calls(calls: list[tuple[str, dict[str, Any] | str]], **kw: Any) -> Reply:
        """Tool calls; string arguments are sent verbatim (so they may be malformed JSON)."""
        out = []
        for name, args in calls:
            out.append({
                "id": f"call_{next(_ids)}", "type": "function",
                "function": {"name": name,
                             "arguments": args if isinstance(args, str) else json.dumps(args)},
            })
        return Reply.completion({"role": "assistant", "content": None, "tool_calls": out},
                                finish_reason="tool_calls", **kw)

    @staticmethod
    def tool_call(name: str, arguments: dict[str, Any] | str, **kw: Any) -> Reply:
        return Reply.tool_calls([(name, arguments)], **kw)

    @staticmethod
    def error(status: int, message: str = "error", *, retry_after: float | str | None = None,
              retry_after_ms: float | None = None, **kw: Any) -> Reply:
        headers: dict[str, str] = {}
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        if retry_after_ms is not None:
            headers["retry-after-ms"] = str(retry_after_ms)
        body = {"error": {"message": message, "type": "fake_error", "code": status}}
        return Reply(status=status, body=body, headers=headers, **kw)

    @staticmethod
    def hang_up(**kw: Any) -> Reply:
        """Accept the request and never answer (until the server stops)."""
        return Reply(hang=True, **kw)

    @staticmethod
    def connection_reset(**kw: Any) -> Reply:
        return Reply(reset=True, **kw)

    @staticmethod
    def truncated(at: int = 40, **kw: Any) -> Reply:
        """A 200 whose body stops after ``at`` bytes (the connection closes early)."""
        reply = Reply.text("this body will be cut off", **kw)
        reply.truncate_at = at
        return reply

    @staticmethod
    def malformed_body(raw: bytes = b'{"choices": [{"message": ', **kw: Any) -> Reply:
        """A complete 200 response whose body is not valid JSON."""
        return Reply(raw=raw, **kw)


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]
    started: float
    ended: float | None = None
    status: int | None = None


Responder = Callable[[RecordedRequest], Reply]


def agent_responder(delay_s: float = 0.0, prompt_tokens: int = 200,
                    completion_tokens: int = 20) -> Responder:
    """Acts like a retrieval agent: searches with the user's question, then answers citing the
    first record the search returned (or says nothing was found). For load and reliability
    tests that need realistic multi-turn traffic without a model."""

    def respond(req: RecordedRequest) -> Reply:
        messages = req.body.get("messages", [])
        tools = {t.get("function", {}).get("name") for t in req.body.get("tools", [])}
        kw = {"delay_s": delay_s, "prompt_tokens": prompt_tokens,
              "completion_tokens": completion_tokens}
        tool_msgs = [m for m in messages if m.get("role") == "tool"]
        if not tool_msgs and "memory_search" in tools:
            question = next((m.get("content", "") for m in messages if m.get("role") == "user"),
                            "")
            return Reply.tool_call("memory_search", {"query": question}, **kw)
        refs: list[str] = []
        for m in tool_msgs:
            try:
                data = json.loads(m.get("content") or "{}")
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict):
                refs += [r["ref_id"] for r in data.get("results", []) if isinstance(r, dict)
                         and "ref_id" in r]
        if refs:
            return Reply.text(f"According to the records [{refs[0]}].", **kw)
        return Reply.text("Nothing in memory answers this.", **kw)

    return respond


class FakeOpenAI:
    """The server. ``requests`` records every request in arrival order."""

    def __init__(self, responder: Responder | None = None, hang_limit_s: float = 60.0) -> None:
        self.responder: Responder = responder or (lambda _req: Reply.text("ok"))
        self.hang_limit_s = hang_limit_s
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -----------------------------------------------------------------------------
    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def _next_reply(self, req: RecordedRequest) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return self.responder(req)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAI:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        server.daemon_threads = True
        server.request_queue_size = 512
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _make_handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        _req: RecordedRequest | None = None

        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list",
                                 "data": [{"id": "fake-model", "object": "model"}]}, {})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}}, {})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_unparsed": raw.decode("utf-8", "replace")}
            req = RecordedRequest(path=self.path,
                                  headers={k.lower(): v for k, v in self.headers.items()},
                                  body=body, started=time.monotonic())
            with fake._lock:
                fake.requests.append(req)
                fake.in_flight += 1
                fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
            self._req = req
            try:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    req.status = 404
                    self._send(404, {"error": {"message": f"no route {self.path}"}}, {})
                    return
                self._serve(fake._next_reply(req), req)
            finally:
                self._answered()

        def _answered(self) -> None:
            """The request stops counting as in flight when the server starts answering: once
            reply bytes leave, a client may release its slot and send its next request before
            this handler thread runs again, so counting up to the handler's end would see one
            request too many."""
            req, self._req = self._req, None
            if req is None:
                return
            req.ended = time.monotonic()
            with fake._lock:
                fake.in_flight -= 1

        def _serve(self, reply: Reply, req: RecordedRequest) -> None:
            if reply.delay_s:
                fake._stopping.wait(reply.delay_s)
            if reply.hang:
                fake._stopping.wait(fake.hang_limit_s)
                self.close_connection = True
                return
            if reply.reset:
                # SO_LINGER with a zero timeout makes close() send a TCP RST.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
                return
            req.status = reply.status
            payload = reply.raw if reply.raw is not None else json.dumps(reply.body or {}).encode()
            if reply.truncate_at is not None:
                self._answered()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload[: reply.truncate_at])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self._send_bytes(reply.status, payload, reply.headers)

        def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
            self._send_bytes(status, json.dumps(body).encode(), headers)

        def _send_bytes(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
            self._answered()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)

    return Handler


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started FakeOpenAI server; stopped (hanging requests released) after the test."""
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()
