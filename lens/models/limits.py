"""Per-endpoint limits: concurrent requests, requests and tokens per minute, counted as
providers count them.

An endpoint is (provider, base_url, model): every client of the run that talks to it shares one
``EndpointLimiter`` through the ``LimiterRegistry``.

How a hosted API limits, and what lens does about each part:

- It books a request against its tokens-per-minute allowance when the request arrives, at the
  prompt's size plus the whole ``max_tokens`` asked for, not at what the answer turns out to
  use. lens books the same way (``reserve``) and corrects the prompt part once the reply's
  usage is known.
- It says where it stands in ``x-ratelimit-*`` headers on every reply. lens learns limits it was
  not told from them and lowers its own allowance to what the provider says remains (minus what
  lens sent since), so another client on the same key or a difference in counting is absorbed
  instead of turning into 429s.
- A 429 with ``Retry-After`` (or rate-limit headers) says exactly when to come back: lens holds
  new requests to that endpoint until then and keeps its concurrency. Only a 429 without any
  timing cuts the concurrency (multiplicative decrease to a floor, additive recovery), since
  then lens has nothing better to go on.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

import anyio

from lens.models.rate_headers import RateHeaders

# A Retry-After above this is not waited out by the whole endpoint (the call's retry still may,
# up to its own cap): a server that says "come back in a day" must not freeze a run.
MAX_PAUSE_S = 60.0
# Past this (the default cap on one call's waiting, RetryPolicy.max_total_wait_s) the calls fail
# at once with the server's wait in their error; pausing the endpoint would only delay that.
UNPAUSED_RETRY_AFTER_S = 120.0
# Until an endpoint with no stated limits has answered once, one request goes at a time (its
# headers may tell the limits); the others wait for that answer at most this long.
PROBE_WAIT_S = 15.0
# Bookings older than this cannot be unreflected in a reply's headers any more (a call that
# took longer timed out).
_BOOKING_HORIZON_S = 600.0


class _Waiter:
    __slots__ = ("event", "granted")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.granted = False


class AdaptiveSemaphore:
    """A FIFO semaphore whose limit is cut on an untimed rate-limit signal, never below a floor,
    and creeps back up after runs of successes (multiplicative decrease, additive increase)."""

    def __init__(
        self,
        max_limit: int,
        *,
        recover_after_successes: int = 8,
        recover_interval_s: float = 1.0,
        cut_cooldown_s: float = 1.0,
        min_limit: int | None = None,
    ) -> None:
        self.max_limit = max_limit
        # A quarter of the configured concurrency: one unexplained burst of 429s should slow
        # lens down, not serialise it (at 1 s per call, a limit of 1 is one call a second).
        self.min_limit = max(1, min(max_limit, min_limit if min_limit is not None
                                    else max_limit // 4))
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
        new = max(self.min_limit, self.limit // 2)
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
    Every booking is remembered for a while, so that a provider's "remaining" figure, which
    reflects the bookings up to the request it answers, can be compared with lens's own.
    """

    def __init__(self, per_minute: float, burst_s: float = 1.0) -> None:
        self.per_minute = per_minute
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_s)
        self.level = self.capacity
        self._stamp = time.monotonic()
        self._lock = anyio.Lock()
        self._booked: deque[tuple[float, float]] = deque()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self._stamp) * self.rate)
        self._stamp = now

    async def take(self, amount: float) -> float:
        """Book ``amount``, waiting while the bucket is in debt; returns the booking's time."""
        # Holding the lock while waiting keeps callers in order and the arithmetic simple.
        async with self._lock:
            self._refill()
            need = min(amount, self.capacity)
            while self.level < need:
                # Another booking's correction or a provider's figure may deepen the debt
                # while this one waits: re-check rather than assume the wait sufficed.
                await anyio.sleep((need - self.level) / self.rate)
                self._refill()
            self.level -= amount
            now = time.monotonic()
            self._remember(now, amount)
            return now

    def _remember(self, when: float, amount: float) -> None:
        booked = self._booked
        booked.append((when, amount))
        while booked and booked[0][0] < when - _BOOKING_HORIZON_S:
            booked.popleft()

    def adjust(self, delta: float) -> None:
        """Correct a booking afterwards (positive delta: more was used than booked; negative: a
        refund, e.g. of a request the provider refused and so did not count)."""
        self._refill()
        self.level -= delta

    def unbook(self, amount: float, booked_at: float) -> None:
        """Take back a booking the provider never counted."""
        self.adjust(-amount)
        self._remember(booked_at, -amount)

    def booked_since(self, when: float) -> float:
        return sum(amount for stamp, amount in self._booked if stamp > when)

    def sync(self, remaining: float, booked_at: float) -> None:
        """The provider said ``remaining`` when it took the request lens booked at ``booked_at``.
        What lens booked after that is not in the figure yet; what refilled since is. Only ever
        lowers lens's allowance: lens spreads its own over the minute on purpose."""
        self._refill()
        provider_now = (remaining + (time.monotonic() - booked_at) * self.rate
                        - self.booked_since(booked_at))
        if provider_now < self.level:
            self.level = provider_now


