"""One place that turns a set of question rows into estimates, metric by metric: Wilson for 0/1
outcomes, clustered bootstrap for continuous ones, and the group bootstrap for the statistics
the scorer computes over a group (composite, longitudinal_advantage)."""

from __future__ import annotations

from collections.abc import Sequence

from lens.report.data import METRIC_ORDER, QuestionRow, RunData
from lens.report.groupstats import GROUP_METRICS, GroupScoring, group_estimates
from lens.stats import Estimate, estimate


def per_question(rows: Sequence[QuestionRow], metric: str, *, confidence: float,
                 seed_label: str) -> Estimate:
    vals: list[float] = []
    clusters: list[str] = []
    for row in rows:
        v = row.metric(metric)
        if v is not None:
            vals.append(v)
            clusters.append(row.record.scope_id)
    return estimate(vals, clusters, confidence=confidence, seed_label=f"{seed_label}|{metric}")


def estimates(run: RunData, rows: Sequence[QuestionRow], metrics: Sequence[str], *,
              confidence: float, seed_label: str) -> dict[str, Estimate]:
    out: dict[str, Estimate] = {}
    wanted_group = [m for m in metrics if m in GROUP_METRICS]
    if wanted_group and run.scores is not None:
        scored = [r.scores for r in rows if r.scores is not None]
        grp = group_estimates(scored, GroupScoring.of(run.scores), confidence=confidence,
                              seed_label=f"{seed_label}|group")
        out.update({m: grp[m] for m in wanted_group})
    for m in metrics:
        if m not in out:
            out[m] = per_question(rows, m, confidence=confidence, seed_label=seed_label)
    return out


def report_metrics(run: RunData) -> list[str]:
    """The metrics a report shows: every per-question metric, plus the group statistics the
    scorer defines when the run is scored. A metric the scorer defines but could not compute
    (no judge, say) is listed too, and shows as unknown rather than vanishing."""
    names = run.metric_names
    if run.scores is None:
        return names
    defined = {k for q in run.scores.questions for k in q.metrics} - set(names)
    names = names + [m for m in METRIC_ORDER if m in defined and m not in GROUP_METRICS]
    # longitudinal_advantage is a tier-3 statistic: shown (maybe as unknown) when tier 3 ran.
    extra = [m for m in GROUP_METRICS if m not in names
             and (m != "longitudinal_advantage" or 3 in run.scores.tiers)]
    return [*extra[:1], *names, *extra[1:]] if "composite" in extra else [*names, *extra]
