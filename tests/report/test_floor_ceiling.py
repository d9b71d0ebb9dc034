"""Each arm's place between the floor and the ceiling: unknown, never 0 or 1, without a gap."""

from __future__ import annotations

import pytest

from lens.report.figures.floor_ceiling import floor_ceiling, position
from lens.report.foundations.shapes import AdapterSummary, EstimateOut, Usage


def _est(mean: float | None) -> EstimateOut:
    return EstimateOut(n=10, mean=mean, low=None, high=None, margin=None, method="t")


def _arm(label: str, **means: float | None) -> AdapterSummary:
    usage = Usage(tool_calls_per_question=None, search_results_per_question=None,
                  agent_tokens_per_question=_est(None), cost_usd_per_question=None,
                  cost_usd_total=None, wall_s_per_question=None, budget_compliant=_est(None))
    return AdapterSummary(label=label, questions=10, answered=10, errored=0,
                          metrics={m: _est(v) for m, v in means.items()}, usage=usage)


def test_position_is_the_share_of_the_gap() -> None:
    assert position(0.5, 0.2, 0.8) == pytest.approx(0.5)
    assert position(0.9, 0.2, 0.8) == pytest.approx(7 / 6)  # past the ceiling: shown as is
    assert position(0.5, 0.6, 0.6) is None
    assert position(0.5, 0.7, 0.6) is None
    assert position(None, 0.0, 1.0) is None
    assert position(0.5, None, 1.0) is None


def test_floor_and_ceiling_are_found_by_adapter_name_whatever_the_label() -> None:
    adapters = {"no memory": _arm("no memory", composite=0.1, budget_compliance=1.0),
                "mine": _arm("mine", composite=0.4, budget_compliance=1.0),
                "gold": _arm("gold", composite=0.7, budget_compliance=1.0)}
    names = {"no memory": "null", "mine": "sqlite_fts", "gold": "oracle"}
    fc = floor_ceiling({a: s.metrics for a, s in adapters.items()}, names,
                       ["composite", "budget_compliance"])
    assert fc is not None and (fc.floor_arm, fc.ceiling_arm) == ("no memory", "gold")
    composite, budget = fc.rows
    assert composite.positions == {"mine": pytest.approx(0.5)}
    assert budget.positions == {"mine": None}


def test_no_reference_arm_no_table() -> None:
    adapters = {"a": _arm("a", composite=0.3), "b": _arm("b", composite=0.5)}
    means = {a: s.metrics for a, s in adapters.items()}
    assert floor_ceiling(means, {"a": "sqlite_fts", "b": "vector"}, ["composite"]) is None
