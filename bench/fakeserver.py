"""A loopback OpenAI-compatible server with a fixed latency, for the throughput benchmarks.

It runs in its own process (``python -m bench.fakeserver``) so that its CPU is never counted as
the framework's. One asyncio event loop serves every connection (HTTP/1.1 keep-alive) with a
protocol object and a timer per request, so hundreds of requests wait out their latency at once
without a thread or a coroutine each.

Two reply patterns:

``agent``  a scripted tool-use pattern keyed on how many tool results the request carries:
           0 -> memory_search, 1 -> memory_retrieve, 2 -> memory_retrieve, 3+ -> final answer.
           That is 4 model calls and 3 tool calls per question.
``judge``  every request gets a short JSON verdict as plain text.

The first line printed on stdout is ``PORT <n>``; the process serves until stdin closes or it is
killed. Counts of served requests are printed on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
import sys
import time

from lens import eventloop

_TOOL_ROLE = re.compile(rb'"role"\s*:\s*"tool"')

_TOOL_SEQUENCE = (
    ("memory_search", '{"query": "what changed in the weekly report"}'),
    ("memory_retrieve", '{"ref_id": "doc-1"}'),
    ("memory_retrieve", '{"ref_id": "doc-2"}'),
)


def _completion(message: dict[str, object], finish: str, prompt_tokens: int) -> bytes:
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "bench-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 24,
                  "total_tokens": prompt_tokens + 24},
    }
    return json.dumps(body).encode()


def agent_reply(request_body: bytes) -> bytes:
    turn = len(_TOOL_ROLE.findall(request_body))
    prompt_tokens = len(request_body) // 4
    if turn < len(_TOOL_SEQUENCE):
        name, args = _TOOL_SEQUENCE[turn]
        message: dict[str, object] = {
            "role": "assistant", "content": None,
            "tool_calls": [{"id": f"call_{turn}", "type": "function",
                            "function": {"name": name, "arguments": args}}],
        }
        return _completion(message, "tool_calls", prompt_tokens)
    message = {"role": "assistant",
               "content": "The count rose from 10 to 40 over the month [doc-1, doc-2]."}
    return _completion(message, "stop", prompt_tokens)


def judge_reply(request_body: bytes) -> bytes:
    # Both verdict shapes lens's judge reads: pairwise ("verdict") and fact check ("present").
    verdict = "A" if len(request_body) % 2 else "B"
    text = json.dumps({"verdict": verdict, "present": True, "reason": "matches the reference"})
    return _completion({"role": "assistant", "content": text}, "stop", len(request_body) // 4)


class Server:
    """Counts and the reply function, shared by every connection."""

    def __init__(self, latency_s: float, pattern: str) -> None:
        self.latency_s = latency_s
        self.reply = agent_reply if pattern == "agent" else judge_reply
        self.served = 0
        self.peak_open = 0
        self.open = 0
        self.in_flight = 0
        self.peak_in_flight = 0


class _Connection(asyncio.Protocol):
    """One keep-alive connection, as a protocol rather than a stream coroutine: the server shares
    the client's two cores, and every microsecond it spends per request is taken from the
    framework being measured. Replies leave in request order (one latency for all)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.open += 1
        self.server.peak_open = max(self.server.peak_open, self.server.open)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.open -= 1
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            length = 0
            for line in bytes(self.buffer[:end]).split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            total = end + 4 + length
            if len(self.buffer) < total:
                return
            body = bytes(self.buffer[end + 4:total])
            del self.buffer[:total]
            server = self.server
            server.in_flight += 1
            server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
            if server.latency_s:
                self.loop.call_later(server.latency_s, self._respond, body)
            else:
                self._respond(body)

    def _respond(self, body: bytes) -> None:
        server = self.server
        server.in_flight -= 1
        if self.transport is None or self.transport.is_closing():
            return
        payload = server.reply(body)
        self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: " + str(len(payload)).encode() + b"\r\n"
                             b"Connection: keep-alive\r\n\r\n" + payload)
        server.served += 1


async def serve(port: int, latency_s: float, pattern: str) -> None:
    server = Server(latency_s, pattern)
    loop = asyncio.get_running_loop()
    srv = await loop.create_server(lambda: _Connection(server), "127.0.0.1", port, backlog=2048)
    bound = srv.sockets[0].getsockname()[1]
    print(f"PORT {bound}", flush=True)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    # Closing stdin (the parent exiting, even by a crash) stops the server too.
    loop.add_reader(sys.stdin.fileno(), lambda: stop.set() if not sys.stdin.read(1) else None)
    async with srv:
        await stop.wait()
    print(f"SERVED {server.served} PEAK_CONNECTIONS {server.peak_open} "
          f"PEAK_IN_FLIGHT {server.peak_in_flight}", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--latency-ms", type=float, default=100.0)
    p.add_argument("--pattern", choices=("agent", "judge"), default="agent")
    p.add_argument("--loop", choices=("auto", "uvloop", "asyncio"), default="auto",
                   help="event loop (auto: uvloop where installed); a slower server takes CPU "
                        "from the client on a small machine")
    args = p.parse_args(argv)
    eventloop.run(serve, args.port, args.latency_ms / 1000.0, args.pattern, loop=args.loop)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