@dataclass(frozen=True)
class LimitSettings:
    max_concurrency: int
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    recover_after_successes: int = 8
    recover_interval_s: float = 1.0
    cut_cooldown_s: float = 1.0


@dataclass
class Booking:
    """What one attempt booked, to be settled when its reply (or refusal) is known."""

    tokens: float = 0.0
    requests: float = 0.0
    tokens_at: float = 0.0
    requests_at: float = 0.0


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
        # Limits learnt from the provider's headers rather than told in the config.
        self.learned: dict[str, float] = {}
        self.rate_limited = 0
        self.pauses = 0
        self._paused_until = 0.0
        # Real prompt tokens per estimated one, learnt from replies' usage.
        self.prompt_ratio = 1.0
        # Without stated limits, the first request probes alone: a run's opening wave would
        # otherwise hit the provider's limits before lens has read them.
        self._probe_needed = not (settings.requests_per_minute or settings.tokens_per_minute)
        self._probe_done: anyio.Event | None = None

    def estimate_tokens(self, prompt_estimate: int, max_tokens: int) -> int:
        """What the provider will book for a request: its prompt plus the whole completion
        allowance."""
        return int(prompt_estimate * self.prompt_ratio) + max_tokens

    def slot(self, estimated_tokens: int) -> Slot:
        """``async with limiter.slot(tokens) as booking``: wait for the endpoint's limits, hold
        one of its concurrent requests while the block runs."""
        return Slot(self, estimated_tokens)

    def settle(self, booking: Booking, *, prompt_estimate: int, prompt_tokens: int,
               completion_tokens: int, max_tokens: int) -> None:
        """After a reply: book what the provider counted instead of the estimate, and learn how
        far the prompt estimate was off."""
        if prompt_estimate > 0 and prompt_tokens > 0:
            observed = prompt_tokens / prompt_estimate
            # A slow average: one odd reply should not swing every later booking.
            self.prompt_ratio += 0.1 * (min(max(observed, 0.1), 10.0) - self.prompt_ratio)
        if self.tokens is not None and booking.tokens:
            counted = prompt_tokens + max(max_tokens, completion_tokens)
            self.tokens.adjust(counted - booking.tokens)

    def refund(self, booking: Booking) -> None:
        """The provider refused the request (429) and counted none of it."""
        if self.requests is not None and booking.requests:
            self.requests.unbook(booking.requests, booking.requests_at)
        if self.tokens is not None and booking.tokens:
            self.tokens.unbook(booking.tokens, booking.tokens_at)

    def observe(self, headers: RateHeaders | None, booking: Booking) -> None:
        """Take in what the provider said about its limits in a reply to ``booking``."""
        if headers is None:
            return
        if self.requests is None and headers.limit_requests:
            self.requests = RateBucket(headers.limit_requests)
            self.learned["requests_per_minute"] = headers.limit_requests
            if headers.remaining_requests is not None:
                self.requests.sync(headers.remaining_requests, time.monotonic())
        elif (self.requests is not None and headers.remaining_requests is not None
              and booking.requests):
            self.requests.sync(headers.remaining_requests, booking.requests_at)
        if self.tokens is None and headers.limit_tokens:
            self.tokens = RateBucket(headers.limit_tokens)
            self.learned["tokens_per_minute"] = headers.limit_tokens
            if headers.remaining_tokens is not None:
                self.tokens.sync(headers.remaining_tokens, time.monotonic())
        elif self.tokens is not None and headers.remaining_tokens is not None and booking.tokens:
            self.tokens.sync(headers.remaining_tokens, booking.tokens_at)

    def on_rate_limited(self, retry_after_s: float | None = None,
                        headers: RateHeaders | None = None) -> None:
        """A 429. With ``Retry-After``, hold new requests until then; with rate-limit headers
        (already taken in by ``observe``), the buckets now wait by themselves; with neither,
        cut the concurrency."""
        self.rate_limited += 1
        if retry_after_s is not None and retry_after_s <= UNPAUSED_RETRY_AFTER_S:
            until = time.monotonic() + min(retry_after_s, MAX_PAUSE_S)
            if until > self._paused_until:
                self._paused_until = until
                self.pauses += 1
            return
        informed = headers is not None and (
            (headers.remaining_tokens is not None and self.tokens is not None)
            or (headers.remaining_requests is not None and self.requests is not None))
        if not informed:
            self.semaphore.on_rate_limited()

    def on_success(self) -> None:
        self.semaphore.on_success()


