"""Paired comparison of arms (an adapter in a run) on the questions both answered.

The primary metric (the first a report shows: the composite when the run is scored) is the
confirmatory family: Holm's correction runs over the pairs of arms on it alone. Every other
metric, the first search's retrieval ranking (MRR, NDCG@10) included, is exploratory, with
Holm's correction over the pairs × those metrics. A difference is only called a win when it is
larger than either arm's own margin of error (the margin rule), at least the judge-noise floor
(for judge-based metrics), significant after its family's Holm correction, its scope-clustered
interval excludes 0, and the bounded-mean test over scopes (valid however skewed the scope
differences are; Holm over the same family) agrees. The words and their rules are
lens.report.figures.verdicts's; every verdict names the rule that decided it and its reason. Every
resampling is seeded by the data compared, so renaming or reordering the runs changes nothing
but the names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Final, Literal

import numpy as np

import lens.scoring.metrics as registry
from lens.report.figures.estimates import estimates, question_values, repeat_reducer
from lens.report.figures.groupstats import GroupScoring, paired_group
from lens.report.figures.verdicts import Evidence, decide
from lens.report.foundations.data import RETRIEVAL_COMPARED, QuestionRow, RunData, is_judge_metric
from lens.report.foundations.shapes import Comparison, ComparisonRow, EstimateOut, ManyArms
from lens.stats import (
    TEST_RESAMPLES,
    Clustered,
    Estimate,
    PairedResult,
    content_seed,
    delta_from_replicates,
    effective_n,
    friedman,
    holm_by_family,
    holm_mc_error,
    is_binary,
    mcnemar_exact,
    replicate,
    symmetric_seed,
    unknown,
    weighted_means,
)
from lens.stats.bounded import BoundedTest, bounded_test


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
    return estimates(arm.run, arm.rows, metrics, confidence=confidence)


def _group_results(a: Arm, b: Arm, common: list[tuple[str, str, int]], metrics: Sequence[str],
                   rows_a: dict[Any, Any], rows_b: dict[Any, Any], confidence: float
                   ) -> dict[str, PairedResult]:
    """Paired group bootstrap for the composite and longitudinal_advantage."""
    wanted = [m for m in metrics if m in registry.interval_group_metrics()]
    if not wanted or a.run.scores is None or b.run.scores is None:
        return {}
    pairs = [(rows_a[k].scores, rows_b[k].scores) for k in common
             if rows_a[k].scores is not None and rows_b[k].scores is not None]
    res = paired_group([p[0] for p in pairs], [p[1] for p in pairs],
                       GroupScoring.of(a.run.scores), confidence=confidence)
    return {m: PairedResult(m, res[m].n, res[m].mean_a, res[m].mean_b,
                            _delta_design(a, b, m, res[m].delta), res[m].p_value,
                            "paired-group-bootstrap", p_mc_error=res[m].p_mc_error)
            for m in wanted}


def _delta_design(a: Arm, b: Arm, metric: str, delta: Estimate) -> Estimate:
    """The effective n of a group statistic's difference, from the per-question differences
    of the metric that stands for it (``lens.scoring.metrics.design_proxy``)."""
    if delta.mean is None:
        return delta
    for proxy in registry.design_proxy(metric):
        ta, tb = _question_table(a, [proxy])[proxy], _question_table(b, [proxy])[proxy]
        keys = sorted(set(ta) & set(tb))
        if keys:
            grouped = Clustered.of([tb[k] - ta[k] for k in keys], [k[0] for k in keys])
            icc = grouped.icc()
            return delta.with_(icc=icc, n_eff=effective_n(delta.n, grouped.k, icc))
    return delta


def _question_table(arm: Arm, metrics: Sequence[str]) -> dict[str, dict[tuple[str, str], float]]:
    """Per metric, one value per (scope, question) with the arm's repeats reduced."""
    reducer = repeat_reducer(arm.run)
    out = {}
    for m in metrics:
        keys, vals, _ = question_values(arm.rows, m, reducer)
        out[m] = dict(zip(keys, vals, strict=True))
    return out


