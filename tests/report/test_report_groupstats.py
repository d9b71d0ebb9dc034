"""Intervals for the scorer's group statistics (composite, longitudinal_advantage): the point
is the scorer's own aggregate, and the vectorised replicate rule equals the scorer's rule."""

from __future__ import annotations

import numpy as np
import pytest

import lens.report.figures.groupstats as gs
from lens.scoring.measures.aggregate import aggregate_group
from lens.scoring.measures.composite import resolve_weights
from lens.scoring.metrics import question_metrics
from lens.scoring.types import QuestionScores
from tests.report.runfactory import unit_draw

ALL = frozenset({1, 2, 3})
TYPES = ("longitudinal", "null_hypothesis", "temporal", "action_recommendation")


def rows(n: int, *, shift: float = 0.0, label: str = "a", control_facts: bool = True,
         error_every: int = 0) -> list[QuestionScores]:
    out = []
    for i in range(n):
        qtype = TYPES[i % len(TYPES)]
        metrics: dict[str, float | None] = {}
        for m in question_metrics():
            u = unit_draw(label, i, m)
            metrics[m] = min(1.0, 0.35 + 0.6 * u + shift)
        metrics["budget_compliance"] = 1.0 if unit_draw(label, i, "b") > 0.1 else 0.0
        if qtype != "action_recommendation":
            metrics["action_quality"] = None
        if qtype == "null_hypothesis" and not control_facts:
            metrics["fact_recall"] = None
        errored = bool(error_every and i % error_every == 0)
        out.append(QuestionScores(
            key=f"k{i}", unit_key="u", adapter=label, scope_id=f"s{i % 5}", repeat=0,
            question_id=f"q{i}", question_type=qtype, checkpoint=5, status=(
                "error" if errored else "answered"),
            metrics={k: None for k in metrics} if errored else metrics))
    return out


HOW = gs.GroupScoring(weights=resolve_weights(None), gate_threshold=0.5, tiers=ALL)


@pytest.mark.parametrize("control_facts", [True, False])
def test_point_is_the_scorers_aggregate(control_facts: bool) -> None:
    data = rows(240, control_facts=control_facts, error_every=23)
    entry, _ = aggregate_group(data, weights=HOW.weights, gate_threshold=0.5, tiers=ALL)
    est = gs.group_estimates(data, HOW)
    assert est["composite"].mean == pytest.approx(entry["composite"], abs=1e-12)
    assert est["longitudinal_advantage"].mean == pytest.approx(
        entry["longitudinal_advantage"], abs=1e-12)
    # The full-sample replicate (every weight 1) reproduces the scorer exactly too.
    reps = gs._replicates(gs._Matrix(data), np.ones((1, len(data))), HOW)
    assert reps["composite"][0] == pytest.approx(entry["composite"], abs=1e-12)
    for m in ("composite", "longitudinal_advantage"):
        e = est[m]
        assert e.method == "group-bootstrap" and e.clusters == 5
        assert e.low is not None and e.high is not None and e.low <= e.mean <= e.high


def test_vectorised_composite_equals_the_scorer_rule_everywhere() -> None:
    rng = np.random.default_rng(0)
    size = 4000
    values = {}
    for m in (*question_metrics(), "longitudinal_advantage"):
        v = rng.uniform(-0.2 if m == "longitudinal_advantage" else 0.0, 1.0, size)
        v[rng.random(size) < 0.15] = np.nan  # missing metrics renormalise the weights
        values[m] = v
    for how in (HOW, gs.GroupScoring(weights={"fact_recall": 1.0, "evidence_grounding": 0.0,
                                              "answer_quality": 2.0},
                                     gate_threshold=0.3, tiers=ALL)):
        fast = gs._composite_vectorised(values, how, size)
        slow = np.array([gs._composite_reference(values, how, b) for b in range(size)])
        assert np.array_equal(np.isnan(fast), np.isnan(slow))
        ok = ~np.isnan(slow)
        assert np.allclose(fast[ok], slow[ok], atol=1e-12)
        assert (slow == 0.0).sum() > 0  # the gate was exercised


def test_gate_near_threshold_widens_the_interval() -> None:
    # Budget compliance hovering at the gate makes the composite jump between 0 and its value:
    # the interval must show that instability rather than hide it.
    steady = rows(300)
    shaky = rows(300)
    for i, r in enumerate(shaky):
        # About half compliant, scope by scope a little more or less: the gate's side varies.
        r.metrics["budget_compliance"] = 1.0 if unit_draw("gate", i) < 0.52 else 0.0
    e_steady = gs.group_estimates(steady, HOW)["composite"]
    e_shaky = gs.group_estimates(shaky, HOW)["composite"]
    assert e_shaky.low == 0.0
    assert e_shaky.half_width > 5 * e_steady.half_width  # type: ignore[operator]


def test_paired_group_difference() -> None:
    a = rows(400, label="a")
    same = gs.paired_group(a, a, HOW)
    assert same["composite"].delta.mean == 0.0 and same["composite"].p_value == 1.0
    b = rows(400, label="a", shift=0.1)
    better = gs.paired_group(a, b, HOW)["composite"]
    assert better.delta.mean == pytest.approx(better.mean_b - better.mean_a)  # type: ignore
    assert better.delta.low > 0 and better.p_value < 0.01  # type: ignore[operator]


def test_no_answered_rows_is_unknown() -> None:
    data = rows(10, error_every=1)
    est = gs.group_estimates(data, HOW)
    assert est["composite"].mean is None and est["composite"].n == 0


def test_intervals_depend_on_the_data_not_on_order_or_which_arm_is_a() -> None:
    data = rows(200)
    est = gs.group_estimates(data, HOW)
    assert gs.group_estimates(list(reversed(data)), HOW) == est
    b = rows(200, label="a", shift=0.05)
    ab = gs.paired_group(data, b, HOW)["composite"]
    ba = gs.paired_group(b, data, HOW)["composite"]
    # The same replicates whichever arm is A: the difference is mirrored exactly.
    assert ab.p_value == ba.p_value and ab.p_mc_error == ba.p_mc_error
    assert ab.delta.low == pytest.approx(-ba.delta.high, abs=1e-12)  # type: ignore[operator]


def test_few_scopes_widen_the_group_interval() -> None:
    # The interval is the bootstrap percentile interval spread about the point by
    # sqrt(k / (k - 1)) * t(k - 1) / z: the plain bootstrap is too narrow with few scopes.
    from lens.stats import percentile_interval, small_cluster_inflation

    data = sorted(rows(240), key=lambda r: (r.scope_id, r.question_id, r.repeat))
    est = gs.group_estimates(data, HOW)["composite"]
    reps = gs._group_reps([gs._Matrix(data)], HOW, [r.scope_id for r in data], gs._units(data),
                          gs.rows_seed(data), gs.GROUP_RESAMPLES,
                          [HOW.point(data)])[0]["composite"]
    raw = percentile_interval(reps, 0.95)
    assert raw is not None and est.mean is not None
    c = small_cluster_inflation(5, 0.95)
    assert c == pytest.approx(np.sqrt(5 / 4) * 2.776445 / 1.959964, rel=1e-5)
    assert est.low == pytest.approx(est.mean + c * (raw[0] - est.mean), rel=1e-9)
    assert est.high == pytest.approx(est.mean + c * (raw[1] - est.mean), rel=1e-9)
    assert small_cluster_inflation(3, 0.95) > small_cluster_inflation(12, 0.95) > 1
