"""Turn a loaded run into its summary: estimates with intervals, usage, checks, comparisons."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from lens.report.checks.checklist import _scored_n, run_checklist
from lens.report.checks.parity import adapter_names, context_parity
from lens.report.figures.arm_comparison import (
    Arm,
    arms_of,
    compare_against_first,
    many_arms,
    noise_floor_of,
)
from lens.report.figures.estimates import estimates, report_metrics
from lens.report.figures.floor_ceiling import floor_ceiling
from lens.report.figures.judges import (
    compare_under_judges,
    hold_under_every_judge,
    judge_panel,
    judge_views,
)
from lens.report.figures.plan_spend import estimate_rows
from lens.report.figures.sequential import run_stop
from lens.report.foundations.data import QuestionRow, RunData
from lens.report.foundations.shapes import (
    AdapterSummary,
    CheckpointPoint,
    Comparison,
    EstimateOut,
    JudgeOut,
    ReportSummary,
    RoleUsage,
    SectionOut,
    Usage,
)
from lens.report.sections.registry import Section, collect_sections
from lens.stats import Estimate, bootstrap_mean, estimate, wilson

MAX_CHECKPOINT_POINTS = 10


def _out(ests: dict[str, Estimate]) -> dict[str, EstimateOut]:
    return {m: EstimateOut.of(e) for m, e in ests.items()}


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def usage_of(rows: Sequence[QuestionRow], confidence: float) -> Usage:
    # Cost is averaged over the questions whose every model call had a known price; how many
    # that is is reported beside it, so a partial figure never passes for a complete one.
    costs = _known_costs(rows)
    tokens = bootstrap_mean([float(r.agent_tokens) for r in rows],
                            [r.record.scope_id for r in rows], confidence=confidence)
    compliant, stop_reasons = _budgets(rows, confidence)
    return Usage(
        tool_calls_per_question=_mean([float(r.tool_calls) for r in rows]),
        search_results_per_question=_mean([float(r.search_results) for r in rows]),
        agent_tokens_per_question=EstimateOut.of(tokens),
        cost_usd_per_question=_mean(costs),
        cost_usd_total=_total_cost(costs, len(rows)),
        cost_known=len(costs),
        wall_s_per_question=_mean([r.record.wall_s for r in rows]),
        budget_compliant=compliant,
        stop_reasons=stop_reasons,
        tool_errors=sum(r.tool_errors for r in rows),
        questions_with_tool_errors=sum(1 for r in rows if r.tool_errors),
        first_tool_error=_first_tool_error(rows),
        unknown_usage_calls=_unknown_usage_calls(rows),
    )


def _known_costs(rows: Sequence[QuestionRow]) -> list[float]:
    """The costs of the questions whose every model call had a known price."""
    return [c for c in (r.cost_usd for r in rows) if c is not None]


def _total_cost(costs: Sequence[float], questions: int) -> float | None:
    """The total, only when every question's cost is known."""
    return float(sum(costs)) if costs and len(costs) == questions else None


def _first_tool_error(rows: Sequence[QuestionRow]) -> str | None:
    return next((e for r in rows if (e := r.first_tool_error)), None)


def _budgets(rows: Sequence[QuestionRow], confidence: float
             ) -> tuple[EstimateOut, dict[str, int]]:
    """The share of budgeted questions that kept to their budget (clustered by scope), and how
    many stopped for each reason, most first."""
    budgets = [(r.record.scope_id, r.record.budget) for r in rows if r.record.budget is not None]
    compliant = estimate([1.0 if b.compliant else 0.0 for _, b in budgets],
                         [s for s, _ in budgets], confidence=confidence)
    return (EstimateOut.of(compliant),
            dict(Counter(b.stop_reason for _, b in budgets).most_common()))


def _unknown_usage_calls(rows: Sequence[QuestionRow]) -> int:
    """The agent's model calls whose token usage the provider did not report."""
    return sum(1 for r in rows for c in r.record.model_calls
               if c.role == "agent" and c.usage_unknown)


def _checkpoint_bins(checkpoints: list[int]) -> list[tuple[int, int]]:
    """Checkpoints as (first, last) bins: each its own when few, else equal-width ranges."""
    distinct = sorted(set(checkpoints))
    if len(distinct) <= MAX_CHECKPOINT_POINTS:
        return [(c, c) for c in distinct]
    lo, hi = distinct[0], distinct[-1]
    width = (hi - lo + 1) / MAX_CHECKPOINT_POINTS
    bins = []
    for i in range(MAX_CHECKPOINT_POINTS):
        first = lo + round(i * width)
        last = lo + round((i + 1) * width) - 1
        if any(first <= c <= last for c in distinct):
            bins.append((first, last))
    return bins


def checkpoint_curve(run: RunData, rows: Sequence[QuestionRow], metric: str,
                     confidence: float, bins: list[tuple[int, int]]) -> list[CheckpointPoint]:
    points = []
    for first, last in bins:
        inside = [r for r in rows if first <= r.record.checkpoint <= last]
        est = estimates(run, inside, [metric], confidence=confidence)[metric]
        if est.n == 0:
            continue
        name = str(first) if first == last else f"{first}–{last}"
        points.append(CheckpointPoint(label=name, first=first, last=last,
                                      estimate=EstimateOut.of(est)))
    return points


def _run_level(run: RunData, label: str,
               ests: dict[str, EstimateOut]) -> dict[str, float | None]:
    """The scorer's figures of the arm that are not means over its questions (those are in
    ``ests``), without the counts, the composite's parts and the judge's disagreement."""
    if not run.scores:
        return {}
    agg = run.scores.aggregates.get("adapter", {}).get(label, {})
    return {k: v for k, v in agg.items()
            if k not in ests and k != "judge_disagreement_rate"
            and not k.startswith(("n_", "composite_"))}