def _per_question_results(a: Arm, b: Arm, metrics: Sequence[str], confidence: float,
                          resamples: int) -> dict[str, PairedResult]:
    """Every per-question metric of the pair over one shared set of replicates, seeded by both
    arms' values (the same seed for A/B and B/A)."""
    if not metrics:
        return {}
    ta, tb = _question_table(a, metrics), _question_table(b, metrics)
    keys = sorted({k for m in metrics for k in ta[m] if k in tb[m]})
    if not keys:
        return {m: PairedResult(m, 0, None, None, unknown(0, "paired"), None, "none")
                for m in metrics}
    xa = np.array([[ta[m].get(k, np.nan) for m in metrics] for k in keys], dtype=float)
    xb = np.array([[tb[m].get(k, np.nan) for m in metrics] for k in keys], dtype=float)
    deltas = xb - xa
    clusters = [k[0] for k in keys]
    seed = symmetric_seed("pair", content_seed("arm", keys, *xa.T), content_seed("arm", keys,
                                                                                  *xb.T))
    def column_mean(j: int) -> Callable[[Any], Any]:
        return lambda w: weighted_means(deltas[:, j], w)

    dists = replicate({m: column_mean(j) for j, m in enumerate(metrics)}, clusters, seed=seed,
                      resamples=resamples)
    out = {}
    for j, m in enumerate(metrics):
        ok = np.isfinite(deltas[:, j])
        n = int(ok.sum())
        if n == 0:
            out[m] = PairedResult(m, 0, None, None, unknown(0, "paired"), None, "none")
            continue
        est, p_boot, mc = delta_from_replicates(deltas[:, j], dists[m], clusters,
                                                confidence=confidence)
        va, vb = list(xa[ok, j]), list(xb[ok, j])
        mean_a, mean_b = float(np.mean(va)), float(np.mean(vb))
        if is_binary([*va, *vb]):
            out[m] = PairedResult(m, n, mean_a, mean_b, est, mcnemar_exact(va, vb).p_value,
                                  "mcnemar-exact", p_mc_error=0.0)
        else:
            out[m] = PairedResult(m, n, mean_a, mean_b, est, p_boot, "paired-bootstrap",
                                  p_mc_error=mc)
    return out


def _fmt(x: float) -> str:
    return f"{x:.3f}"


CONFIRMATORY: Final = "confirmatory"
EXPLORATORY: Final = "exploratory"


def compared_metrics(arms: Sequence[Arm], metrics: Sequence[str]) -> list[str]:
    """``metrics`` and the first search's ranking metrics that some arm has values for."""
    extra = [m for m in RETRIEVAL_COMPARED if m not in metrics
             and any(row.metric(m) is not None for arm in arms for row in arm.rows)]
    return [*metrics, *extra]


def _pair_results(a: Arm, b: Arm, metrics: Sequence[str], confidence: float,
                  resamples: int) -> tuple[list[PairedResult], tuple[int, int, int]]:
    rows_a = {r.match_key: r for r in a.rows}
    rows_b = {r.match_key: r for r in b.rows}
    common = sorted(set(rows_a) & set(rows_b))
    group = _group_results(a, b, common, metrics, rows_a, rows_b, confidence)
    plain = _per_question_results(a, b, [m for m in metrics if m not in group], confidence,
                                  resamples)
    counts = (len(common), len(set(rows_a) - set(rows_b)), len(set(rows_b) - set(rows_a)))
    return [group[m] if m in group else plain[m] for m in metrics], counts


def _own_estimates(pairs: Sequence[tuple[Arm, Arm]], metrics: Sequence[str], confidence: float,
                   own: Mapping[str, Mapping[str, Estimate]] | None
                   ) -> Mapping[str, Mapping[str, Estimate]]:
    """The caller's per-arm estimates when they cover every compared arm and metric, else
    computed afresh for the arms in ``pairs``."""
    paired = list({id(x): x for pair in pairs for x in pair}.values())
    if own is None or any(arm.name not in own or m not in own[arm.name]
                          for arm in paired for m in metrics):
        own = {arm.name: arm_estimates(arm, metrics, confidence) for arm in paired}
    return own