class Slot:
    """One request's hold on an endpoint (:meth:`EndpointLimiter.slot`).

    A class rather than an ``asynccontextmanager``: it is entered on every model call, and a
    free endpoint (no pause, no rate buckets, a concurrency slot open) is taken without a
    generator or an await that suspends."""

    __slots__ = ("_limiter", "_probe", "_tokens")

    def __init__(self, limiter: EndpointLimiter, estimated_tokens: int) -> None:
        self._limiter = limiter
        self._tokens = estimated_tokens
        self._probe = False

    async def __aenter__(self) -> Booking:
        lim = self._limiter
        sem = lim.semaphore
        if (not lim._probe_needed and not lim._paused_until and lim.requests is None
                and lim.tokens is None and sem.in_flight < sem.limit and not sem._waiters):
            # A free endpoint with nothing to book: the slot is taken here, without the
            # coroutine of the general path.
            sem._take()
            return Booking()
        if lim._probe_needed:
            # Without stated limits, the first request probes alone: a run's opening wave
            # would otherwise hit the provider's limits before lens has read them.
            if lim._probe_done is None:
                lim._probe_done = anyio.Event()
                self._probe = True
            else:
                with anyio.move_on_after(PROBE_WAIT_S):
                    await lim._probe_done.wait()
        try:
            return await self._book(lim)
        except BaseException:
            self._end_probe()
            raise

    async def _book(self, lim: EndpointLimiter) -> Booking:
        booking = Booking()
        if lim._paused_until:
            wait = lim._paused_until - time.monotonic()
            if wait > 0:
                await anyio.sleep(wait)
            else:
                lim._paused_until = 0.0  # over: the next request may take the fast path
        if lim.requests is not None:
            booking.requests_at = await lim.requests.take(1)
            booking.requests = 1
        if lim.tokens is not None:
            booking.tokens_at = await lim.tokens.take(self._tokens)
            booking.tokens = self._tokens
        await lim.semaphore.acquire()
        return booking

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            self._limiter.semaphore.release()
        finally:
            self._end_probe()

    def _end_probe(self) -> None:
        if self._probe:
            self._probe = False
            lim = self._limiter
            lim._probe_needed = False
            assert lim._probe_done is not None
            lim._probe_done.set()


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
