"""Score a stored run: tiers 1-3 per question, aggregates, composite, ``RUN_DIR/scores.json``.

Every number is a function of the stored records, the dataset's ground truth and the judge's
verdicts (kept in the run's events), so a run can be re-scored, with another judge too, without
re-running any agent; re-scoring with the same judge makes no new model call.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lens import eventloop
from lens.config import RunConfig
from lens.dataset import QuestionType
from lens.errors import UserError
from lens.models.base import ModelClient
from lens.scoring import mechanical, pairwise, retrieval
from lens.scoring.aggregate import QUESTION_METRICS, aggregate
from lens.scoring.composite import DEFAULT_GATE_THRESHOLD, composite, resolve_weights
from lens.scoring.context import RunInput, ScoringItem, load_run
from lens.scoring.facts import FactMatcherSettings
from lens.scoring.judge import Judge, JudgeTask, Verdict, verdict_totals
from lens.scoring.types import JudgeSummary, QuestionScores, RunScores
from lens.store import atomic_write_text

SCORES_FILE = "scores.json"
ALL_TIERS = frozenset({1, 2, 3})
ACTION = QuestionType.ACTION_RECOMMENDATION.value
# Every metric a question carries (None where not computable or not defined per question).
METRICS = (*QUESTION_METRICS, "longitudinal_advantage")


def _check_tiers(tiers: set[int] | frozenset[int]) -> set[int]:
    bad = sorted(t for t in tiers if t not in ALL_TIERS)
    if bad or not tiers:
        raise UserError(f"tiers must be a non-empty subset of 1, 2, 3 (got {sorted(tiers)})")
    # Tier 1 is free and the composite's gate depends on it: it is always scored.
    return set(tiers) | {1}


def _row(item: ScoringItem) -> QuestionScores:
    r = item.record
    return QuestionScores(key=r.key, unit_key=r.unit_key, adapter=r.adapter, scope_id=r.scope_id,
                          repeat=r.repeat, question_id=r.question_id,
                          question_type=item.question.question_type.value,
                          checkpoint=r.checkpoint, status=r.status)


class _Plan:
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


def _tier1(item: ScoringItem, matcher: FactMatcherSettings, row: QuestionScores) -> None:
    for name, fn in (("evidence_grounding", mechanical.evidence_grounding),
                     ("fact_recall", functools.partial(mechanical.fact_recall, settings=matcher)),
                     ("evidence_coverage", mechanical.evidence_coverage),
                     ("budget_compliance", mechanical.budget_compliance)):
        value, detail = fn(item)
        row.metrics[name] = value
        row.detail[name] = detail
    row.detail["retrieval"] = retrieval.question_retrieval(
        item.record, item.question.ground_truth.required_evidence_refs)


def _apply_fact_checks(row: QuestionScores, checks: dict[str, JudgeTask],
                       verdicts: dict[str, Verdict], model: str) -> None:
    detail = row.detail["fact_recall"]
    facts = detail.get("facts", [])
    failed = 0
    for f in facts:
        f["method"] = "mechanical" if f["matched"] else "unmatched"
        task = checks.get(f["fact"])
        if task is None:
            continue
        v = verdicts.get(task.key(model))
        if v is None:
            failed += 1
        elif v.value == "yes":
            f["matched"] = True
            f["method"] = "judge"
    if failed:
        row.metrics["fact_recall"] = None
        detail["reason"] = f"judge fact check failed for {failed} fact(s)"
    elif facts:
        row.metrics["fact_recall"] = sum(bool(f["matched"]) for f in facts) / len(facts)


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
    if result.value is None:
        row.detail[name]["reason"] = "a judge call failed; re-run lens score to retry it"
    return result.pairs, result.disagreements


async def score_run(
    run_dir: Path,
    *,
    judge: ModelClient | None = None,
    tiers: set[int] | frozenset[int] = ALL_TIERS,
    weights: Mapping[str, float] | None = None,
    gate_threshold: float = DEFAULT_GATE_THRESHOLD,
    fact_judge: bool = False,
    judge_concurrency: int = 16,
    dataset_path: Path | None = None,
    matcher: FactMatcherSettings | None = None,
    write: bool = True,
    run_finished: bool | None = None,
    subset: str = "all",
) -> RunScores:
    """Score every stored question of ``run_dir`` and write ``RUN_DIR/scores.json``.

    ``judge`` is any ModelClient (None: judge metrics are missing). ``fact_judge`` asks the judge
    about each key fact the mechanical matcher missed. ``tiers`` selects the tiers to score
    (tier 1 always is). ``run_finished`` says the run is over even if its manifest does not
    say so yet (``lens run`` scores before it marks the run complete); None reads the manifest.
    """
    tiers = _check_tiers(set(tiers))
    if not 0.0 <= gate_threshold <= 1.0:
        raise UserError(f"gate threshold must be within 0..1 (got {gate_threshold})")
    resolved = resolve_weights(weights)
    matcher = matcher or FactMatcherSettings()
    run = load_run(Path(run_dir), dataset_path=dataset_path)
    if run_finished:
        run.manifest = {**run.manifest, "status": "complete"}
    try:
        subset_notes = _apply_subset(run, subset, dataset_path)
        return await _score(run, judge=judge, tiers=tiers, weights=resolved,
                            gate_threshold=gate_threshold, fact_judge=fact_judge,
                            judge_concurrency=judge_concurrency, matcher=matcher, write=write,
                            extra_notes=subset_notes)
    finally:
        run.store.close()


def _apply_subset(run: RunInput, subset: str, dataset_path: Path | None) -> list[str]:
    """Keep only the certified questions when asked; the note says what was left out."""
    if subset == "all":
        return []
    from lens.certify import load_certification

    path = dataset_path or Path((run.manifest.get("config") or {})["dataset"]["path"])
    cert = load_certification(path)
    keep = cert.certified()
    run.items = [it for it in run.items
                 if (it.record.scope_id, it.record.question_id) in keep]
    return [cert.exclusion_note(len({(it.record.scope_id, it.record.question_id)
                                     for it in run.items}))]


async def _score(run: RunInput, *, judge: ModelClient | None, tiers: set[int],
                 weights: dict[str, float], gate_threshold: float, fact_judge: bool,
                 judge_concurrency: int, matcher: FactMatcherSettings, write: bool,
                 extra_notes: list[str] | None = None) -> RunScores:
    rows: dict[str, QuestionScores] = {}
    plan = _Plan()
    use_judge = judge is not None and bool(tiers & {2, 3})
    for item in run.items:
        row = _row(item)
        rows[item.key] = row
        if not item.answered:
            row.detail["error"] = item.record.error or "error"
            continue
        _tier1(item, matcher, row)
        has_answer = bool(item.record.answer.strip())
        if 2 in tiers:
            for name, fn in (("insight_depth", functools.partial(
                                mechanical.insight_depth,
                                grounding_detail=row.detail["evidence_grounding"])),
                             ("reasoning_quality", mechanical.reasoning_quality)):
                value, detail = fn(item)
                row.metrics[name] = value
                row.detail[name] = detail
        if not use_judge or not has_answer:
            continue
        if 2 in tiers:
            plan.quality[item.key] = pairwise.comparisons(item)
            if fact_judge:
                missed = [f["fact"] for f in row.detail["fact_recall"].get("facts", [])
                          if not f["matched"]]
                if missed:
                    plan.facts[item.key] = pairwise.fact_checks(item, missed)
        if 3 in tiers and item.question.question_type.value == ACTION:
            plan.action[item.key] = pairwise.comparisons(item, action=True)

    verdicts: dict[str, Verdict] = {}
    judge_runner: Judge | None = None
    if use_judge:
        assert judge is not None
        judge_runner = Judge(judge, run.store, concurrency=judge_concurrency)
        verdicts = await judge_runner.run(plan.tasks())

    model = judge_runner.model if judge_runner else ""
    total_pairs = total_flips = 0
    for item in run.items:
        row = rows[item.key]
        if not item.answered:
            continue
        empty = not item.record.answer.strip()
        pairs = flips = 0
        if use_judge and 2 in tiers:
            p, f = _judged(row, "answer_quality", plan.quality.get(item.key), verdicts, model,
                           empty)
            pairs, flips = pairs + p, flips + f
            if item.key in plan.facts:
                _apply_fact_checks(row, plan.facts[item.key], verdicts, model)
        elif 2 in tiers:
            row.metrics["answer_quality"] = None
        if 3 in tiers and item.question.question_type.value == ACTION:
            if use_judge:
                p, f = _judged(row, "action_quality", plan.action.get(item.key), verdicts,
                               model, empty)
                pairs, flips = pairs + p, flips + f
            else:
                row.metrics["action_quality"] = None
        row.detail["judge"] = {"pairs": pairs, "disagreements": flips}
        total_pairs += pairs
        total_flips += flips
        for name in METRICS:
            row.metrics.setdefault(name, None)
        comp = composite(row.metrics, weights, gate_threshold)
        row.metrics["composite"] = comp.value
        row.detail["composite"] = {"missing": comp.missing, "gated": comp.gated,
                                   "renormalised": comp.renormalised}

    ordered = [rows[it.key] for it in run.items]
    aggregates, agg_detail = aggregate(ordered, weights=weights, gate_threshold=gate_threshold,
                                       differential=3 in tiers)
    summary = _judge_summary(judge_runner, verdicts, total_pairs, total_flips, fact_judge)
    scores = RunScores(
        run_dir=str(run.run_dir),
        tiers=sorted(tiers),
        questions=ordered,
        judge=summary,
        weights=weights,
        gate_threshold=gate_threshold,
        aggregates=aggregates,
        aggregate_detail=agg_detail,
        notes=[*(extra_notes or []),
               *_notes(run, ordered, aggregates, agg_detail, tiers, judge_runner, summary)],
        settings={"fact_matcher": {"coverage": matcher.coverage,
                                   "short_fact_words": matcher.short_fact_words,
                                   "window_sentences": matcher.window_sentences,
                                   "numeric_rel_tol": matcher.rel_tol},
                  "fact_judge": fact_judge and judge_runner is not None,
                  "subset": "certified" if extra_notes else "all"},
    )
    if write:
        atomic_write_text(run.run_dir / SCORES_FILE, scores.model_dump_json(indent=1))
        usage = judge_runner.usage if judge_runner else None
        run.store.append_event(
            "scoring_done", SCORES_FILE, tiers=sorted(tiers), judge=model or None,
            new_judge_calls=usage.calls if usage else 0,
            reused_verdicts=usage.reused if usage else 0,
            failed_judge_calls=usage.errors if usage else 0,
        )
    return scores


def _judge_summary(judge: Judge | None, verdicts: dict[str, Verdict], pairs: int, flips: int,
                   fact_judge: bool) -> JudgeSummary:
    if judge is None:
        return JudgeSummary()
    totals = verdict_totals(verdicts.values())
    return JudgeSummary(
        model=judge.model, pairs=pairs, disagreements=flips,
        disagreement_rate=flips / pairs if pairs else None,
        errors=judge.usage.errors, fact_checks=fact_judge, **totals,
    )


def _notes(run: RunInput, rows: list[QuestionScores],
           aggregates: dict[str, dict[str, dict[str, float | None]]],
           detail: dict[str, dict[str, dict[str, Any]]], tiers: set[int],
           judge: Judge | None, summary: JudgeSummary) -> list[str]:
    notes: list[str] = []
    status = run.manifest.get("status")
    if status not in (None, "complete"):
        notes.append(f"the run's status is {status!r}: these scores cover the {len(rows)} "
                     "question(s) stored so far")
    skipped = sorted({1, 2, 3} - tiers)
    if skipped:
        notes.append(f"tier(s) {', '.join(map(str, skipped))} not scored: their metrics are "
                     "missing and composites are renormalised without them")
    if judge is None and tiers & {2, 3}:
        notes.append("no judge configured: answer_quality and action_quality are missing "
                     "(longitudinal_advantage too where it needs answer_quality); composites "
                     "are renormalised without them")
    if judge is not None and judge.usage.errors:
        notes.append(f"{judge.usage.errors} judge call(s) failed; the questions concerned have "
                     f"missing judge metrics: run lens score again to retry them "
                     f"(first error: {judge.usage.error_messages[0]})")
    if summary.invalid:
        notes.append(f"{summary.invalid} judge repl(ies) could not be read as a verdict; such a "
                     "reply counts as no preference")
    errored = sum(r.status != "answered" for r in rows)
    if errored:
        notes.append(f"{errored} question(s) ended in an error: they are excluded from every "
                     "metric and counted as n_errored")
    notes.append("question composites leave out longitudinal_advantage (a group metric) and, "
                 "outside action_recommendation questions, action_quality: they are "
                 "renormalised over the metrics present (see each question's detail.composite)")
    by_missing: dict[tuple[str, ...], list[str]] = {}
    gated: list[str] = []
    for level, groups in aggregates.items():
        for key, entry in groups.items():
            missing = tuple(detail[level][key].get("composite_missing", []))
            if missing:
                by_missing.setdefault(missing, []).append(f"{level}={key}")
            if entry.get("composite_gated"):
                gated.append(f"{level}={key}")
    for missing, where in by_missing.items():
        shown = ", ".join(where[:12]) + (f" and {len(where) - 12} more" if len(where) > 12
                                         else "")
        notes.append(f"composite renormalised (missing {', '.join(missing)}) for: {shown}")
    if gated:
        notes.append(f"composite gated to 0 (evidence_grounding or budget_compliance below the "
                     f"gate) for: {', '.join(gated[:12])}"
                     + (f" and {len(gated) - 12} more" if len(gated) > 12 else ""))
    for key, d in detail.get("adapter", {}).items():
        la = d.get("longitudinal_advantage", {})
        if la.get("basis") == "answer_quality":
            notes.append(f"longitudinal_advantage for adapter={key} uses answer_quality on both "
                         "sides: its null_hypothesis questions have no key facts")
    return notes


def score_run_sync(run_dir: Path, **kwargs: Any) -> RunScores:
    """:func:`score_run` for synchronous callers (not from inside an event loop)."""
    return eventloop.run(functools.partial(score_run, run_dir, **kwargs))


async def score_for_config(run_dir: Path, config: RunConfig, *,
                           judge: ModelClient | None = None) -> RunScores | None:
    """Score a finished run as its config says (``scoring`` and ``judge``), as ``lens run`` does
    at its end. Returns None when ``scoring.enabled`` is false. Without a ``judge`` client one
    is made from ``config.judge`` (through the full model stack, with the run's cache) and
    closed afterwards; tier 1 only when the config names no judge."""
    if not config.scoring.enabled:
        return None
    own = None
    if judge is None and config.judge is not None:
        from lens.models.factory import create_client

        own = judge = create_client(config.judge, cache=config.cache)
    try:
        return await score_run(
            run_dir, judge=judge, tiers=ALL_TIERS,
            weights=config.scoring.weights, gate_threshold=config.scoring.gate_threshold,
            judge_concurrency=config.judge.max_concurrency if config.judge else 16,
            dataset_path=config.dataset.path, run_finished=True,
            # An optional config switch; read defensively so configs without it still work.
            fact_judge=bool(getattr(config.scoring, "fact_judge", False)),
            subset=getattr(config.scoring, "subset", "all"),
        )
    finally:
        if own is not None:
            await own.aclose()