def _comparison_row(
    res: PairedResult, own: tuple[Estimate, Estimate], *, p_adj: float | None,
    bounded_p_holm: float | None, test: BoundedTest | None,
    family: Literal["confirmatory", "exploratory"], family_size: int,
    noise_floor: float | None, alpha: float,
) -> ComparisonRow:
    """One metric's row of a pair: its corrected figures and the verdict they decide."""
    ma, mb = own[0].half_width, own[1].half_width
    floor = noise_floor if is_judge_metric(res.metric) else None
    ci = ((res.delta.low, res.delta.high)
          if res.delta.low is not None and res.delta.high is not None else None)
    mc = holm_mc_error(res.p_value, p_adj, res.p_mc_error)
    verdict, rule, reason = decide(Evidence(
        delta=res.delta.mean, margins=(ma, mb), floor=floor, p_holm=p_adj, alpha=alpha,
        interval=ci, mc_error=mc, bounded_p_holm=bounded_p_holm,
        scopes=test.scopes if test else 0, alpha_each=alpha / family_size,
        bound=registry.difference_bound(res.metric), family_size=family_size))
    return ComparisonRow(
        metric=res.metric, pairs=res.n, mean_a=res.mean_a, mean_b=res.mean_b,
        delta=EstimateOut.of(res.delta), test=res.test, p_value=res.p_value,
        p_holm=p_adj, p_mc_error=mc, margin_a=ma, margin_b=mb, noise_floor=floor,
        verdict=verdict, reason=reason, rule=rule, family=family,
        scopes=test.scopes if test else None,
        bounded_p=test.p_value if test else None, bounded_p_holm=bounded_p_holm,
    )


def compare_pairs(
    arms: Sequence[Arm], metrics: Sequence[str], *, noise_floor: float | None,
    not_comparable: Sequence[str] = (), confidence: float = 0.95, alpha: float = 0.05,
    resamples: int = TEST_RESAMPLES, own: Mapping[str, Mapping[str, Estimate]] | None = None,
    pairs: Sequence[tuple[Arm, Arm]] | None = None,
) -> list[Comparison]:
    """The ``pairs`` of arms (default every pair, B against A = an earlier arm; Δ = B − A).
    The first metric is the primary one: Holm's correction runs over the pairs on it alone
    (the confirmatory family, so exactly the pairs compared); the other metrics form the
    exploratory family, Holm-corrected among themselves. ``own`` may carry each arm's
    estimates (by arm name) when the caller has them already."""
    pairs = list(combinations(arms, 2)) if pairs is None else list(pairs)
    results = [_pair_results(a, b, metrics, confidence, resamples) for a, b in pairs]
    flat = [r for res, _ in results for r in res]
    primary = metrics[0] if metrics else None
    families = [CONFIRMATORY if r.metric == primary else EXPLORATORY for r in flat]
    size = {f: families.count(f) for f in families}
    owners = [pair for pair, (res, _) in zip(pairs, results, strict=True) for _ in res]
    bounded = [_bounded(a, b, r.metric, alpha / size[f])
               for (a, b), r, f in zip(owners, flat, families, strict=True)]
    adjusted = iter(holm_by_family([r.p_value for r in flat], families))
    bounded_adjusted = iter(holm_by_family([t.p_value if t else None for t in bounded],
                                           families))
    tests = iter(bounded)
    own = _own_estimates(pairs, metrics, confidence, own)
    out = []
    for (a, b), (res_list, counts) in zip(pairs, results, strict=True):
        rows = []
        for res in res_list:
            p_adj, b_adj, test = next(adjusted), next(bounded_adjusted), next(tests)
            family: Literal["confirmatory", "exploratory"] = (
                CONFIRMATORY if res.metric == primary else EXPLORATORY)
            rows.append(_comparison_row(
                res, (own[a.name][res.metric], own[b.name][res.metric]), p_adj=p_adj,
                bounded_p_holm=b_adj, test=test, family=family, family_size=size[family],
                noise_floor=noise_floor, alpha=alpha))
        out.append(Comparison(arm_a=a.name, arm_b=b.name, pairs=counts[0],
                              unmatched_a=counts[1], unmatched_b=counts[2],
                              not_comparable=list(not_comparable), rows=rows))
    return out


