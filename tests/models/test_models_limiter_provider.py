"""The endpoint limiter counts the way hosted APIs do: max_tokens booked up front, the provider's
x-ratelimit figures taken in, a timed 429 waited out without giving up concurrency."""

from __future__ import annotations

import time

import anyio
import pytest

from lens.models import limits
from lens.models.limits import (
    AdaptiveSemaphore,
    Booking,
    EndpointLimiter,
    LimitSettings,
    RateBucket,
)
from lens.models.rate_headers import RateHeaders, parse_duration, parse_rate_headers
from tests.support.clock import FakeClock, SleepRecorder


def test_durations_as_providers_write_them() -> None:
    assert parse_duration("1s") == 1.0
    assert parse_duration("6m0s") == 360.0
    assert parse_duration("20ms") == pytest.approx(0.02)
    assert parse_duration("1h2m3.5s") == pytest.approx(3723.5)
    assert parse_duration("0.25") == 0.25
    for bad in ("", "soon", "5x", "-1s", "inf", "1s2"):
        assert parse_duration(bad) is None, bad


def test_rate_headers_parsed_and_junk_ignored() -> None:
    h = parse_rate_headers({"X-RateLimit-Limit-Tokens": "2000000",
                            "x-ratelimit-remaining-tokens": "1999000",
                            "x-ratelimit-reset-tokens": "30ms",
                            "x-ratelimit-limit-requests": "nan",
                            "x-ratelimit-remaining-requests": "-3",
                            "content-type": "application/json"})
    assert h.limit_tokens == 2_000_000 and h.remaining_tokens == 1_999_000
    assert h.reset_tokens_s == pytest.approx(0.03)
    assert h.limit_requests is None and h.remaining_requests is None
    assert parse_rate_headers({"content-type": "x"}).empty


def test_tokens_booked_as_the_provider_books_them() -> None:
    """Adversary: booking prompt + the completion actually used (what lens did) lets a run
    overrun a told TPM by the unused max_tokens of every call in flight."""
    lim = EndpointLimiter(LimitSettings(max_concurrency=4, tokens_per_minute=60_000))
    assert lim.estimate_tokens(prompt_estimate=500, max_tokens=1024) == 1524
    bucket = lim.tokens
    assert bucket is not None
    level = bucket.level
    booking = Booking(tokens=1524, tokens_at=time.monotonic())
    bucket.level -= 1524
    # The reply used 40 completion tokens, but the provider counted the whole 1024.
    lim.settle(booking, prompt_estimate=500, prompt_tokens=500, completion_tokens=40,
               max_tokens=1024)
    assert bucket.level == pytest.approx(level - 1524, abs=2)


def test_prompt_estimate_learns_from_usage() -> None:
    lim = EndpointLimiter(LimitSettings(max_concurrency=4, tokens_per_minute=60_000))
    for _ in range(60):
        lim.settle(Booking(), prompt_estimate=100, prompt_tokens=150, completion_tokens=1,
                   max_tokens=10)
    assert lim.prompt_ratio == pytest.approx(1.5, rel=0.01)
    assert lim.estimate_tokens(100, 10) in (159, 160)


def test_sync_lowers_the_allowance_to_what_the_provider_says_remains() -> None:
    bucket = RateBucket(per_minute=60_000)  # 1000/s, holds 1000
    sent_at = time.monotonic()
    bucket._remember(sent_at, 100)
    # Sent after the request the provider is answering: not in its figure yet.
    bucket._remember(sent_at + 0.001, 300)
    bucket.sync(remaining=200, booked_at=sent_at)
    assert bucket.level == pytest.approx(200 - 300, abs=15)
    # A figure above lens's own never raises it: lens spreads its allowance on purpose.
    bucket.sync(remaining=10_000_000, booked_at=time.monotonic())
    assert bucket.level < 0


def test_a_refund_is_not_counted_as_booked_since() -> None:
    bucket = RateBucket(per_minute=60_000)
    t0 = time.monotonic()
    bucket._remember(t0 + 0.001, 400)
    bucket.unbook(400, t0 + 0.001)
    assert bucket.booked_since(t0) == 0


def test_limits_are_learnt_from_headers_when_not_told() -> None:
    lim = EndpointLimiter(LimitSettings(max_concurrency=8))
    assert lim.tokens is None and lim.requests is None
    lim.observe(RateHeaders(limit_requests=6000, limit_tokens=2_000_000,
                            remaining_requests=5999, remaining_tokens=1_990_000), Booking())
    assert lim.requests is not None and lim.requests.per_minute == 6000
    assert lim.tokens is not None and lim.tokens.per_minute == 2_000_000
    assert lim.learned == {"requests_per_minute": 6000, "tokens_per_minute": 2_000_000}


