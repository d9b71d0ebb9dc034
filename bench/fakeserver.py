"""A loopback OpenAI-compatible server for the throughput benchmarks: a fixed latency, or a
hosted API's behaviour (heavy-tailed latency, requests- and tokens-per-minute limits).

It runs in its own process (``python -m bench.fakeserver``) so that its CPU is never counted as
the framework's. One asyncio event loop serves every connection (HTTP/1.1 keep-alive) with a
protocol object and a timer per request, so hundreds of requests wait out their latency at once
without a thread or a coroutine each.

Two reply patterns:

``agent``  a scripted tool-use pattern keyed on how many tool results the request carries:
           0 -> memory_search, 1 -> memory_retrieve, 2 -> memory_retrieve, 3+ -> final answer.
           That is 4 model calls and 3 tool calls per question.
``judge``  every request gets a short JSON verdict as plain text.

Realistic provider mode (``--latency-p99-ms``, ``--rpm``, ``--tpm``):

- latency is log-normal with median ``--latency-ms`` and 99th percentile ``--latency-p99-ms``
  (a hosted model: median about 1.5 s, p99 about 10 s), drawn from a seeded generator;
- each request is booked on arrival, as hosted APIs do, against a requests bucket and a tokens
  bucket refilled continuously at the per-minute rates and holding ``--burst-s`` seconds'
  worth; its token cost is the prompt (a quarter of the body's bytes, as its usage reports)
  plus its ``max_tokens`` (``--default-max-tokens`` when the request sets none);
- a request that does not fit is answered at once with 429, ``Retry-After`` (whole seconds,
  rounded up), ``retry-after-ms``, and is not booked; every reply carries the
  ``x-ratelimit-limit/remaining/reset-requests|tokens`` headers as they stood on arrival.

The first line printed on stdout is ``PORT <n>``; the process serves until stdin closes or it is
killed. Counts of served requests (and in the realistic mode, 429s and booked tokens) are printed
on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import re
import signal
import sys
import time
from dataclasses import dataclass

from lens.core import eventloop

_TOOL_ROLE = re.compile(rb'"role"\s*:\s*"tool"')
_MAX_TOKENS = re.compile(rb'"(?:max_tokens|max_completion_tokens)"\s*:\s*(\d+)')
# The 99th percentile of a standard normal: p99 = median * exp(Z99 * sigma).
Z99 = 2.3263478740408408

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


@dataclass(frozen=True)
class Latency:
    """Fixed (``p99_s`` None) or log-normal with the given median and 99th percentile."""

    median_s: float
    p99_s: float | None = None

    @property
    def sigma(self) -> float:
        if self.p99_s is None or self.median_s <= 0 or self.p99_s <= self.median_s:
            return 0.0
        return math.log(self.p99_s / self.median_s) / Z99

    def draw(self, rng: random.Random) -> float:
        sigma = self.sigma
        if not sigma:
            return self.median_s
        return self.median_s * math.exp(rng.gauss(0.0, sigma))


class Bucket:
    """A hosted API's per-minute limit: refilled continuously, holding ``burst_s`` seconds."""

    def __init__(self, per_minute: float, burst_s: float) -> None:
        self.per_minute = per_minute
        self.rate = per_minute / 60.0
        self.capacity = self.rate * burst_s
        self.level = self.capacity
        self.stamp = time.monotonic()

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` fits (0 if it does now)."""
        return max(0.0, (min(amount, self.capacity) - self.level) / self.rate)

    def reset_s(self) -> float:
        return (self.capacity - self.level) / self.rate


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.0f}ms" if seconds < 1 else f"{seconds:.3f}s"


class Limits:
    """Requests- and tokens-per-minute limits enforced as hosted APIs do (see the module)."""

    def __init__(self, rpm: float | None, tpm: float | None, burst_s: float,
                 default_max_tokens: int) -> None:
        self.requests = Bucket(rpm, burst_s) if rpm else None
        self.tokens = Bucket(tpm, burst_s) if tpm else None
        self.default_max_tokens = default_max_tokens
        self.rate_limited = 0
        self.admitted = 0
        self.booked_tokens = 0
        self.first_admit: float | None = None
        self.last_admit: float | None = None

    def admit(self, body: bytes) -> tuple[bool, list[tuple[str, str]]]:
        """Book the request, or refuse it; the headers to send either way."""
        now = time.monotonic()
        m = _MAX_TOKENS.search(body)
        cost = len(body) // 4 + (int(m.group(1)) if m else self.default_max_tokens)
        wait = 0.0
        for bucket, amount in ((self.requests, 1), (self.tokens, cost)):
            if bucket is not None:
                bucket.refill(now)
                wait = max(wait, bucket.wait_for(amount))
        ok = wait == 0.0
        if ok:
            for bucket, amount in ((self.requests, 1), (self.tokens, cost)):
                if bucket is not None:
                    bucket.level -= amount
            self.admitted += 1
            self.booked_tokens += cost
            self.first_admit = self.first_admit or now
            self.last_admit = now
        else:
            self.rate_limited += 1
        headers = []
        for name, bucket in (("requests", self.requests), ("tokens", self.tokens)):
            if bucket is not None:
                headers += [(f"x-ratelimit-limit-{name}", f"{bucket.per_minute:.0f}"),
                            (f"x-ratelimit-remaining-{name}", f"{max(0, int(bucket.level))}"),
                            (f"x-ratelimit-reset-{name}", _duration(bucket.reset_s()))]
        if not ok:
            headers += [("retry-after", str(math.ceil(wait))),
                        ("retry-after-ms", f"{wait * 1000:.0f}")]
        return ok, headers


class Server:
    """Counts, limits and the reply function, shared by every connection."""

    def __init__(self, latency: Latency | float, pattern: str, limits: Limits | None = None,
                 seed: int = 0) -> None:
        self.latency = latency if isinstance(latency, Latency) else Latency(latency)
        self.reply = agent_reply if pattern == "agent" else judge_reply
        self.limits = limits
        # Seeded: the same run draws the same latencies.
        self.rng = random.Random(seed)
        self.served = 0
        self.peak_open = 0
        self.open = 0
        self.in_flight = 0
        self.peak_in_flight = 0

    def final_counts(self) -> str:
        words = (f"SERVED {self.served} PEAK_CONNECTIONS {self.peak_open} "
                 f"PEAK_IN_FLIGHT {self.peak_in_flight}")
        lim = self.limits
        if lim is not None:
            span_ms = (0 if lim.first_admit is None or lim.last_admit is None
                       else int((lim.last_admit - lim.first_admit) * 1000))
            words += (f" RATE_LIMITED {lim.rate_limited} ADMITTED {lim.admitted} "
                      f"BOOKED_TOKENS {lim.booked_tokens} ADMIT_SPAN_MS {span_ms}")
        return words


class _Connection(asyncio.Protocol):
    """One keep-alive connection, as a protocol rather than a stream coroutine: the server shares
    the client's two cores, and every microsecond it spends per request is taken from the
    framework being measured. Clients send one request at a time per connection (no
    pipelining), so a reply drawn with its own latency cannot overtake another."""

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
            headers: list[tuple[str, str]] = []
            if server.limits is not None:
                ok, headers = server.limits.admit(body)
                if not ok:
                    # Refused at once, as hosted APIs do: no model time spent.
                    self._send(429, _RATE_LIMITED, headers)
                    continue
            server.in_flight += 1
            server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
            latency = server.latency.draw(server.rng)
            if latency:
                self.loop.call_later(latency, self._respond, body, headers)
            else:
                self._respond(body, headers)

    def _respond(self, body: bytes, headers: list[tuple[str, str]]) -> None:
        server = self.server
        server.in_flight -= 1
        if self.transport is None or self.transport.is_closing():
            return
        self._send(200, server.reply(body), headers)
        server.served += 1

    def _send(self, status: int, payload: bytes, headers: list[tuple[str, str]]) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers).encode()
        reason = b"OK" if status == 200 else b"Too Many Requests"
        self.transport.write(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n%sConnection: keep-alive\r\n\r\n"
                             % (status, reason, len(payload), extra) + payload)


_RATE_LIMITED = json.dumps({"error": {"message": "Rate limit reached; please try again later.",
                                      "type": "requests", "code": "rate_limit_exceeded"}}
                           ).encode()


async def serve(port: int, latency: Latency | float, pattern: str,
                limits: Limits | None = None, seed: int = 0) -> None:
    server = Server(latency, pattern, limits, seed)
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
    print(server.final_counts(), flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--latency-ms", type=float, default=100.0,
                   help="the latency of every call, or the median with --latency-p99-ms")
    p.add_argument("--latency-p99-ms", type=float, default=None,
                   help="log-normal latency with this 99th percentile (e.g. 10000 with "
                        "--latency-ms 1500, as hosted models answer)")
    p.add_argument("--rpm", type=float, default=None, help="requests per minute allowed")
    p.add_argument("--tpm", type=float, default=None, help="tokens per minute allowed")
    p.add_argument("--burst-s", type=float, default=10.0,
                   help="seconds' worth of the limits a client may spend at once")
    p.add_argument("--default-max-tokens", type=int, default=4096,
                   help="tokens booked for the completion of a request without max_tokens")
    p.add_argument("--seed", type=int, default=0, help="seed of the latency draws")
    p.add_argument("--pattern", choices=("agent", "judge"), default="agent")
    p.add_argument("--loop", choices=("auto", "uvloop", "asyncio"), default="auto",
                   help="event loop (auto: uvloop where installed); a slower server takes CPU "
                        "from the client on a small machine")
    args = p.parse_args(argv)
    latency = Latency(args.latency_ms / 1000.0,
                      None if args.latency_p99_ms is None else args.latency_p99_ms / 1000.0)
    limits = (Limits(args.rpm, args.tpm, args.burst_s, args.default_max_tokens)
              if args.rpm or args.tpm else None)
    eventloop.run(serve, args.port, latency, args.pattern, limits, args.seed, loop=args.loop)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
