"""The composite: default weights, the hard gate, renormalisation over missing metrics,
longitudinal_advantage kept out, errored questions counted as failures."""

from __future__ import annotations

import pytest

from lens.core.errors import ConfigError
from lens.scoring.aggregation.composite import composite, resolve_weights
from lens.scoring.metrics import default_weights

DEFAULT_WEIGHTS = default_weights()

FULL = {
    "evidence_grounding": 1.0, "fact_recall": 0.5, "citation_precision": 1.0,
    "evidence_coverage": 0.5,
    "budget_compliance": 1.0, "answer_quality": 0.5, "insight_depth": 1.0,
    "reasoning_quality": 1.0, "longitudinal_advantage": 0.2, "action_quality": 0.0,
}


def test_default_weights() -> None:
    assert sum(DEFAULT_WEIGHTS.values()) == pytest.approx(1.0)
    assert DEFAULT_WEIGHTS["answer_quality"] == DEFAULT_WEIGHTS["fact_recall"] == 0.20
    assert DEFAULT_WEIGHTS["action_quality"] == 0.05
    assert DEFAULT_WEIGHTS["longitudinal_advantage"] == 0.0


def test_full_composite_by_hand() -> None:
    c = composite(FULL, DEFAULT_WEIGHTS)
    expected = (0.1 * 1 + 0.2 * 0.5 + 0.1 * 1 + 0.1 * 0.5 + 0.05 * 1 + 0.2 * 0.5 + 0.1 * 1
                + 0.1 * 1 + 0.05 * 0)
    assert c.value == pytest.approx(expected)
    assert not c.renormalised and not c.gated


@pytest.mark.parametrize("metric", ["evidence_grounding", "budget_compliance"])
def test_gate_zeroes_the_composite(metric: str) -> None:
    c = composite({**FULL, metric: 0.49}, DEFAULT_WEIGHTS)
    assert c.value == 0.0 and c.gated
    # At the threshold the gate is open.
    assert composite({**FULL, metric: 0.5}, DEFAULT_WEIGHTS).value > 0
    # The threshold is a setting.
    assert composite({**FULL, metric: 0.49}, DEFAULT_WEIGHTS, gate_threshold=0.4).value > 0


def test_missing_metrics_renormalise_and_are_labelled() -> None:
    values = {**FULL, "answer_quality": None, "action_quality": None}
    c = composite(values, DEFAULT_WEIGHTS)
    present = {k: v for k, v in values.items()
               if v is not None and k != "longitudinal_advantage"}
    expected = sum(DEFAULT_WEIGHTS[k] * v for k, v in present.items()) / sum(
        DEFAULT_WEIGHTS[k] for k in present)
    assert c.value == pytest.approx(expected)
    assert c.renormalised
    assert c.missing == ["answer_quality", "action_quality"]


def test_missing_gate_metric_is_reported_not_treated_as_failing() -> None:
    c = composite({**FULL, "budget_compliance": None}, DEFAULT_WEIGHTS)
    assert c.value is not None and c.value > 0
    assert c.gate_unchecked == ["budget_compliance"]


def test_nothing_present_is_unknown() -> None:
    assert composite({}, DEFAULT_WEIGHTS).value is None


def test_longitudinal_advantage_never_enters_the_composite() -> None:
    # A better advantage from failing the controls cannot raise the composite ...
    base = composite(FULL, DEFAULT_WEIGHTS).value
    for la in (-1.0, 0.0, 0.5, 1.0, None):
        assert composite({**FULL, "longitudinal_advantage": la}, DEFAULT_WEIGHTS).value == base
    # ... nor can its absence renormalise it upward.
    assert "longitudinal_advantage" not in composite(
        {**FULL, "longitudinal_advantage": None}, DEFAULT_WEIGHTS).missing
    with pytest.raises(ConfigError, match="longitudinal_advantage: must be 0"):
        resolve_weights({"longitudinal_advantage": 0.15})
    # Weights an older scoring recorded are read, and the old weight is ignored.
    old = resolve_weights({"longitudinal_advantage": 0.15}, stored=True)
    assert composite(FULL, old).value == composite(FULL, DEFAULT_WEIGHTS).value


def test_errored_questions_count_as_failures() -> None:
    full = composite(FULL, DEFAULT_WEIGHTS).value
    assert full is not None
    assert composite(FULL, DEFAULT_WEIGHTS, answered_share=0.75).value == pytest.approx(
        0.75 * full)


def test_weights_override_and_validation() -> None:
    w = resolve_weights({"action_quality": 0.0})
    assert w["action_quality"] == 0.0 and w["fact_recall"] == 0.2
    # A zero weight is not "missing".
    assert "action_quality" not in composite({**FULL, "action_quality": None}, w).missing
    with pytest.raises(ConfigError, match="unknown metric 'recall'"):
        resolve_weights({"recall": 0.2})
    with pytest.raises(ConfigError, match="must be a number >= 0"):
        resolve_weights({"fact_recall": -1})
    with pytest.raises(ConfigError, match="at least one weight"):
        resolve_weights(dict.fromkeys(DEFAULT_WEIGHTS, 0.0))