def adapter_summary(run: RunData, label: str, metrics: list[str],
                    confidence: float) -> AdapterSummary:
    rows = run.rows_for(label)
    ests = _out(estimates(run, rows, metrics, confidence=confidence))
    types = sorted({r.question_type for r in rows})
    by_type = {t: _out(estimates(run, [r for r in rows if r.question_type == t], metrics,
                                 confidence=confidence))
               for t in types}
    primary = metrics[0] if metrics else None
    bins = _checkpoint_bins([r.record.checkpoint for r in run.rows])
    curve = checkpoint_curve(run, rows, primary, confidence, bins) if primary else []
    ended = Counter(r.record.status for r in rows)
    return AdapterSummary(
        label=label, questions=len(rows),
        answered=ended["answered"], errored=ended["error"],
        empty_answers=ended["empty_answer"], no_memory=ended["no_memory"],
        metrics=ests, run_level=_run_level(run, label, ests), by_type=by_type,
        by_checkpoint=curve,
        usage=usage_of(rows, confidence), context=context_parity(run, rows),
    )


def judge_of(run: RunData) -> JudgeOut:
    judge = run.scores.judge if run.scores else None
    if judge is None or judge.disagreement_rate is None or judge.pairs <= 0:
        return JudgeOut(model=judge.model if judge else None, pairs=judge.pairs if judge else 0,
                        disagreement_rate=None, agreement=EstimateOut.of(wilson(0, 0)))
    agree = round((1 - judge.disagreement_rate) * judge.pairs)
    return JudgeOut(model=judge.model, pairs=judge.pairs,
                    disagreement_rate=judge.disagreement_rate,
                    agreement=EstimateOut.of(wilson(agree, judge.pairs)))


def model_usage(run: RunData) -> dict[str, RoleUsage]:
    usage = run.manifest.get("usage")
    by_role = usage.get("by_role") if isinstance(usage, dict) else None
    if not isinstance(by_role, dict):
        return {}
    return {str(role): _role_usage(u) for role, u in by_role.items() if isinstance(u, dict)}


def _count(u: dict[str, Any], key: str) -> int:
    """A count of the manifest's usage block, 0 when absent."""
    return int(u.get(key) or 0)


def _role_usage(u: dict[str, Any]) -> RoleUsage:
    """One role's usage block of the manifest; its cost unknown when any call's was."""
    cost = u.get("cost_usd")
    return RoleUsage(
        calls=_count(u, "calls"), prompt_tokens=_count(u, "prompt_tokens"),
        completion_tokens=_count(u, "completion_tokens"),
        cost_usd=None if _count(u, "unknown_cost_calls") or cost is None else float(cost),
        cache_hits=_count(u, "cache_hits"), retries=_count(u, "retries"),
        errors=_count(u, "errors"),
        cached_prompt_tokens=None if u.get("cached_prompt_tokens") is None
        else int(u["cached_prompt_tokens"]),
        unknown_usage_calls=_count(u, "unknown_usage_calls"))


def _comparisons(run: RunData, arms: list[Arm], metrics: list[str], confidence: float,
                 judges: int, judge_notes: list[str]) -> tuple[list[Comparison], list[str]]:
    """Each arm against the first; under several judges, each verdict only where every judge
    gives it, with the judges' notes added."""
    if len(arms) <= 1:
        return [], judge_notes
    comparisons = compare_against_first(arms, metrics, noise_floor=noise_floor_of([run]),
                                        confidence=confidence)
    if not comparisons or judges <= 1:
        return comparisons, judge_notes
    by_judge, more = compare_under_judges(
        [run], lambda rs: compare_against_first(arms_of(rs), metrics,
                                                noise_floor=noise_floor_of(rs),
                                                confidence=confidence), comparisons)
    return (hold_under_every_judge(comparisons, by_judge),
            [*judge_notes, *(n for n in more if n not in judge_notes)])


def summarize(run: RunData, *, confidence: float = 0.95,
              sections: Sequence[Section] | None = None) -> ReportSummary:
    metrics = report_metrics(run)
    usage = model_usage(run)
    adapters = {a: adapter_summary(run, a, metrics, confidence) for a in run.adapters}
    arms = arms_of([run])
    views, judge_notes = judge_views(run)
    comparisons, judge_notes = _comparisons(run, arms, metrics, confidence, len(views),
                                            judge_notes)
    if sections is None:
        sections = collect_sections(run)
    return ReportSummary(
        run_id=run.run_id, run_dir=str(run.root),
        created_at=run.manifest.get("created_at"), status=run.manifest.get("status"),
        condition=run.condition, condition_hash=run.manifest.get("condition_hash"),
        scoring_condition=run.scores.condition if run.scores else {},
        confidence=confidence, primary_metric=metrics[0] if metrics else None, metrics=metrics,
        scored=run.scores is not None, judge=judge_of(run),
        judges=judge_panel(run, metrics, views, judge_notes, confidence), adapters=adapters,
        comparisons=comparisons, many_arms=many_arms(arms, metrics),
        checklist=run_checklist(run),
        floor_ceiling=floor_ceiling({a: s.metrics for a, s in adapters.items()},
                                    adapter_names(run), metrics),
        sections=[SectionOut(id=s.id, title=s.title, data=s.data) for s in sections],
        model_usage=usage,
        unknown_usage=run.unknown_usage,
        estimate=estimate_rows(run, usage),
        notes=list(run.notes),
        stopped=run_stop(run.events, sum(len(run.rows_for(a)) for a in run.adapters)),
    )


def arm_sizes(run: RunData) -> dict[str, int]:
    return {a: _scored_n(run, a) for a in run.adapters}
