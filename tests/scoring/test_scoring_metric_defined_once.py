"""A metric is defined once, in its MetricSpec: its value, the bootstrap replicates the
report's intervals draw, the metric standing for its design effect and whether the fact grades
move it. The report reads these from the spec and keeps no list of its own."""

from __future__ import annotations

import numpy as np
import pytest

import lens.report.figures.groupstats as gs
import lens.scoring.metrics as registry
from lens.scoring.measures.composite import resolve_weights
from lens.scoring.measures.differential import longitudinal_advantage
from lens.scoring.metrics import MetricSpec, register_metric, unregister_metric
from tests.report.test_report_groupstats import rows

LA = "longitudinal_advantage"
HOW = gs.GroupScoring(weights=resolve_weights(None), gate_threshold=0.5,
                      tiers=frozenset({1, 2, 3}))


@pytest.mark.parametrize("control_facts", [True, False])
def test_the_replicates_at_unit_weights_are_the_point_value(control_facts: bool) -> None:
    data = rows(120, control_facts=control_facts, error_every=17)
    spec = registry.get_metric(LA)
    assert spec is not None and spec.group_replicates is not None
    point, detail = longitudinal_advantage(data)
    assert point is not None
    assert detail["basis"] == ("fact_recall" if control_facts else "answer_quality")
    matrix = gs._Matrix(data)
    reps = spec.group_replicates(data, matrix.columns, matrix.defined_columns,
                                 np.ones((1, len(data))))
    assert reps[0] == pytest.approx(point, abs=1e-12)


def test_the_report_reads_group_metrics_proxies_and_fact_grades_from_the_specs() -> None:
    assert registry.interval_group_metrics() == (registry.COMPOSITE, LA)
    assert registry.design_proxy(LA) == ("fact_recall", "answer_quality")
    assert registry.design_proxy(registry.COMPOSITE)[0] == registry.COMPOSITE
    assert registry.fact_graded_metrics() == {"fact_recall", "insight_depth"}


def test_a_plugin_group_metric_gets_its_interval_from_its_own_replicates() -> None:
    def spread(rows_):  # the share of answered synthesis questions, as a group statistic
        return 0.25, {}

    def spread_reps(rows_, values, defined, w):
        return np.full(len(w), 0.25)

    register_metric(MetricSpec("spread", 3, aggregation="group", group_compute=spread,
                               group_replicates=spread_reps))
    register_metric(MetricSpec("no_interval", 3, aggregation="group",
                               group_compute=lambda rows_: (0.5, {})))
    try:
        assert registry.interval_group_metrics() == (registry.COMPOSITE, LA, "spread")
        est = gs.group_estimates(rows(60), HOW, resamples=200)
        assert est["spread"].mean == 0.25 and est["spread"].low == est["spread"].high == 0.25
        assert "no_interval" not in est
    finally:
        unregister_metric("spread")
        unregister_metric("no_interval")
