"""A role's usage as JSON data carries every counter the meter keeps, and the figures derived
from them: a counter added to ``UsageTotals`` and not to its JSON would be lost from the
manifest without a word."""

from __future__ import annotations

from dataclasses import fields

from lens.models.base import Completion, Usage
from lens.models.usage import TotalsJson, UsageMeter, UsageTotals


def test_the_json_of_usage_holds_every_counter() -> None:
    counters = [f.name for f in fields(UsageTotals)]
    data = UsageTotals().as_dict()
    assert list(data)[:len(counters)] == counters
    assert set(data) == set(TotalsJson.__annotations__)
    assert set(data) - set(counters) == {"cost_usd", "total_tokens", "cached_share"}


def test_a_snapshot_sums_the_roles() -> None:
    meter = UsageMeter()
    for role, cost in (("agent", 0.25), ("judge", None)):
        meter.record(role, Completion(text="x", usage=Usage(prompt_tokens=10, completion_tokens=2),
                                      provider="p", model="m", cost_usd=cost))
    snap = meter.snapshot()
    assert sorted(snap["by_role"]) == ["agent", "judge"]
    assert snap["total"]["calls"] == 2 and snap["total"]["total_tokens"] == 24
    # One call without a price leaves the total cost unknown, never 0.
    assert snap["total"]["cost_usd"] is None and snap["total"]["cost_usd_known"] == 0.25
    assert snap["by_model"]["p/m"]["cache_misses"] == 2
