"""Errors of the model stack, and how an HTTP status maps to "try again" or "fail now"."""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping

from lens.models.base import ModelError

# Request timeout, conflict, rate limit and server errors are worth another attempt; any other
# 4xx is the caller's mistake and fails at once with the provider's message.
RETRYABLE_STATUSES = frozenset({408, 409, 429})


def status_is_retryable(status: int | None) -> bool:
    if status is None:
        return True
    return status in RETRYABLE_STATUSES or status >= 500


class ProviderError(ModelError):
    """A failed model call as the provider reported it, with its ``Retry-After`` if any."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message, retryable=retryable, status=status)
        self.retry_after_s = retry_after_s


class CostLimitReached(ModelError):
    """The run's ``max_cost_usd`` is spent: no new model call may start."""

    def __init__(self, spent_usd: float, limit_usd: float) -> None:
        super().__init__(
            f"cost limit reached: ${spent_usd:.4f} spent of max_cost_usd ${limit_usd:.4f}; "
            "no new model calls are made",
            retryable=False,
        )
        self.spent_usd = spent_usd
        self.limit_usd = limit_usd


# A wait beyond a day ("inf" included) is not a server's considered answer but a fault: it is
# ignored, and the call retries on lens's own back-off instead of giving up at once.
MAX_RETRY_AFTER_S = 86_400.0


def _seconds(value: float) -> float | None:
    if not math.isfinite(value) or value > MAX_RETRY_AFTER_S:
        return None
    return max(0.0, value)


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date),
    between 0 and a day; None when absent, unreadable or absurd."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return _seconds(float(ms) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return _seconds(float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    return _seconds(when.timestamp() - (time.time() if now is None else now))
