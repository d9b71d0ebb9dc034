"""Paired comparison of two arms (an adapter in a run) on the questions both answered.

A difference is only called a win when it is larger than either arm's own margin of error,
at least the judge-noise floor (for judge-based metrics), and significant after Holm's
correction across the metrics shown. Anything else is a tie, with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lens.report.data import QuestionRow, RunData, is_judge_metric
from lens.report.estimates import estimates
from lens.report.groupstats import GROUP_METRICS, GroupScoring, paired_group
from lens.report.models import Comparison, ComparisonRow, EstimateOut
from lens.stats import Estimate, PairedResult, holm, paired_compare


@dataclass(frozen=True)
class Arm:
    """One adapter of one run: the unit a comparison sets against another."""

    name: str
    run: RunData
    adapter: str

    @property
    def rows(self) -> list[QuestionRow]:
        return self.run.rows_for(self.adapter)


def arms_of(runs: Sequence[RunData]) -> list[Arm]:
    """Every (run, adapter) arm; names carry the run id only when several runs are involved."""
    many = len(runs) > 1
    out: list[Arm] = []
    for run in runs:
        for label in run.adapters:
            name = f"{run.run_id}:{label}" if many else label
            out.append(Arm(name=name, run=run, adapter=label))
    return out


def arm_estimates(arm: Arm, metrics: Sequence[str], confidence: float = 0.95
                  ) -> dict[str, Estimate]:
    """Each arm's own estimates: the same numbers its run report shows."""
    return estimates(arm.run, arm.rows, metrics, confidence=confidence,
                     seed_label=arm.adapter)


def _group_results(a: Arm, b: Arm, common: list[tuple[str, str, int]], metrics: Sequence[str],
                   rows_a: dict, rows_b: dict, confidence: float) -> dict[str, PairedResult]:
    """Paired group bootstrap for the composite and longitudinal_advantage."""
    wanted = [m for m in metrics if m in GROUP_METRICS]
    if not wanted or a.run.scores is None or b.run.scores is None:
        return {}
    pairs = [(rows_a[k].scores, rows_b[k].scores) for k in common
             if rows_a[k].scores is not None and rows_b[k].scores is not None]
    res = paired_group([p[0] for p in pairs], [p[1] for p in pairs],
                       GroupScoring.of(a.run.scores), confidence=confidence,
                       seed_label=f"{a.name}|{b.name}|group")
    return {m: PairedResult(m, res[m].n, res[m].mean_a, res[m].mean_b, res[m].delta,
                            res[m].p_value, "paired-group-bootstrap") for m in wanted}


def _fmt(x: float) -> str:
    return f"{x:.3f}"


def _verdict(
    delta: float | None, margins: Sequence[float | None], floor: float | None,
    p_holm: float | None, alpha: float, interval: tuple[float, float] | None = None,
) -> tuple[str, str]:
    if delta is None:
        return "unknown", "no paired values"
    known = [m for m in margins if m is not None]
    margin = max(known) if known else None
    if margin is None:
        return "tie", "margin of error unknown (too few questions)"
    if abs(delta) <= margin:
        return "tie", f"|Δ| {_fmt(abs(delta))} within margin of error ±{_fmt(margin)}"
    if floor is not None and abs(delta) < floor:
        return "tie", f"|Δ| {_fmt(abs(delta))} below judge-noise floor {_fmt(floor)}"
    if p_holm is None:
        return "tie", "no test possible"
    if p_holm >= alpha:
        return "tie", f"not significant after Holm (p={p_holm:.3g})"
    # The tests treat questions as independent; the interval resamples scopes. Both must agree
    # before a difference is called.
    if interval is not None and interval[0] <= 0 <= interval[1]:
        return "tie", "the scope-clustered 95% interval of Δ includes 0"
    return ("b" if delta > 0 else "a"), f"significant after Holm (p={p_holm:.3g})"


def compare_arms(
    a: Arm,
    b: Arm,
    metrics: Sequence[str],
    *,
    noise_floor: float | None,
    not_comparable: Sequence[str] = (),
    confidence: float = 0.95,
    alpha: float = 0.05,
) -> Comparison:
    """Compare arm ``b`` against arm ``a`` (Δ = B − A) on every metric in ``metrics``."""
    rows_a = {r.match_key: r for r in a.rows}
    rows_b = {r.match_key: r for r in b.rows}
    common = sorted(set(rows_a) & set(rows_b))
    group = _group_results(a, b, common, metrics, rows_a, rows_b, confidence)
    results = []
    for metric in metrics:
        if metric in group:
            results.append(group[metric])
            continue
        xs: list[float] = []
        ys: list[float] = []
        clusters: list[str] = []
        for key in common:
            x, y = rows_a[key].metric(metric), rows_b[key].metric(metric)
            if x is None or y is None:
                continue
            xs.append(x)
            ys.append(y)
            clusters.append(key[0])
        results.append(paired_compare(metric, xs, ys, clusters, confidence=confidence,
                                      seed_label=f"{a.name}|{b.name}"))
    adjusted = holm([r.p_value for r in results])
    own_a, own_b = arm_estimates(a, metrics, confidence), arm_estimates(b, metrics, confidence)
    out_rows = []
    for res, p_adj in zip(results, adjusted, strict=True):
        ma, mb = own_a[res.metric].half_width, own_b[res.metric].half_width
        floor = noise_floor if is_judge_metric(res.metric) else None
        ci = ((res.delta.low, res.delta.high)
              if res.delta.low is not None and res.delta.high is not None else None)
        verdict, reason = _verdict(res.delta.mean, (ma, mb), floor, p_adj, alpha, ci)
        out_rows.append(ComparisonRow(
            metric=res.metric, pairs=res.n, mean_a=res.mean_a, mean_b=res.mean_b,
            delta=EstimateOut.of(res.delta), test=res.test, p_value=res.p_value, p_holm=p_adj,
            margin_a=ma, margin_b=mb, noise_floor=floor,
            verdict=verdict,  # type: ignore[arg-type]
            reason=reason,
        ))
    return Comparison(
        arm_a=a.name, arm_b=b.name, pairs=len(common),
        unmatched_a=len(set(rows_a) - set(rows_b)), unmatched_b=len(set(rows_b) - set(rows_a)),
        not_comparable=list(not_comparable), rows=out_rows,
    )


def noise_floor_of(runs: Sequence[RunData]) -> float | None:
    """The largest judge disagreement rate among the runs: the conservative noise floor."""
    rates = [r.judge_disagreement for r in runs if r.judge_disagreement is not None]
    return max(rates) if rates else None


def compare_against_first(
    arms: Sequence[Arm], metrics: Sequence[str], *, noise_floor: float | None,
    not_comparable: Sequence[str] = (), confidence: float = 0.95,
) -> list[Comparison]:
    """The first arm is the baseline; every other arm is compared with it."""
    return [compare_arms(arms[0], other, metrics, noise_floor=noise_floor,
                         not_comparable=not_comparable, confidence=confidence)
            for other in arms[1:]]
