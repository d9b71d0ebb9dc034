"""The report's model-usage table: the provider-cached share of prompt tokens, unknown when the
manifest did not count it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from lens.report.documents.layout import _cached_share
from lens.report.summary import model_usage


def _run(by_role: dict[str, Any]) -> Any:
    return SimpleNamespace(manifest={"usage": {"by_role": by_role}})


def test_cached_share_from_the_manifest() -> None:
    usage = model_usage(_run({
        "agent": {"calls": 2, "prompt_tokens": 1000, "completion_tokens": 10, "cost_usd": 0.1,
                  "cached_prompt_tokens": 750},
        "judge": {"calls": 1, "prompt_tokens": 100, "completion_tokens": 5, "cost_usd": 0.0},
        "adapter": {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0,
                    "cached_prompt_tokens": 0}}))
    assert _cached_share(usage["agent"]) == "75%"
    assert _cached_share(usage["judge"]) == "—"  # an older manifest: not counted, not 0
    assert _cached_share(usage["adapter"]) == "—"
