"""The ``x-ratelimit-*`` headers hosted APIs send with every reply, read into numbers.

A backend notes the headers of each reply (success or error) with ``note``; the stack, which
awaited the backend in the same task, reads them with ``take`` and hands them to the endpoint's
limiter. A context variable carries them so that no backend's return type has to change.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass

from multidict import CIMultiDict, CIMultiDictProxy

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


@dataclass(frozen=True)
class RateHeaders:
    """What the provider said about one limit family; None where it said nothing usable."""

    limit_requests: float | None = None
    limit_tokens: float | None = None
    remaining_requests: float | None = None
    remaining_tokens: float | None = None
    reset_requests_s: float | None = None
    reset_tokens_s: float | None = None

    @property
    def empty(self) -> bool:
        return all(v is None for v in vars(self).values())


def parse_duration(text: str) -> float | None:
    """``6m0s``, ``1.5s``, ``20ms``, ``1h2m3s`` or plain seconds; None when unreadable."""
    text = text.strip().lower()
    try:
        value = float(text)
    except ValueError:
        pos, total = 0, 0.0
        for m in _DURATION_PART.finditer(text):
            if m.start() != pos:
                return None
            total += float(m.group(1)) * _UNIT_S[m.group(2)]
            pos = m.end()
        if pos != len(text) or pos == 0:
            return None
        value = total
    return value if math.isfinite(value) and value >= 0 else None


def _count(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


# What a reply without rate-limit headers says (most replies of most servers): one shared value.
_NOTHING = RateHeaders()


_NAMES = ("x-ratelimit-limit-requests", "x-ratelimit-limit-tokens",
          "x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens",
          "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")


def parse_rate_headers(headers: Mapping[str, str] | None) -> RateHeaders:
    if not headers:
        return _NOTHING
    if isinstance(headers, CIMultiDictProxy | CIMultiDict):
        # aiohttp's headers look names up without regard to case: six lookups, rather than
        # lowering every header of every reply.
        lower = {name: value for name in _NAMES if (value := headers.get(name)) is not None}
    else:
        lower = {k.lower(): v for k, v in headers.items()
                 if k.lower().startswith("x-ratelimit-")}
    if not lower:
        return _NOTHING

    def reset(name: str) -> float | None:
        raw = lower.get(name)
        return None if raw is None else parse_duration(raw)

    return RateHeaders(
        limit_requests=_count(lower.get("x-ratelimit-limit-requests")),
        limit_tokens=_count(lower.get("x-ratelimit-limit-tokens")),
        remaining_requests=_count(lower.get("x-ratelimit-remaining-requests")),
        remaining_tokens=_count(lower.get("x-ratelimit-remaining-tokens")),
        reset_requests_s=reset("x-ratelimit-reset-requests"),
        reset_tokens_s=reset("x-ratelimit-reset-tokens"),
    )


_last: ContextVar[RateHeaders | None] = ContextVar("lens_rate_headers", default=None)


def note(headers: Mapping[str, str] | None) -> None:
    """Record the rate-limit headers of the reply just received (no-op without any)."""
    parsed = parse_rate_headers(headers)
    if parsed is not _NOTHING and not parsed.empty:
        _last.set(parsed)


def take() -> RateHeaders | None:
    """The headers noted since the last ``take`` in this task, if any."""
    value = _last.get()
    if value is not None:
        _last.set(None)
    return value
