"""The one stack every backend runs in: cost cap → cache → retry → endpoint limits → backend,
with every finished call metered by role."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import Any

from lens.core.tokens import estimate_chars_tokens
from lens.models import rate_headers
from lens.models.base import Completion, CompletionRequest, ModelClient, ModelError
from lens.models.cache import ModelCache, cache_key
from lens.models.errors import ProviderError
from lens.models.limits import EndpointLimiter
from lens.models.pricing import Pricing
from lens.models.retry import RetryPolicy, retry_after_failure
from lens.models.usage import UsageMeter

# Booked against a tokens-per-minute limit for the completion of a request that sets no
# max_tokens: what the provider books then is its own default, which lens learns from the
# x-ratelimit headers.
UNSET_MAX_TOKENS_BOOKING = 256


def estimate_prompt_tokens(request: CompletionRequest) -> int:
    chars = sum(len(m.content) + sum(len(c.arguments) for c in m.tool_calls)
                for m in request.messages)
    chars += sum(len(t.description) + len(str(t.parameters)) for t in request.tools)
    return estimate_chars_tokens(chars)


class StackClient:
    """Wraps a backend; itself a ModelClient."""

    def __init__(
        self,
        backend: ModelClient,
        *,
        meter: UsageMeter,
        limiter: EndpointLimiter,
        retry: RetryPolicy,
        cache: ModelCache | None = None,
        pricing: Pricing | None = None,
        base_url: str | None = None,
        timeout_s: float | None = None,
        cache_options: dict[str, Any] | None = None,
    ) -> None:
        self.backend = backend
        self.provider = backend.provider
        self.model = backend.model
        self.tool_choice_required = bool(getattr(backend, "tool_choice_required", False))
        self.meter = meter
        self.limiter = limiter
        self.retry = retry
        self.cache = cache
        self.pricing = pricing
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.cache_options = cache_options or {}
        # Called after the backend is closed (a private runtime closes its cache here).
        self.on_close: Callable[[], None] | None = None
        # One jitter source per client: seeding a new Random from os.urandom on every call was
        # 12% of lens's own CPU per model call.
        self._rng = random.Random()
        self._label = f"{self.provider}/{self.model}"

    async def complete(self, request: CompletionRequest) -> Completion:
        started = time.perf_counter()
        key = None
        if self.cache is not None:
            key = cache_key(provider=self.provider, model=self.model, base_url=self.base_url,
                            request=request, backend_options=self.cache_options)
            hit = self.cache.get(key)
            if hit is not None:
                # Tokens stay as first measured so budgets behave the same on a replay; nothing
                # new was spent.
                hit = hit.model_copy(update={
                    "cached": True, "retries": 0, "cost_usd": 0.0,
                    "latency_s": time.perf_counter() - started,
                })
                self.meter.record(request.role, hit)
                return hit
        self.meter.check()
        try:
            try:
                # The first attempt is awaited here, with no retry machinery around it: most
                # calls need no other.
                completion, retries = await self._attempt(request), 0
            except ModelError as exc:
                completion, retries = await retry_after_failure(
                    exc, lambda: self._attempt(request), self.retry, label=self._label,
                    rng=self._rng)
        except ModelError:
            self.meter.record_error(request.role, self.provider, self.model)
            raise
        cost = self.pricing.cost(completion.usage) if self.pricing else completion.cost_usd
        completion = completion.model_copy(update={
            "provider": self.provider, "model": self.model, "retries": retries, "cached": False,
            "latency_s": time.perf_counter() - started, "cost_usd": cost,
        })
        if self.cache is not None and key is not None:
            self.cache.put(key, completion)
        self.meter.record(request.role, completion, looked_up=self.cache is not None)
        return completion

    async def _attempt(self, request: CompletionRequest) -> Completion:
        limiter = self.limiter
        # The estimate walks the whole conversation; only a tokens-per-minute limit (told, or
        # learnt from the provider's headers) needs it.
        prompt_estimate = estimate_prompt_tokens(request) if limiter.tokens is not None else 0
        completion_allowance = request.max_tokens or UNSET_MAX_TOKENS_BOOKING
        booked = limiter.estimate_tokens(prompt_estimate, completion_allowance)
        rate_headers.take()  # nothing stale from an earlier call of this task
        async with limiter.slot(booked) as booking:
            try:
                # asyncio.timeout, not anyio.fail_after: an anyio cancel scope per call was the
                # largest single cost of lens's own CPU per call at hundreds in flight. Timed
                # backends are all native async (threaded ones, llama_cpp, run untimed).
                async with asyncio.timeout(self.timeout_s):
                    completion = await self.backend.complete(request)
            except TimeoutError:
                raise ProviderError(
                    f"{self.provider}/{self.model}: no answer within {self.timeout_s} s",
                    retryable=True,
                ) from None
            except ModelError as exc:
                headers = rate_headers.take()
                if exc.status == 429:
                    limiter.refund(booking)
                    limiter.observe(headers, booking)
                    limiter.on_rate_limited(getattr(exc, "retry_after_s", None), headers)
                else:
                    limiter.observe(headers, booking)
                raise
            # Inside the slot: requests waiting for this one (the endpoint's first) must find
            # the limits its headers told.
            limiter.observe(rate_headers.take(), booking)
        limiter.on_success()
        limiter.settle(booking, prompt_estimate=prompt_estimate,
                       prompt_tokens=completion.usage.prompt_tokens,
                       completion_tokens=completion.usage.completion_tokens,
                       max_tokens=completion_allowance)
        return completion

    async def aclose(self) -> None:
        await self.backend.aclose()
        if self.on_close is not None:
            self.on_close()
            self.on_close = None
