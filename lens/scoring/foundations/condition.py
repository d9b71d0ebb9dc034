"""The scoring condition: everything a score depends on besides the records and the ground
truth. Two runs scored under different conditions are not comparable (``lens compare`` refuses
them); every protocol's scoring records its condition through :func:`scoring_condition`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lens.data.prompts import prompts_hash

# The version of the scoring rules. Raise it whenever a rule changes what a number means
# (what counts as a stated fact, a metric's definition, the composite's rules): runs scored
# under different protocols are not comparable.
SCORING_PROTOCOL = 4


def scoring_condition(*, tiers: set[int] | frozenset[int], weights: Mapping[str, float],
                      gate_threshold: float, judge_model: str | None,
                      settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` holds every scoring knob (matcher, fact grading, protocol, ...), so a knob
    added there enters the condition by itself. The prompts hash covers the judge's prompt
    templates and rubrics (every registered template)."""
    return {
        "protocol": SCORING_PROTOCOL,
        "tiers": sorted(tiers),
        "weights": dict(sorted(weights.items())),
        "gate_threshold": gate_threshold,
        "judge_model": judge_model,
        "judge_prompts_hash": prompts_hash() if judge_model else None,
        "settings": dict(settings),
    }
