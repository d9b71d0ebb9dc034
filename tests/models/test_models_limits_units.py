"""Adaptive concurrency, rate buckets, Retry-After parsing and the factory, without a server."""

from __future__ import annotations

import email.utils
import time

import anyio
import pytest

from lens.core.errors import ConfigError
from lens.data.config import CacheConfig, ModelConfig
from lens.models.base import CompletionRequest, Message
from lens.models.errors import parse_retry_after, status_is_retryable
from lens.models.factory import create_backend, create_client
from lens.models.limits import AdaptiveSemaphore, RateBucket
from lens.models.runtime import ModelRuntime


class _Clock:
    """lens.models.limits's clock, moved by the test: the rules under test are about elapsed
    time, and a loaded machine must not decide them."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_cut_once_per_burst_then_recover_step_by_step(monkeypatch: pytest.MonkeyPatch) -> None:
    from lens.models import limits

    clock = _Clock()
    monkeypatch.setattr(limits, "time", clock)
    sem = AdaptiveSemaphore(8, recover_after_successes=2, recover_interval_s=0.05,
                            cut_cooldown_s=0.2)
    sem.on_rate_limited()
    sem.on_rate_limited()  # same burst
    assert sem.limit == 4 and sem.cuts == 1
    clock.now += 0.21
    sem.on_rate_limited()
    assert sem.limit == 2 and sem.cuts == 2
    sem.on_success()
    sem.on_success()  # too soon after the cut
    assert sem.limit == 2
    clock.now += 0.06
    sem.on_success()
    assert sem.limit == 3
    sem.on_success()  # needs a new run of successes
    assert sem.limit == 3
    for _ in range(40):
        clock.now += 0.051
        sem.on_success()
        sem.on_success()
    assert sem.limit == 8  # never above the configured maximum


@pytest.mark.anyio
async def test_waiters_are_fifo_and_cancellation_frees_nothing_twice() -> None:
    sem = AdaptiveSemaphore(1)
    order: list[int] = []
    await sem.acquire()

    async def worker(i: int) -> None:
        await sem.acquire()
        order.append(i)
        sem.release()

    async with anyio.create_task_group() as tg:
        for i in range(3):
            tg.start_soon(worker, i)
            await anyio.sleep(0.01)
        with anyio.move_on_after(0.05):
            await sem.acquire()  # cancelled while waiting
        sem.release()
    assert order == [0, 1, 2]
    assert sem.in_flight == 0 and not sem._waiters


@pytest.mark.anyio
async def test_rate_bucket_spreads_the_allowance() -> None:
    bucket = RateBucket(per_minute=600)  # 10/s, one second's worth of burst
    started = time.monotonic()
    for _ in range(20):
        await bucket.take(1)
    # The bucket must make the caller wait; how much longer a loaded machine takes is no rule.
    assert time.monotonic() - started >= 0.9


def test_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (parse_retry_after({"Retry-After": future}) or 0) <= 31
    assert parse_retry_after({"Retry-After": "soon"}) is None
    # Absurd waits are ignored (the call backs off as it would without the header).
    for absurd in ("inf", "nan", "-inf", "1e12"):
        assert parse_retry_after({"Retry-After": absurd}) is None, absurd
    assert parse_retry_after({}) is None
    assert [status_is_retryable(s) for s in (400, 401, 404, 408, 409, 422, 429, 500, 503)] == [
        False, False, False, True, True, False, True, True, True]


def test_factory_errors_name_the_problem() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'nope'"):
        create_backend(ModelConfig(model="nope/x"))
    with pytest.raises(ConfigError, match=r"unknown option 'colour'"):
        create_backend(ModelConfig(model="openai/x", base_url="http://127.0.0.1:9/v1",
                                   options={"colour": "red"}))
    with pytest.raises(ConfigError, match="unknown local model"):
        create_backend(ModelConfig(model="llama_cpp/gpt-5"))


@pytest.mark.anyio
async def test_scripted_goes_through_the_stack_uncached(tmp_path: object) -> None:
    rt = ModelRuntime(cache=CacheConfig(enabled=True, path=None))
    client = rt.client(ModelConfig(model="scripted/policy"))
    assert client.cache is None
    req = CompletionRequest(messages=[Message(role="user", content="what?")], role="judge")
    out = await client.complete(req)
    assert out.provider == "scripted" and not out.cached
    assert rt.usage()["by_role"]["judge"]["calls"] == 1
    assert rt.usage()["by_role"]["judge"]["cache_misses"] == 0  # cache never asked
    await rt.aclose()
    private = create_client(ModelConfig(model="scripted/policy"))
    await private.complete(req)
    await private.aclose()
