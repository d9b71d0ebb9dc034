"""lens's own protocol: tiers 1-3 per question (the metric registry's computed metrics, the
judge's pairwise metrics and fact grades), aggregates and the composite. It scores on the one
path of :mod:`lens.scoring.protocols.run`, as the published protocols do: the errata, the rows,
the judge summary, the condition and ``scoring_done`` are the path's.

Every number is a function of the stored records, the dataset's ground truth and the judge's
verdicts (kept in the run's events), so a run can be re-scored, with another judge too, without
re-running any agent; re-scoring with the same judge makes no new model call.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import lens.scoring.grading.fact_grader as grading
import lens.scoring.judging.pairwise as pairwise
import lens.scoring.measures.mechanical as mechanical
import lens.scoring.measures.retrieval as retrieval
import lens.scoring.metrics as registry
from lens.data.dataset import QuestionType
from lens.data.scoring_names import JUDGE_GRADERS
from lens.scoring.aggregation.aggregate import aggregate
from lens.scoring.aggregation.composite import composite
from lens.scoring.foundations.run_input import RunInput, ScoringItem, by_scope
from lens.scoring.foundations.types import QuestionScores
from lens.scoring.grading.fact_credit import (
    apply_judge_grades,
    apply_offline,
    offline_grades,
    vetoed_facts,
)
from lens.scoring.grading.offline_grader import FactGrade
from lens.scoring.judging.judge import Judge, JudgeTask, Verdict
from lens.scoring.judging.judge_prompts import judge_prompts_hash
from lens.scoring.plan import ScoringPlan
from lens.scoring.protocols.run import (
    JudgeRun,
    Scored,
    Scoring,
    ScoringProtocol,
    judge_summary,
    question_row,
)
from lens.scoring.score_notes import scoring_notes
from lens.scoring.text.facts import FactMatcherSettings

NAME = "lens"
ACTION = QuestionType.ACTION_RECOMMENDATION.value


class _JudgeTasks:
    """The judge tasks of one scoring, by question."""

    def __init__(self) -> None:
        self.quality: dict[str, list[pairwise.Comparison]] = {}
        self.action: dict[str, list[pairwise.Comparison]] = {}
        self.facts: dict[str, dict[str, JudgeTask]] = {}

    def tasks(self) -> list[JudgeTask]:
        out: list[JudgeTask] = []
        for group in (self.quality, self.action):
            for comps in group.values():
                for c in comps:
                    out += [c.candidate_first, c.canonical_first]
        for checks in self.facts.values():
            out += list(checks.values())
        return out


def _compute(specs: tuple[registry.MetricSpec, ...], item: ScoringItem,
             matcher: FactMatcherSettings, analysis: mechanical.Analysis,
             row: QuestionScores) -> None:
    """The registry's computed metrics on one answered question's row, in order."""
    for spec in specs:
        assert spec.compute is not None
        value, detail = spec.compute(registry.MetricInput(item, matcher, analysis, row.metrics))
        row.metrics[spec.name] = value
        row.detail[spec.name] = detail


def _judged(row: QuestionScores, name: str, comps: list[pairwise.Comparison] | None,
            verdicts: dict[str, Verdict] | None, model: str, empty: bool) -> tuple[int, int]:
    """Set a pairwise metric on ``row`` (unknown when no judge ran: ``verdicts`` None);
    return (pairs, disagreements) counted."""
    if verdicts is None:
        row.metrics[name] = None
        return 0, 0
    if empty:
        row.metrics[name] = 0.0
        row.detail[name] = {"reason": "empty answer: it establishes nothing (no judge call)"}
        return 0, 0
    if comps is None:
        return 0, 0
    result = pairwise.score(comps, verdicts, model)
    row.metrics[name] = result.value
    row.detail[name] = result.as_detail()
    return result.pairs, result.disagreements


def _mechanical(item: ScoringItem, row: QuestionScores, tiers: frozenset[int],
                matcher: FactMatcherSettings) -> mechanical.Analysis:
    """The metrics computed before the judge (tier 1, then the higher tiers scored), for one
    answered question."""
    analysis = mechanical.analyse(item)
    _compute(registry.computed({1}, after_judge=False), item, matcher, analysis, row)
    row.detail["retrieval"] = retrieval.question_retrieval(
        item.record, item.question.ground_truth.required_evidence_refs)
    _compute(registry.computed(set(tiers - {1}), after_judge=False), item, matcher, analysis,
             row)
    return analysis


def _plan_judge(item: ScoringItem, analysis: mechanical.Analysis, plan: ScoringPlan,
                tasks: _JudgeTasks) -> None:
    """The judge tasks one answered, non-empty question needs."""
    if plan.fact_grader in JUDGE_GRADERS:
        # The judge grades the answer's claims, not the record text it pasted.
        claims = dataclasses.replace(item, record=item.record.model_copy(
            update={"answer": analysis.claims.text}))
        if checks := grading.grade_tasks(claims):
            tasks.facts[item.key] = checks
    if 2 in plan.tiers:
        tasks.quality[item.key] = pairwise.comparisons(item)
    if 3 in plan.tiers and item.question.question_type.value == ACTION:
        tasks.action[item.key] = pairwise.comparisons(item, action=True)


@dataclasses.dataclass(frozen=True)
class _FirstPass:
    """Every question's row, each answered question's analysis, and the judge tasks to run."""

    rows: dict[str, QuestionScores]
    analyses: dict[str, mechanical.Analysis]
    tasks: _JudgeTasks


def _first_pass(run: RunInput, plan: ScoringPlan, use_judge: bool) -> _FirstPass:
    """Every question's row with its mechanical metrics, each answered question's analysis,
    and the judge tasks to run."""
    rows: dict[str, QuestionScores] = {}
    analyses: dict[str, mechanical.Analysis] = {}
    tasks = _JudgeTasks()
    for item in by_scope(run.items):
        row = rows[item.key] = question_row(item)
        if not item.answered:
            row.detail["error"] = item.record.error or "error"
            continue
        analyses[item.key] = _mechanical(item, row, plan.tiers, plan.matcher)
    if use_judge:
        # In the run's order: the judge's tasks are listed as they always were.
        for item in run.items:
            if item.key in analyses and item.record.answer.strip():
                _plan_judge(item, analyses[item.key], plan, tasks)
    return _FirstPass(rows, analyses, tasks)


def _judge_metrics(item: ScoringItem, row: QuestionScores, plan: ScoringPlan, use_judge: bool,
                   tasks: _JudgeTasks, verdicts: dict[str, Verdict], model: str
                   ) -> tuple[int, int]:
    """Tier 2 and 3's judged metrics, and the judge's fact grades, on one row; return
    (pairs, disagreements)."""
    empty = not item.record.answer.strip()
    judged = verdicts if use_judge else None
    pairs = flips = 0
    if 2 in plan.tiers:
        pairs, flips = _judged(row, "answer_quality", tasks.quality.get(item.key), judged,
                               model, empty)
    if item.key in tasks.facts:
        apply_judge_grades(row, tasks.facts[item.key], verdicts, model, plan.fact_grader)
    if 3 in plan.tiers and item.question.question_type.value == ACTION:
        p, f = _judged(row, "action_quality", tasks.action.get(item.key), judged, model, empty)
        pairs, flips = pairs + p, flips + f
    return pairs, flips


def _finish_row(row: QuestionScores, weights: dict[str, float], gate_threshold: float,
                pairs: int, flips: int) -> None:
    """Every metric present (None where unknown), and the composite."""
    row.detail["judge"] = {"pairs": pairs, "disagreements": flips}
    for name in registry.metric_names():
        row.metrics.setdefault(name, None)
    comp = composite(row.metrics, weights, gate_threshold)
    row.metrics["composite"] = comp.value
    row.detail["composite"] = {"missing": comp.missing, "gated": comp.gated,
                               "renormalised": comp.renormalised}


Grades = dict[str, dict[str, FactGrade]]


async def _offline(run: RunInput, plan: ScoringPlan, first: _FirstPass
                   ) -> tuple[Grades, dict[str, Any] | None, list[str]]:
    """The offline grader's fact grades (when it grades the facts), its condition, and the note
    saying how many grades failed."""
    if plan.fact_grader != "local":
        return {}, None, []
    grades, condition = await offline_grades(run, plan.offline, plan.cache, first.analyses,
                                             vetoed_facts(first.rows))
    failed = [g for gs in grades.values() for g in gs.values() if g.grade is None]
    if not failed:
        return grades, condition, []
    return grades, condition, [
        f"{len(failed)} offline fact grade(s) failed: the questions concerned have no "
        f"fact_recall; run lens score again to retry (first error: {failed[0].reason})"]


async def _ask_judge(run: RunInput, plan: ScoringPlan, tasks: _JudgeTasks
                     ) -> tuple[Judge, dict[str, Verdict]]:
    assert plan.judge is not None
    judge = Judge(plan.judge, run.store, concurrency=plan.judge_concurrency())
    return judge, await judge.run(tasks.tasks())


def _second_pass(run: RunInput, plan: ScoringPlan, first: _FirstPass, grades: Grades,
                 offline_condition: dict[str, Any] | None, judge: Judge | None,
                 verdicts: dict[str, Verdict]) -> tuple[int, int]:
    """Each answered question's judged metrics, fact grades, metrics computed after the judge
    and composite; return the (pairs, disagreements) counted over the run."""
    rows, analyses, tasks = first.rows, first.analyses, first.tasks
    model = judge.model if judge else ""
    total_pairs = total_flips = 0
    after_judge = registry.computed(set(plan.tiers), after_judge=True)
    for item in by_scope(run.items):
        if not item.answered:
            continue
        row = rows[item.key]
        pairs, flips = _judge_metrics(item, row, plan, judge is not None, tasks, verdicts,
                                      model)
        if item.key in grades:
            apply_offline(row, grades[item.key], offline_condition or {})
        _compute(after_judge, item, plan.matcher, analyses[item.key], row)
        _finish_row(row, plan.weights, plan.gate_threshold, pairs, flips)
        total_pairs += pairs
        total_flips += flips
    return total_pairs, total_flips


def _settings(plan: ScoringPlan, judged: bool, offline_condition: dict[str, Any] | None
              ) -> dict[str, Any]:
    # Every field of the matcher's settings, whatever fields it grows, and its rules' version:
    # each is a condition; so are the fact grader and the judge's prompts.
    settings: dict[str, Any] = {"fact_matcher": plan.matcher.as_condition(),
                                "fact_grader": plan.fact_grader,
                                "judge_prompts": judge_prompts_hash() if judged else None,
                                "subset": plan.subset}
    if offline_condition is not None:
        # The offline grader's model, prompt and threshold: another grades differently.
        settings["offline_grader"] = offline_condition
    return settings


class LensProtocol(ScoringProtocol):
    """lens's own metrics: tiers 1-3 per question, aggregates and the composite. A question the
    errata exclude leaves the scores altogether."""

    name = NAME

    async def score_questions(self, scoring: Scoring) -> Scored:
        plan = scoring.plan
        run = dataclasses.replace(scoring.run, items=scoring.kept())
        use_judge = plan.judge is not None and bool(plan.tiers & {2, 3})
        first = _first_pass(run, plan, use_judge)
        grades, offline_condition, offline_notes = await _offline(run, plan, first)
        judge, verdicts = (await _ask_judge(run, plan, first.tasks) if use_judge
                           else (None, {}))
        pairs, flips = _second_pass(run, plan, first, grades, offline_condition, judge,
                                    verdicts)
        tiers = set(plan.tiers)
        ordered = [first.rows[it.key] for it in run.items]
        aggregates, agg_detail = aggregate(ordered, weights=plan.weights,
                                           gate_threshold=plan.gate_threshold, tiers=tiers)
        judged = (JudgeRun(judge.model, judge.usage, list(verdicts.values()), pairs, flips,
                           fact_checks=plan.fact_grader != "matcher") if judge else None)
        notes = [*offline_notes,
                 *scoring_notes(run, ordered, aggregates, agg_detail, tiers, judge,
                                judge_summary(judged), plan.fact_grader),
                 *([scoring.report.note()] if scoring.report is not None else [])]
        return Scored(questions=ordered, aggregates=aggregates,
                      settings=_settings(plan, judge is not None, offline_condition),
                      notes=notes, judge=judged, tiers=frozenset(tiers), weights=plan.weights,
                      gate_threshold=plan.gate_threshold, aggregate_detail=agg_detail)
