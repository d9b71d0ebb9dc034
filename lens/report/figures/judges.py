"""Judge sensitivity in a report: every judged metric per judge and as a range, comparisons
that hold only when they hold under every judge, and the judges' agreement with each other.

The run's own numbers are the primary judge's (``scores.json``); each extra judge's scores
(``RUN_DIR/judge_scores/``, lens.scoring.judging.judge_panel) give the same run seen by that judge.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from itertools import combinations

import lens.scoring.metrics as registry
from lens.data.scoring_names import JUDGE_GRADERS
from lens.report.figures.estimates import estimates
from lens.report.figures.verdicts import DIFFERENT
from lens.report.foundations.data import QuestionRow, RunData, is_judge_metric
from lens.report.foundations.judge_shapes import JudgePanelOut, JudgeRange, PairAgreement
from lens.report.foundations.shapes import Comparison
from lens.scoring.foundations.types import RunScores
from lens.scoring.judging.judge_panel import load_panel, verdict_units
from lens.stats import agreement


def with_scores(run: RunData, scores: RunScores) -> RunData:
    """The same run seen through other scores (another judge's)."""
    by_key = {q.key: q for q in scores.questions}
    rows = [QuestionRow(record=r.record, scores=by_key.get(r.record.key), context=r.context)
            for r in run.rows]
    return dataclasses.replace(run, rows=rows, scores=scores)


def judge_views(run: RunData) -> tuple[dict[str, RunData], list[str]]:
    """The run under each judge of its panel, the primary first; and why a stored judge is
    left out. One entry (or none) when the run has one judge."""
    panel = load_panel(run.root, run.scores)
    views = {label: (run if i == 0 else with_scores(run, scores))
             for i, (label, scores) in enumerate(panel.scores.items())}
    return views, panel.notes


def judged_metrics(run: RunData, metrics: Sequence[str]) -> list[str]:
    """The metrics whose value rests on the judge."""
    graded = bool(run.scores and run.scores.settings.get("fact_grader") in JUDGE_GRADERS)
    # A metric resting on the fact grades rests on the judge when it grades the facts.
    fact_graded = registry.fact_graded_metrics()
    return [m for m in metrics if is_judge_metric(m) or (graded and m in fact_graded)]


def _differs(views: dict[str, RunData], metric: str) -> bool:
    seen = [{r.record.key: r.metric(metric) for r in view.rows} for view in views.values()]
    return any(other != seen[0] for other in seen[1:])


def _range(values: dict[str, float | None]) -> JudgeRange:
    known = [v for v in values.values() if v is not None]
    whole = len(known) == len(values) and bool(known)
    return JudgeRange(by_judge=values, low=min(known) if whole else None,
                      high=max(known) if whole else None)


def _agreement(label_a: str, a: RunScores, label_b: str, b: RunScores) -> PairAgreement:
    ua, ub = verdict_units(a), verdict_units(b)
    common = sorted(set(ua) & set(ub))
    overall = agreement([ua[k] for k in common], [ub[k] for k in common])
    by_kind = {}
    for kind in sorted({k[1] for k in common}):
        keys = [k for k in common if k[1] == kind]
        ag = agreement([ua[k] for k in keys], [ub[k] for k in keys])
        by_kind[kind] = {"items": ag.n, "agree": ag.agree, "rate": ag.rate, "kappa": ag.kappa}
    return PairAgreement(judge_a=label_a, judge_b=label_b, items=overall.n, agree=overall.agree,
                         rate=overall.rate, kappa=overall.kappa, by_kind=by_kind)


def judge_panel(run: RunData, metrics: Sequence[str], views: dict[str, RunData],
                notes: Sequence[str], confidence: float = 0.95) -> JudgePanelOut | None:
    """Each judged metric per adapter under every judge, with its range, and each pair of
    judges' agreement; None with fewer than two judges (unless a stored judge was left out,
    which is said)."""
    if len(views) < 2:
        if not notes:
            return None
        return JudgePanelOut(judges=list(views), metrics=[], ranges={}, notes=list(notes))
    # The metrics that rest on the judge by definition, and any other whose per-question
    # values differ between judges (a protocol's judged accuracy, say).
    named = judged_metrics(run, metrics)
    wanted = [m for m in metrics if m in named or _differs(views, m)]
    ranges: dict[str, dict[str, JudgeRange]] = {}
    for adapter in run.adapters:
        per_judge = {label: estimates(view, view.rows_for(adapter), wanted,
                                      confidence=confidence)
                     for label, view in views.items()}
        ranges[adapter] = {m: _range({label: per_judge[label][m].mean for label in views})
                           for m in wanted}
    scores = {label: view.scores for label, view in views.items() if view.scores is not None}
    pairs = [_agreement(a, scores[a], b, scores[b]) for a, b in combinations(scores, 2)]
    return JudgePanelOut(judges=list(views), metrics=wanted, ranges=ranges, agreement=pairs,
                         notes=list(notes))


def hold_under_every_judge(comparisons: list[Comparison],
                           by_judge: dict[str, list[Comparison]]) -> list[Comparison]:
    """The comparisons (made under the primary judge, the first of ``by_judge``) with each
    judge-dependent row's verdict under every judge; a difference that any judge does not
    give becomes undecided, saying so. A row is judge-dependent when its metric rests on the judge
    or its means differ under some judge; other rows are the same under every judge and keep
    their verdict (their Holm-adjusted p-value may move with the judged rows of the family,
    which is no reason to doubt them)."""
    if len(by_judge) < 2:
        return comparisons
    index = {label: {(c.arm_a, c.arm_b, r.metric): r for c in comps for r in c.rows}
             for label, comps in by_judge.items()}
    out = []
    for comp in comparisons:
        rows = []
        for row in comp.rows:
            verdicts = {}
            moved = False
            for label, rows_of in index.items():
                other = rows_of.get((comp.arm_a, comp.arm_b, row.metric))
                verdicts[label] = other.verdict if other is not None else "unknown"
                moved = moved or other is None or (other.mean_a, other.mean_b) != (
                    row.mean_a, row.mean_b)
            if not (moved or is_judge_metric(row.metric)):
                rows.append(row)
                continue
            update: dict[str, object] = {"by_judge": verdicts}
            dissent = [(label, v) for label, v in verdicts.items() if v != row.verdict]
            if row.verdict in DIFFERENT and dissent:
                shown = "; ".join(f"{v} under {label}" for label, v in dissent)
                update |= {"verdict": "undecided", "rule": "judges",
                           "reason": f"judges disagree: {row.verdict} under "
                                     f"{next(iter(verdicts))} but {shown}"}
            rows.append(row.model_copy(update=update))
        out.append(comp.model_copy(update={"rows": rows}))
    return out


def compare_under_judges(
    runs: Sequence[RunData], compare: Callable[[Sequence[RunData]], list[Comparison]],
    primary: list[Comparison],
) -> tuple[dict[str, list[Comparison]], list[str]]:
    """The comparisons under each judge every run has: ``primary`` (made already) under the
    primary judge, ``compare`` of the runs seen by each other judge. Judges only some runs
    have are named in the notes."""
    per_run = [judge_views(r) for r in runs]
    notes = [n for _, ns in per_run for n in ns]
    labels = [label for label in per_run[0][0]
              if all(label in views for views, _ in per_run)]
    missing = sorted({label for views, _ in per_run for label in views} - set(labels))
    if missing:
        notes.append(f"judge(s) {', '.join(missing)} scored only some of the runs: the "
                     "comparison does not rest on them")
    out = {}
    for i, label in enumerate(labels):
        out[label] = primary if i == 0 else compare([views[label] for views, _ in per_run])
    return out, notes