@pytest.mark.anyio
async def test_timed_429_pauses_the_endpoint_and_keeps_concurrency(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Adversary: halving on every burst of 429s collapses concurrency to 1 at 1-10 s per
    call. A 429 that says when to return is waited out instead."""
    clock = FakeClock()
    sleeps = SleepRecorder(clock)
    monkeypatch.setattr(limits, "time", clock)
    monkeypatch.setattr(limits, "anyio", sleeps)
    lim = EndpointLimiter(LimitSettings(max_concurrency=64))
    for _ in range(20):
        lim.on_rate_limited(retry_after_s=0.3)
        clock.now += 0.01
    assert lim.semaphore.limit == 64 and lim.semaphore.cuts == 0
    async with lim.slot(1):
        pass
    # One wait, until 0.3 s after the last 429 (0.01 s ago): the 20 pauses overlap, they do
    # not add up.
    assert sleeps.slept == [pytest.approx(0.29)]
    async with lim.slot(1):
        pass
    assert len(sleeps.slept) == 1  # the pause is over: the next request goes straight in


def test_429_with_remaining_headers_does_not_cut_either() -> None:
    lim = EndpointLimiter(LimitSettings(max_concurrency=64, tokens_per_minute=60_000))
    headers = RateHeaders(remaining_tokens=0)
    lim.observe(headers, Booking(tokens=100, tokens_at=time.monotonic()))
    lim.on_rate_limited(None, headers)
    assert lim.semaphore.limit == 64
    assert lim.tokens is not None and lim.tokens.level < 1


def test_untimed_429_cuts_but_never_below_a_quarter() -> None:
    sem = AdaptiveSemaphore(64, cut_cooldown_s=0.0)
    for _ in range(20):
        sem.on_rate_limited()
    assert sem.limit == 16 and sem.min_limit == 16
    small = AdaptiveSemaphore(3, cut_cooldown_s=0.0)
    for _ in range(5):
        small.on_rate_limited()
    assert small.limit == 1


@pytest.mark.anyio
async def test_a_debt_added_while_waiting_is_waited_out() -> None:
    bucket = RateBucket(per_minute=600)  # 10/s, holds 10
    await bucket.take(10)
    bucket.adjust(5)  # a settlement: 5 more than booked
    started = time.monotonic()
    await bucket.take(1)
    assert time.monotonic() - started >= 0.5


@pytest.mark.anyio
async def test_without_stated_limits_the_first_request_probes_alone() -> None:
    """Adversary: an opening wave of a whole run's concurrency hits a provider whose limits lens
    has not read yet; one request first lets its headers tell them."""
    lim = EndpointLimiter(LimitSettings(max_concurrency=8))
    log: list[tuple[str, int]] = []
    levels: list[float] = []

    async def call(i: int) -> None:
        async with lim.slot(1) as booking:
            log.append(("start", i))
            await anyio.sleep(0.05)
            if i == 0:
                before = time.monotonic()
                lim.observe(RateHeaders(limit_tokens=600_000, remaining_tokens=500), booking)
                # The bucket refills at 10,000 tokens/s from the moment it is told 500: allow
                # what refilled while observe ran, however slowly the machine runs it.
                assert lim.tokens is not None
                levels.append(lim.tokens.level - (time.monotonic() - before) * 10_000)
            log.append(("end", i))

    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(call, i)
            await anyio.sleep(0.001)
    assert log[:2] == [("start", 0), ("end", 0)]
    assert levels and levels[0] <= 500
    # Told limits need no probe.
    told = EndpointLimiter(LimitSettings(max_concurrency=8, tokens_per_minute=60_000))
    assert not told._probe_needed


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["aiohttp", "sdk"])
async def test_both_transports_hand_the_headers_to_the_limiter(transport: str) -> None:
    from lens.data.config import CacheConfig, ModelConfig
    from lens.models.base import CompletionRequest
    from lens.models.runtime import ModelRuntime
    from tests.support.fake_openai import FakeOpenAI, Reply

    headers = {"x-ratelimit-limit-requests": "600", "x-ratelimit-limit-tokens": "90000",
               "x-ratelimit-remaining-requests": "599", "x-ratelimit-remaining-tokens": "8000",
               "x-ratelimit-reset-tokens": "1s"}
    with FakeOpenAI() as server:
        server.script(Reply.text("a", headers=headers), Reply.text("b", headers=headers))
        rt = ModelRuntime(cache=CacheConfig(enabled=False))
        client = rt.client(ModelConfig(model="openai/m", base_url=server.base_url,
                                       options={"transport": transport}))
        req = CompletionRequest.model_validate({"messages": [{"role": "user", "content": "x"}]})
        await client.complete(req)
        assert client.limiter.learned == {"requests_per_minute": 600.0,
                                          "tokens_per_minute": 90_000.0}
        await rt.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("budget,configured,expected", [(16_000, None, 2048), (500, None, 500),
                                                        (16_000, 6000, 6000)])
async def test_agent_asks_for_a_turn_not_its_whole_budget(budget: int, configured: int | None,
                                                          expected: int) -> None:
    """Adversary: sending the session's remaining budget as max_tokens makes a provider book
    about 16,000 tokens per call against its tokens-per-minute limit."""
    from lens.data.config import BudgetConfig, CacheConfig, ModelConfig
    from lens.data.dataset import AgentQuestion
    from lens.memory.adapter import CapabilityManifest
    from lens.models.runtime import ModelRuntime
    from lens.runner.agent import Agent
    from tests.support.fake_openai import FakeOpenAI, Reply

    with FakeOpenAI() as server:
        server.script(Reply.text("done"))
        rt = ModelRuntime(cache=CacheConfig(enabled=False))
        agent = Agent(model=rt.client(ModelConfig(model="openai/m", base_url=server.base_url)),
                      adapter=None,  # type: ignore[arg-type]
                      budget=BudgetConfig(max_agent_tokens=budget),
                      capabilities=CapabilityManifest(), max_tokens=configured)
        await agent.answer(AgentQuestion(question_id="q", prompt="hi"))
        assert server.requests[0].body["max_tokens"] == expected
        await rt.aclose()
