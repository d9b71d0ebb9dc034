"""lens's own protocol: tiers 1-3 per question (the metric registry's computed metrics, the
judge's pairwise metrics and fact grades), aggregates and the composite.

Every number is a function of the stored records, the dataset's ground truth and the judge's
verdicts (kept in the run's events), so a run can be re-scored, with another judge too, without
re-running any agent; re-scoring with the same judge makes no new model call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import lens.scoring.grading.fact_grader as grading
import lens.scoring.judging.pairwise as pairwise
import lens.scoring.measures.mechanical as mechanical
import lens.scoring.measures.retrieval as retrieval
import lens.scoring.metrics as registry
from lens.data.dataset import QuestionType
from lens.data.scoring_names import JUDGE_GRADERS
from lens.runs.condition import stable_hash
from lens.scoring.condition import scoring_condition
from lens.scoring.errata import Errata, apply_errata
from lens.scoring.grading.fact_credit import apply_judge_grades, apply_offline, offline_grades
from lens.scoring.judging.judge import Judge, JudgeTask, Verdict, verdict_totals
from lens.scoring.judging.judge_prompts import judge_prompts_hash
from lens.scoring.measures.aggregate import aggregate
from lens.scoring.measures.composite import composite
from lens.scoring.plan import ScoringOutcome, ScoringPlan
from lens.scoring.run_input import RunInput, ScoringItem, by_scope
from lens.scoring.score_notes import scoring_notes
from lens.scoring.text.facts import FactMatcherSettings
from lens.scoring.types import JudgeSummary, QuestionScores, RunScores

NAME = "lens"
ACTION = QuestionType.ACTION_RECOMMENDATION.value


def _row(item: ScoringItem) -> QuestionScores:
    r = item.record
    return QuestionScores(key=r.key, unit_key=r.unit_key, adapter=r.adapter, scope_id=r.scope_id,
                          repeat=r.repeat, question_id=r.question_id,
                          question_type=item.question.question_type.value,
                          checkpoint=r.checkpoint, status=r.status)


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
            verdicts: dict[str, Verdict], model: str, empty: bool) -> tuple[int, int]:
    """Set a pairwise metric on ``row``; return (pairs, disagreements) counted."""
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


def _first_pass(run: RunInput, plan: ScoringPlan, use_judge: bool
                ) -> tuple[dict[str, QuestionScores], dict[str, mechanical.Analysis],
                           _JudgeTasks]:
    """Every question's row with its mechanical metrics, each answered question's analysis,
    and the judge tasks to run."""
    rows: dict[str, QuestionScores] = {}
    analyses: dict[str, mechanical.Analysis] = {}
    tasks = _JudgeTasks()
    for item in by_scope(run.items):
        row = rows[item.key] = _row(item)
        if not item.answered:
            row.detail["error"] = item.record.error or "error"
            continue
        analyses[item.key] = _mechanical(item, row, plan.tiers, plan.matcher)
    if use_judge:
        # In the run's order: the judge's tasks are listed as they always were.
        for item in run.items:
            if item.key in analyses and item.record.answer.strip():
                _plan_judge(item, analyses[item.key], plan, tasks)
    return rows, analyses, tasks


def _judge_metrics(item: ScoringItem, row: QuestionScores, plan: ScoringPlan, use_judge: bool,
                   tasks: _JudgeTasks, verdicts: dict[str, Verdict], model: str
                   ) -> tuple[int, int]:
    """Tier 2 and 3's judged metrics, and the judge's fact grades, on one row; return
    (pairs, disagreements)."""
    empty = not item.record.answer.strip()
    pairs = flips = 0
    if 2 in plan.tiers:
        if use_judge:
            p, f = _judged(row, "answer_quality", tasks.quality.get(item.key), verdicts, model,
                           empty)
            pairs, flips = pairs + p, flips + f
        else:
            row.metrics["answer_quality"] = None
    if item.key in tasks.facts:
        apply_judge_grades(row, tasks.facts[item.key], verdicts, model, plan.fact_grader)
    if 3 in plan.tiers and item.question.question_type.value == ACTION:
        if use_judge:
            p, f = _judged(row, "action_quality", tasks.action.get(item.key), verdicts, model,
                           empty)
            pairs, flips = pairs + p, flips + f
        else:
            row.metrics["action_quality"] = None
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


def _with_errata(run: RunInput, errata: Errata) -> tuple[str, int]:
    """Apply the errata to the ground truth of ``run``'s items (dropping the questions they
    exclude); return the errata's note and how many entries touched the run."""
    fixed, report = apply_errata(run.dataset.questions, errata, dataset_id=run.dataset.dataset_id,
                                 dropped=[d.question_id for d in run.manifest.dataset.dropped])
    items = []
    for item in run.items:
        q = fixed.get((item.question.scope_id, item.question.question_id), item.question)
        if q is not None:
            items.append(dataclasses.replace(item, question=q))
    run.items = items
    return report.note(), report.touched


