"""Retry with tenacity: exponential backoff with full jitter, ``Retry-After`` honoured, and caps
on the number of attempts and on the total time spent waiting between them."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import anyio
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.stop import stop_base

from lens.core.logs import get_logger
from lens.models.base import ModelError
from lens.models.errors import ProviderError

T = TypeVar("T")
log = get_logger("lens.models")


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5
    base_wait_s: float = 0.5
    max_wait_s: float = 30.0
    max_total_wait_s: float = 120.0


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, ModelError) and exc.retryable


class _Wait:
    def __init__(self, policy: RetryPolicy, rng: random.Random) -> None:
        self.policy = policy
        self.rng = rng

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = getattr(exc, "retry_after_s", None) if isinstance(exc, ProviderError) else None
        if after is not None:
            # The server said when; a little jitter keeps many clients from returning together.
            return float(after) + self.rng.uniform(0, min(1.0, self.policy.base_wait_s))
        ceiling = min(self.policy.max_wait_s,
                      self.policy.base_wait_s * 2 ** (state.attempt_number - 1))
        return self.rng.uniform(0, ceiling)


class _TotalWaitStop(stop_base):
    """Stop when the next wait would take the total waited past the cap."""

    def __init__(self, cap_s: float) -> None:
        self.cap_s = cap_s

    def __call__(self, state: RetryCallState) -> bool:
        return state.idle_for + (state.upcoming_sleep or 0.0) > self.cap_s


async def retry_after_failure(
    exc: ModelError, fn: Callable[[], Awaitable[T]], policy: RetryPolicy, *, label: str,
    rng: random.Random | None = None,
) -> tuple[T, int]:
    """Go on after a first attempt of ``fn`` failed with ``exc``; returns (result, retries
    made) or raises the failure that ends the call.

    Most calls succeed at once, so their first attempt is the caller's own ``await fn()``:
    building tenacity's retry state for every call was a tenth of lens's own CPU per model
    call. Only a retryable failure hands over to tenacity, whose first "attempt" re-raises
    that failure without a new request, so attempt numbers, waits and caps are exactly
    tenacity's."""
    if not _retryable(exc) or policy.max_retries == 0:
        raise exc
    after = getattr(exc, "retry_after_s", None)
    if after is not None and after > policy.max_total_wait_s:
        raise _wait_too_long(exc, after, policy) from exc
    first: ModelError | None = exc

    async def attempt_fn() -> T:
        nonlocal first
        if first is not None:
            failure, first = first, None
            raise failure
        return await fn()

    retrying = AsyncRetrying(
        retry=retry_if_exception(_retryable),
        stop=stop_after_attempt(policy.max_retries + 1) | _TotalWaitStop(policy.max_total_wait_s),
        wait=_Wait(policy, rng or random.Random()),
        sleep=anyio.sleep,
        reraise=True,
        before_sleep=lambda s: log.info(
            "model call retry", model=label, attempt=s.attempt_number,
            wait_s=round(s.upcoming_sleep, 3),
            error=str(s.outcome.exception()) if s.outcome else None,
        ),
    )
    attempts = 0
    try:
        async for attempt in retrying:
            with attempt:
                attempts = attempt.retry_state.attempt_number
                result = await attempt_fn()
    except ModelError as failure:
        if failure.retryable and attempts > 1:
            raise _gave_up(failure, attempts) from failure
        raise
    return result, attempts - 1


def _wait_too_long(exc: ModelError, after: float, policy: RetryPolicy) -> ModelError:
    # Waiting out a server's "come back in a day" would stall the run with nothing said; the
    # call fails at once and says why.
    log.warning("model call not retried: Retry-After over the cap", wait_s=round(after),
                cap_s=policy.max_total_wait_s)
    return ProviderError(
        f"{exc} (the server asked to wait {after:.0f} s before retrying (Retry-After), over "
        f"the {policy.max_total_wait_s:.0f} s lens waits for one call; not retried: run again "
        "later, with --resume RUN_DIR --retry-errors)",
        retryable=False, status=exc.status, retry_after_s=after,
    )


def _gave_up(exc: ModelError, attempts: int) -> ModelError:
    return ProviderError(
        f"{exc} (gave up after {attempts} attempts)",
        retryable=False, status=exc.status,
        retry_after_s=getattr(exc, "retry_after_s", None),
    )
