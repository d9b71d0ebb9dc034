"""The search filters every shipped adapter understands: an inclusive timestamp range."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lens.data.dataset import parse_timestamp

DATE_FILTERS = ("start_date", "end_date")
_BARE_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _parse(value: Any, field: str, end_of_day: bool) -> datetime:
    text = str(value)
    try:
        ts = parse_timestamp(text)
    except ValueError:
        raise ValueError(f"filter {field!r}: {value!r} is not an ISO-8601 date") from None
    if end_of_day and _BARE_DATE.fullmatch(text):
        # A bare end date means the whole of that day.
        ts = ts.replace(hour=23, minute=59, second=59, microsecond=999_999)
    return ts


@dataclass(frozen=True)
class DateRange:
    start: datetime | None = None
    end: datetime | None = None

    @classmethod
    def from_filters(cls, filters: dict[str, Any] | None,
                     supported: tuple[str, ...] = DATE_FILTERS) -> DateRange:
        """Parse ``filters``; unknown keys are an error the agent can read and correct."""
        filters = filters or {}
        unknown = set(filters) - set(supported)
        if unknown:
            raise ValueError(f"unknown filter(s) {sorted(unknown)}; supported: "
                             f"{', '.join(supported) or 'none'}")
        start = filters.get("start_date")
        end = filters.get("end_date")
        return cls(start=_parse(start, "start_date", False) if start else None,
                   end=_parse(end, "end_date", True) if end else None)

    @property
    def empty(self) -> bool:
        return self.start is None and self.end is None

    def admits(self, ts: datetime) -> bool:
        if self.start is not None and ts < self.start:
            return False
        return not (self.end is not None and ts > self.end)

    def iso_bounds(self) -> tuple[str | None, str | None]:
        return (self.start.isoformat() if self.start else None,
                self.end.isoformat() if self.end else None)


def search_bounds(query: str, filters: dict[str, Any] | None, limit: int | None,
                  max_results: int) -> tuple[DateRange, int] | None:
    """What every search of a shipped adapter reads first: the filters' date range (an unknown
    filter raises, for the agent to read, even with an empty query) and how many results to
    return (the agent's limit, never above the adapter's own); None when the query is blank."""
    dates = DateRange.from_filters(filters)
    if not query.strip():
        return None
    return dates, min(limit or max_results, max_results)
