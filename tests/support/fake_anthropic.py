"""A loopback server speaking the shapes of Anthropic's API, for tests of model clients: the
Messages API (``POST /v1/messages``, with the prompt cache's usage fields) and Message Batches
(``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``, its ``results_url`` as JSONL,
``POST …/cancel``). A real server (stdlib ThreadingHTTPServer) on 127.0.0.1, port 0.

    with FakeAnthropic() as server:
        ...  # point the client at server.base_url; server.requests records every request
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

_ids = itertools.count(1)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def message(text: str, *, input_tokens: int = 100, output_tokens: int = 10,
            cache_read: int = 0, cache_write: int = 0) -> dict[str, Any]:
    """A Messages API reply; Anthropic counts cached tokens apart from ``input_tokens``."""
    return {"id": f"msg_{next(_ids)}", "type": "message", "role": "assistant",
            "model": "claude-fake", "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      "cache_read_input_tokens": cache_read,
                      "cache_creation_input_tokens": cache_write}}


Answer = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class FakeAnthropic:
    # The reply to a message request (its body): a direct one or a batch's.
    answer: Answer = field(default=lambda _body: message("ok"))
    # How many status polls a batch stays in_progress before it ends.
    polls_before_done: int = 1
    requests: list[Recorded] = field(default_factory=list)
    # Hooks for hostile servers: the id a new batch gets, the results_url it reports, and the
    # results file's bytes (from the batch's requests) in place of the answers'.
    batch_id: Callable[[], str] | None = None
    results_url: Callable[[str], str] | None = None
    raw_results: Callable[[list[dict[str, Any]]], bytes] | None = None
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    def created(self) -> int:
        return sum(1 for r in self.requests
                   if r.method == "POST" and r.path.rstrip("/").endswith("/messages/batches"))

    def start(self) -> FakeAnthropic:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the batch API ---------------------------------------------------------------------------
    def _batch_view(self, batch: dict[str, Any]) -> dict[str, Any]:
        done = batch["polls"] >= self.polls_before_done
        n = len(batch["requests"])
        return {"id": batch["id"], "type": "message_batch",
                "processing_status": "ended" if done else "in_progress",
                "request_counts": {"processing": 0 if done else n, "succeeded": n if done else 0,
                                   "errored": 0, "canceled": 0, "expired": 0},
                "results_url": (self.results_url(batch["id"]) if self.results_url else
                                f"{self.base_url}/v1/messages/batches/{batch['id']}/results")
                if done else None}

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        batch_id = self.batch_id() if self.batch_id else f"msgbatch_{next(_ids)}"
        batch: dict[str, Any] = {"id": batch_id,
                                 "requests": body.get("requests") or [], "polls": 0}
        with self._lock:
            self.batches[batch["id"]] = batch
        return self._batch_view(batch)

    def poll(self, batch_id: str) -> dict[str, Any] | None:
        with self._lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return None
            batch["polls"] += 1
        return self._batch_view(batch)

    def results(self, batch_id: str) -> bytes | None:
        batch = self.batches.get(batch_id)
        if batch is None:
            return None
        if self.raw_results is not None:
            return self.raw_results(batch["requests"])
        lines = []
        for r in batch["requests"]:
            reply = self.answer(r["params"])
            # An answer of type "error" is that request's failure in the batch.
            result = ({"type": "errored", "error": reply} if reply.get("type") == "error"
                      else {"type": "succeeded", "message": reply})
            lines.append({"custom_id": r["custom_id"], "result": result})
        return "".join(json.dumps(x) + "\n" for x in lines).encode()


def _handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _record(self, body: dict[str, Any]) -> None:
            with fake._lock:
                fake.requests.append(Recorded(self.command, self.path,
                                              {k.lower(): v for k, v in self.headers.items()},
                                              body))

        def _send(self, status: int, payload: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _json(self, status: int, body: dict[str, Any]) -> None:
            self._send(status, json.dumps(body).encode())

        def _missing(self) -> None:
            self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                         "message": f"no route {self.path}"}})

        def do_GET(self) -> None:
            self._record({})
            path = self.path.split("?")[0].rstrip("/")
            # A batch's id is whatever follows the route (a hostile id may hold slashes).
            route = "/v1/messages/batches/"
            if path.startswith(route) and path.endswith("/results"):
                data = fake.results(path[len(route):-len("/results")])
                return self._send(200, data, "application/binary") if data else self._missing()
            if path.startswith(route):
                view = fake.poll(path[len(route):])
                return self._json(200, view) if view else self._missing()
            self._missing()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}") if length else {}
            self._record(body)
            path = self.path.split("?")[0].rstrip("/")
            if path.endswith("/messages/batches"):
                return self._json(200, fake.create(body))
            if path.endswith("/cancel"):
                view = fake.poll(path.split("/")[-2])
                return self._json(200, view) if view else self._missing()
            if path.endswith("/messages"):
                return self._json(200, fake.answer(body))
            self._missing()

    return Handler


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server
