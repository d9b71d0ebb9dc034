"""Per-endpoint limits: concurrent requests (cut adaptively on 429), requests and tokens per minute.

An endpoint is (provider, base_url, model): every client of the run that talks to it shares one
``EndpointLimiter`` through the ``LimiterRegistry``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio


class _Waiter:
    __slots__ = ("event", "granted")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.granted = False


class AdaptiveSemaphore:
    """A FIFO semaphore whose limit halves on a rate-limit signal and creeps back up by one after
    a run of successes (multiplicative decrease, additive increase)."""

    def __init__(
        self,
        max_limit: int,
        *,
        recover_after_successes: int = 8,
        recover_interval_s: float = 5.0,
        cut_cooldown_s: float = 1.0,
    ) -> None:
        self.max_limit = max_limit
        self.limit = max_limit
        self.in_flight = 0
        self.peak_in_flight = 0
        self.cuts = 0
        self.recover_after_successes = recover_after_successes
        self.recover_interval_s = recover_interval_s
        self.cut_cooldown_s = cut_cooldown_s
        self._waiters: deque[_Waiter] = deque()
        self._successes = 0
        self._last_change = -float("inf")
        self._last_cut = -float("inf")

    async def acquire(self) -> None:
        if self.in_flight < self.limit and not self._waiters:
            self._take()
            return
        waiter = _Waiter()
        self._waiters.append(waiter)
        try:
            await waiter.event.wait()
        except BaseException:
            if waiter.granted:
                self.release()
            else:
                self._waiters.remove(waiter)
            raise

    def _take(self) -> None:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            waiter = self._waiters.popleft()
            waiter.granted = True
            self._take()
            waiter.event.set()

    def on_rate_limited(self) -> None:
        now = time.monotonic()
        self._successes = 0
        # One burst of 429s (all requests in flight failing together) is one signal, not many.
        if now - self._last_cut < self.cut_cooldown_s:
            return
        self._last_cut = self._last_change = now
        new = max(1, self.limit // 2)
        if new < self.limit:
            self.cuts += 1
        self.limit = new

    def on_success(self) -> None:
        if self.limit >= self.max_limit:
            return
        self._successes += 1
        now = time.monotonic()
        if (self._successes >= self.recover_after_successes
                and now - self._last_change >= self.recover_interval_s):
            self.limit += 1
            self._successes = 0
            self._last_change = now
            self._wake()


class RateBucket:
    """A token bucket refilled continuously at ``per_minute``; a debt is paid by waiting.

    It holds at most ``burst_s`` seconds' worth, so a per-minute limit is spread over the minute
    instead of spent in the first second (providers enforce theirs over shorter windows too).
    """

    def __init__(self, per_minute: float, burst_s: float = 1.0) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_s)
        self.level = self.capacity
        self._stamp = time.monotonic()
        self._lock = anyio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self._stamp) * self.rate)
        self._stamp = now

    async def take(self, amount: float) -> None:
        # Holding the lock while waiting keeps callers in order and the arithmetic simple.
        async with self._lock:
            self._refill()
            need = min(amount, self.capacity)
            if self.level < need:
                await anyio.sleep((need - self.level) / self.rate)
                self._refill()
            self.level -= amount

    def adjust(self, delta: float) -> None:
        """Correct an estimate afterwards (positive delta: more was used than reserved)."""
        self._refill()
        self.level -= delta


@dataclass(frozen=True)
class LimitSettings:
    max_concurrency: int
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    recover_after_successes: int = 8
    recover_interval_s: float = 5.0
    cut_cooldown_s: float = 1.0


class EndpointLimiter:
    def __init__(self, settings: LimitSettings) -> None:
        self.settings = settings
        self.semaphore = AdaptiveSemaphore(
            settings.max_concurrency,
            recover_after_successes=settings.recover_after_successes,
            recover_interval_s=settings.recover_interval_s,
            cut_cooldown_s=settings.cut_cooldown_s,
        )
        self.requests = (RateBucket(settings.requests_per_minute)
                         if settings.requests_per_minute else None)
        self.tokens = (RateBucket(settings.tokens_per_minute)
                       if settings.tokens_per_minute else None)
        self.rate_limited = 0

    @asynccontextmanager
    async def slot(self, estimated_tokens: int) -> AsyncIterator[None]:
        if self.requests is not None:
            await self.requests.take(1)
        if self.tokens is not None:
            await self.tokens.take(estimated_tokens)
        await self.semaphore.acquire()
        try:
            yield
        finally:
            self.semaphore.release()

    def settle_tokens(self, estimated: int, actual: int) -> None:
        if self.tokens is not None:
            self.tokens.adjust(actual - estimated)

    def on_rate_limited(self) -> None:
        self.rate_limited += 1
        self.semaphore.on_rate_limited()

    def on_success(self) -> None:
        self.semaphore.on_success()


class LimiterRegistry:
    """One limiter per endpoint; the first configuration seen for an endpoint sets its limits."""

    def __init__(self) -> None:
        self._limiters: dict[tuple[str, str, str], EndpointLimiter] = {}

    def get(self, provider: str, base_url: str | None, model: str,
            settings: LimitSettings) -> EndpointLimiter:
        key = (provider, base_url or "", model)
        limiter = self._limiters.get(key)
        if limiter is None:
            limiter = self._limiters[key] = EndpointLimiter(settings)
        return limiter

    def items(self) -> list[tuple[tuple[str, str, str], EndpointLimiter]]:
        return list(self._limiters.items())