def _bounded(a: Arm, b: Arm, metric: str, alpha_each: float) -> BoundedTest | None:
    """The bounded-mean test over the pair's scope differences of ``metric`` (None when no
    scope has a value for both arms)."""
    _, table = scope_table([a, b], metric)
    if not table.size:
        return None
    diffs = table[:, 1] - table[:, 0]
    diffs = diffs[np.isfinite(diffs)]
    if not len(diffs):
        return None
    return bounded_test(list(diffs), alpha=alpha_each, bound=registry.difference_bound(metric))


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
    return compare_pairs([a, b], metrics, noise_floor=noise_floor,
                         not_comparable=not_comparable, confidence=confidence, alpha=alpha)[0]


def noise_floor_of(runs: Sequence[RunData]) -> float | None:
    """The largest judge disagreement rate among the runs: the conservative noise floor."""
    rates = [r.judge_disagreement for r in runs if r.judge_disagreement is not None]
    return max(rates) if rates else None


def compare_against_first(
    arms: Sequence[Arm], metrics: Sequence[str], *, noise_floor: float | None,
    not_comparable: Sequence[str] = (), confidence: float = 0.95,
) -> list[Comparison]:
    """The comparisons a report shows: every pair of arms, the first arm first (so with two
    arms, the second against the first), on ``metrics`` and the first search's ranking."""
    return compare_pairs(arms, compared_metrics(arms, metrics), noise_floor=noise_floor,
                         not_comparable=not_comparable, confidence=confidence)


def _scope_table(arms: Sequence[Arm], metric: str) -> np.ndarray:
    """(scopes, arms) scope means of a metric over the questions every arm has a value for."""
    return scope_table(arms, metric)[1]


def scope_table(arms: Sequence[Arm], metric: str) -> tuple[list[str], np.ndarray]:
    """The scopes (sorted) and their (scopes, arms) means of a metric over the questions every
    arm has a value for (a group metric such as the composite is computed per scope)."""
    if metric in registry.interval_group_metrics():
        return _group_scope_table(arms, metric)
    tables = [_question_table(arm, [metric])[metric] for arm in arms]
    keys = sorted(set.intersection(*(set(t) for t in tables)))
    scopes = sorted({k[0] for k in keys})
    out = np.full((len(scopes), len(arms)), np.nan)
    for i, s in enumerate(scopes):
        inside = [k for k in keys if k[0] == s]
        for j, t in enumerate(tables):
            out[i, j] = float(np.mean([t[k] for k in inside]))
    return scopes, out


def _group_scope_table(arms: Sequence[Arm], metric: str) -> tuple[list[str], np.ndarray]:
    if any(arm.run.scores is None for arm in arms):
        return [], np.empty((0, len(arms)))
    rows = [{r.match_key: r.scores for r in arm.rows if r.scores is not None} for arm in arms]
    keys = sorted(set.intersection(*(set(r) for r in rows)))
    scopes = sorted({k[0] for k in keys})
    out = np.full((len(scopes), len(arms)), np.nan)
    for j, arm in enumerate(arms):
        how = GroupScoring.of(arm.run.scores)  # type: ignore[arg-type]  # rows have scores
        for i, s in enumerate(scopes):
            value = how.point([rows[j][k] for k in keys if k[0] == s])[metric]
            out[i, j] = np.nan if value is None else value
    return scopes, out


def many_arms(arms: Sequence[Arm], metrics: Sequence[str]) -> list[ManyArms]:
    """Friedman's test across scopes, and Kendall's W, for each metric with three or more
    arms; scopes where a metric is undefined for some arm are left out."""
    if len(arms) < 3:
        return []
    out = []
    for m in metrics:
        table = _scope_table(arms, m)
        table = table[np.isfinite(table).all(axis=1)] if table.size else table
        result = friedman(table)
        if result is None:
            continue
        out.append(ManyArms(metric=m, arms=[a.name for a in arms], scopes=result.blocks,
                            statistic=result.statistic, df=result.df, p_value=result.p_value,
                            kendall_w=result.kendall_w))
    return out