async def score_lens(run: RunInput, plan: ScoringPlan, errata: Errata | None,
                     notes: Sequence[str] = ()) -> ScoringOutcome:
    """Score ``run`` under lens's own metrics. ``plan.judge`` is the judge client (None: the
    judged metrics are unknown); ``notes`` go first among the scores' notes."""
    errata_note, touched = _with_errata(run, errata) if errata is not None else ("", 0)
    use_judge = plan.judge is not None and bool(plan.tiers & {2, 3})
    rows, analyses, tasks = _first_pass(run, plan, use_judge)
    grades, offline_condition = (await offline_grades(run, plan.offline, plan.cache,
                                                       analyses)
                                 if plan.fact_grader == "local" else ({}, None))
    extra_notes = list(notes)
    failed = sum(g.grade is None for gs in grades.values() for g in gs.values())
    if failed:
        first = next(g.reason for gs in grades.values() for g in gs.values()
                     if g.grade is None)
        extra_notes.append(f"{failed} offline fact grade(s) failed: the questions concerned "
                           f"have no fact_recall; run lens score again to retry (first error: "
                           f"{first})")
    verdicts: dict[str, Verdict] = {}
    judge_runner: Judge | None = None
    if use_judge:
        assert plan.judge is not None
        judge_runner = Judge(plan.judge, run.store, concurrency=plan.judge_concurrency())
        verdicts = await judge_runner.run(tasks.tasks())
    model = judge_runner.model if judge_runner else ""

    total_pairs = total_flips = 0
    after_judge = registry.computed(set(plan.tiers), after_judge=True)
    for item in by_scope(run.items):
        if not item.answered:
            continue
        row = rows[item.key]
        pairs, flips = _judge_metrics(item, row, plan, use_judge, tasks, verdicts, model)
        if item.key in grades:
            apply_offline(row, grades[item.key], offline_condition or {})
        _compute(after_judge, item, plan.matcher, analyses[item.key], row)
        _finish_row(row, plan.weights, plan.gate_threshold, pairs, flips)
        total_pairs += pairs
        total_flips += flips

    tiers = set(plan.tiers)
    ordered = [rows[it.key] for it in run.items]
    aggregates, agg_detail = aggregate(ordered, weights=plan.weights,
                                       gate_threshold=plan.gate_threshold, tiers=tiers)
    summary = _judge_summary(judge_runner, verdicts, total_pairs, total_flips,
                             plan.fact_grader != "matcher")
    # Every field of the matcher's settings, whatever fields it grows, and its rules' version:
    # each is a condition; so are the fact grader and the judge's prompts.
    settings: dict[str, Any] = {"fact_matcher": plan.matcher.as_condition(),
                                "fact_grader": plan.fact_grader,
                                "judge_prompts": judge_prompts_hash() if judge_runner else None,
                                "subset": plan.subset}
    if offline_condition is not None:
        # The offline grader's model, prompt and threshold: another grades differently.
        settings["offline_grader"] = offline_condition
    if errata is not None:
        settings["errata"] = errata.condition()
    cond = scoring_condition(tiers=tiers, weights=plan.weights,
                             gate_threshold=plan.gate_threshold, judge_model=model or None,
                             settings=settings)
    scores = RunScores(
        run_dir=str(run.run_dir), tiers=sorted(tiers), questions=ordered, judge=summary,
        weights=plan.weights, gate_threshold=plan.gate_threshold, aggregates=aggregates,
        aggregate_detail=agg_detail,
        notes=[*extra_notes,
               *scoring_notes(run, ordered, aggregates, agg_detail, tiers, judge_runner, summary,
                              plan.fact_grader),
               *([errata_note] if errata is not None else [])],
        settings=settings, condition=cond, condition_hash=stable_hash(cond),
    )
    usage = judge_runner.usage if judge_runner else None
    event: dict[str, Any] = {
        "tiers": sorted(tiers), "judge": model or None,
        "new_judge_calls": usage.calls if usage else 0,
        "reused_verdicts": usage.reused if usage else 0,
        "failed_judge_calls": usage.errors if usage else 0}
    if errata is not None:
        event.update(errata=errata.path.name, errata_touched=touched)
    return ScoringOutcome(scores, event)


def _judge_summary(judge: Judge | None, verdicts: dict[str, Verdict], pairs: int, flips: int,
                   graded_facts: bool) -> JudgeSummary:
    if judge is None:
        return JudgeSummary()
    totals = verdict_totals(verdicts.values())
    return JudgeSummary(
        model=judge.model, pairs=pairs, disagreements=flips,
        disagreement_rate=flips / pairs if pairs else None,
        errors=judge.usage.errors, fact_checks=graded_facts, **totals,
    )
