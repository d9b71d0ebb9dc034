"""Usage and cost metering by role (agent, judge, adapter) and by model, and the run's cost cap.

Cost that is not known stays unknown: a role's ``cost_usd`` is None as soon as one of its paid
calls has no price, while ``cost_usd_known`` still sums what is known.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import NotRequired, TypedDict

from lens.core.logs import get_logger
from lens.models.base import Completion
from lens.models.errors import CostLimitReached

log = get_logger("lens.models")


class TotalsJson(TypedDict):
    """:class:`UsageTotals` as JSON data, with the figures derived from it."""

    calls: int
    cache_hits: int
    cache_misses: int
    errors: int
    retries: int
    prompt_tokens: int
    completion_tokens: int
    cached_prompt_tokens: int
    cache_write_tokens: int
    latency_s: float
    cost_usd_known: float
    unknown_cost_calls: int
    truncated: int
    unknown_usage_calls: int
    cost_usd: float | None
    total_tokens: int
    # Unknown, not 0, when no prompt token was counted.
    cached_share: float | None


class CacheUsage(TypedDict):
    enabled: bool
    path: str | None
    hits: int
    misses: int


class UsageSnapshot(TypedDict):
    """A run's model usage (the manifest's ``usage``): by role, by model and overall; a run's
    runtime adds its model cache and the rate-limit answers (429s) by endpoint."""

    by_role: dict[str, TotalsJson]
    by_model: dict[str, TotalsJson]
    total: TotalsJson
    max_cost_usd: float | None
    cache: NotRequired[CacheUsage]
    rate_limited: NotRequired[dict[str, int]]


@dataclass
class UsageTotals:
    calls: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    errors: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Prompt tokens the provider's prompt cache read or wrote (both are within prompt_tokens).
    cached_prompt_tokens: int = 0
    cache_write_tokens: int = 0
    latency_s: float = 0.0
    cost_usd_known: float = 0.0
    unknown_cost_calls: int = 0
    # Replies cut at max_tokens: a cut reply is usually broken JSON or a tool call never made.
    truncated: int = 0
    # Replies whose usage block was unreadable: their tokens are counted at the most the call
    # can have cost (lens.models.base.Usage.unknown).
    unknown_usage_calls: int = 0

    @property
    def cost_usd(self) -> float | None:
        return None if self.unknown_cost_calls else self.cost_usd_known

    def add(self, completion: Completion) -> None:
        usage = completion.usage
        self.calls += 1
        self.retries += completion.retries
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.cached_prompt_tokens += usage.cached_prompt_tokens
        self.cache_write_tokens += usage.cache_write_tokens
        self.latency_s += completion.latency_s
        if completion.cached:
            self.cache_hits += 1
        if completion.finish_reason == "length":
            self.truncated += 1
        if usage.unknown:
            self.unknown_usage_calls += 1
        if completion.cost_usd is None:
            self.unknown_cost_calls += 1
        else:
            self.cost_usd_known += completion.cost_usd

    def as_dict(self) -> TotalsJson:
        return {
            "calls": self.calls, "cache_hits": self.cache_hits,
            "cache_misses": self.cache_misses, "errors": self.errors, "retries": self.retries,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "cache_write_tokens": self.cache_write_tokens, "latency_s": self.latency_s,
            "cost_usd_known": self.cost_usd_known, "unknown_cost_calls": self.unknown_cost_calls,
            "truncated": self.truncated, "unknown_usage_calls": self.unknown_usage_calls,
            "cost_usd": self.cost_usd,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "cached_share": (self.cached_prompt_tokens / self.prompt_tokens
                             if self.prompt_tokens else None),
        }


class UsageMeter:
    """Counts every call through the stack; shared by all clients of one run.

    ``max_cost_usd`` stops new work: once the known spend reaches it, ``check()`` raises
    CostLimitReached before any further (uncached) call.
    """

    def __init__(self, max_cost_usd: float | None = None) -> None:
        self.max_cost_usd = max_cost_usd
        self.by_role: dict[str, UsageTotals] = {}
        self.by_model: dict[str, UsageTotals] = {}
        self._lock = threading.Lock()
        self._warned_unknown = False

    @property
    def spent_usd(self) -> float:
        with self._lock:
            return sum(t.cost_usd_known for t in self.by_role.values())

    @property
    def exhausted(self) -> bool:
        return self.max_cost_usd is not None and self.spent_usd >= self.max_cost_usd

    def check(self) -> None:
        if self.max_cost_usd is None:
            return
        spent = self.spent_usd
        if spent >= self.max_cost_usd:
            raise CostLimitReached(spent, self.max_cost_usd)

    def record(self, role: str, completion: Completion, *, looked_up: bool = True) -> None:
        """Count a finished call; ``looked_up`` says the cache was asked (a miss if not cached)."""
        key = f"{completion.provider}/{completion.model}"
        with self._lock:
            by_role = self.by_role.get(role) or self.by_role.setdefault(role, UsageTotals())
            by_model = self.by_model.get(key) or self.by_model.setdefault(key, UsageTotals())
            by_role.add(completion)
            by_model.add(completion)
            if looked_up and not completion.cached:
                by_role.cache_misses += 1
                by_model.cache_misses += 1
        if (completion.cost_usd is None and self.max_cost_usd is not None
                and not self._warned_unknown):
            self._warned_unknown = True
            log.warning("max_cost_usd cannot be enforced for a model without a price; set "
                        "price_input_per_mtok and price_output_per_mtok", model=key)

    def record_error(self, role: str, provider: str, model: str) -> None:
        with self._lock:
            self.by_role.setdefault(role, UsageTotals()).errors += 1
            self.by_model.setdefault(f"{provider}/{model}", UsageTotals()).errors += 1

    def snapshot(self) -> UsageSnapshot:
        """JSON-ready totals: by role, by model, and overall."""
        with self._lock:
            total = UsageTotals()
            for t in self.by_role.values():
                for name, value in asdict(t).items():
                    setattr(total, name, getattr(total, name) + value)
            return {
                "by_role": {k: v.as_dict() for k, v in sorted(self.by_role.items())},
                "by_model": {k: v.as_dict() for k, v in sorted(self.by_model.items())},
                "total": total.as_dict(),
                "max_cost_usd": self.max_cost_usd,
            }
