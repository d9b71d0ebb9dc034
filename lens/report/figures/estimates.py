"""One place that turns a set of question rows into estimates, metric by metric: the
scope-clustered interval for per-question metrics (after reducing each question's repeats to
one value), and the group bootstrap for the statistics the scorer computes over a group
(composite, longitudinal_advantage)."""

from __future__ import annotations

from collections.abc import Sequence

import lens.scoring.metrics as registry
from lens.core.errors import UserError
from lens.report.figures.groupstats import GroupScoring, group_estimates
from lens.report.foundations.data import QuestionRow, RunData
from lens.stats import (
    Clustered,
    Estimate,
    check_reducer,
    effective_n,
    estimate,
    reduce_repeats,
)

DEFAULT_REDUCER = "mean"


def repeat_reducer(run: RunData) -> str:
    """The reducer the run's config names (``scoring.repeat_reducer``), mean by default."""
    config = run.manifest.get("config")
    scoring = config.get("scoring") if isinstance(config, dict) else None
    name = scoring.get("repeat_reducer") if isinstance(scoring, dict) else None
    if name is None:
        return DEFAULT_REDUCER
    try:
        return check_reducer(str(name))
    except ValueError as exc:
        raise UserError(f"{run.root / 'manifest.json'}: config.scoring.repeat_reducer: {exc}"
                        ) from None


def question_values(rows: Sequence[QuestionRow], metric: str, reducer: str
                    ) -> tuple[list[tuple[str, str]], list[float], float | None]:
    """One value per (scope, question) from its repeats, and the flip rate across repeats."""
    keys: list[tuple[str, str]] = []
    vals: list[float] = []
    for row in rows:
        v = row.metric(metric)
        if v is not None:
            keys.append((row.record.scope_id, row.record.question_id))
            vals.append(v)
    out_keys, reduced, flips = reduce_repeats(keys, vals, reducer)
    # In key order, so that the order records were stored in changes no bit of any estimate.
    pairs = sorted((k, v) for k, v in zip(out_keys, reduced, strict=True)
                   if isinstance(k, tuple))
    return [k for k, _ in pairs], [v for _, v in pairs], flips


def per_question(rows: Sequence[QuestionRow], metric: str, *, confidence: float,
                 reducer: str = DEFAULT_REDUCER) -> Estimate:
    keys, vals, flips = question_values(rows, metric, reducer)
    est = estimate(vals, [k[0] for k in keys], confidence=confidence)
    return est.with_(flip_rate=flips)


def estimates(run: RunData, rows: Sequence[QuestionRow], metrics: Sequence[str], *,
              confidence: float) -> dict[str, Estimate]:
    """Estimates of ``metrics`` over ``rows``; every seed comes from the data, never from a
    name."""
    out: dict[str, Estimate] = {}
    wanted_group = [m for m in metrics if m in registry.interval_group_metrics()]
    reducer = repeat_reducer(run)
    if wanted_group and run.scores is not None:
        scored = [r.scores for r in rows if r.scores is not None]
        grp = group_estimates(scored, GroupScoring.of(run.scores), confidence=confidence)
        out.update({m: _with_design(grp[m], rows, m, reducer) for m in wanted_group})
    for m in metrics:
        if m not in out:
            out[m] = per_question(rows, m, confidence=confidence, reducer=reducer)
    return out


def _with_design(est: Estimate, rows: Sequence[QuestionRow], metric: str,
                 reducer: str) -> Estimate:
    """A group statistic's effective n and ICC, from the per-question values it rests on (a
    group statistic has no per-question values of its own to estimate them from)."""
    if est.mean is None:
        return est
    for proxy in registry.design_proxy(metric):
        keys, vals, flips = question_values(rows, proxy, reducer)
        if vals:
            grouped = Clustered.of(vals, [k[0] for k in keys])
            icc = grouped.icc()
            return est.with_(icc=icc, n_eff=effective_n(est.n, grouped.k, icc),
                             flip_rate=flips)
    return est


def _tier(metric: str) -> int | None:
    spec = registry.get_metric(metric)
    return spec.tier if spec is not None else None


def report_metrics(run: RunData) -> list[str]:
    """The metrics a report shows: every per-question metric, plus the group statistics the
    scorer defines when the run is scored. A metric the scorer defines but could not compute
    (no judge, say) is listed too, and shows as unknown rather than vanishing."""
    names = run.metric_names
    if run.scores is None:
        return names
    defined = {k for q in run.scores.questions for k in q.metrics} - set(names)
    grouped = registry.interval_group_metrics()
    names = names + [m for m in registry.report_order()
                     if m in defined and m not in grouped]
    # A group metric is shown (maybe as unknown) when its tier ran; the composite always.
    extra = [m for m in grouped if m not in names
             and (m == registry.COMPOSITE or _tier(m) in run.scores.tiers)]
    return [*extra[:1], *names, *extra[1:]] if "composite" in extra else [*names, *extra]
