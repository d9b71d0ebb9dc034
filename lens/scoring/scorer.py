"""Score a stored run: tiers 1-3 per question, aggregates, composite, ``RUN_DIR/scores.json``.

Every number is a function of the stored records, the dataset's ground truth and the judge's
verdicts (kept in the run's events), so a run can be re-scored, with another judge too, without
re-running any agent; re-scoring with the same judge makes no new model call.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio.to_thread

import lens.scoring.fact_grader as grading
import lens.scoring.mechanical as mechanical
import lens.scoring.metrics as registry
import lens.scoring.offline_grader as offline_grader
import lens.scoring.pairwise as pairwise
import lens.scoring.retrieval as retrieval
from lens.core import eventloop
from lens.core.errors import UserError
from lens.data.config import CacheConfig, JudgeConfig, RunConfig, ScoringConfig
from lens.data.dataset import QuestionType
from lens.data.prompts import prompts_hash
from lens.memory.scenarios import after_scoring
from lens.models.base import ModelClient
from lens.runs.condition import stable_hash
from lens.runs.store import atomic_write_text
from lens.scoring.aggregate import aggregate
from lens.scoring.composite import DEFAULT_GATE_THRESHOLD, composite, resolve_weights
from lens.scoring.conclusion import conclusion_backed
from lens.scoring.facts import FactMatcherSettings
from lens.scoring.judge import Judge, JudgeTask, Verdict, verdict_totals
from lens.scoring.judge_prompts import judge_prompts_hash
from lens.scoring.offline_grader import FactGrade, FactTask, OfflineGrader
from lens.scoring.run_input import RunInput, ScoringItem, load_run
from lens.scoring.score_notes import scoring_notes
from lens.scoring.types import SCORES_FILE, JudgeSummary, QuestionScores, RunScores

# The version of the scoring rules. Raise it whenever a rule changes what a number means
# (what counts as a stated fact, a metric's definition, the composite's rules): runs scored
# under different protocols are not comparable.
SCORING_PROTOCOL = 4
ALL_TIERS = frozenset({1, 2, 3})
ACTION = QuestionType.ACTION_RECOMMENDATION.value


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


def _compute(specs: tuple[registry.MetricSpec, ...], item: ScoringItem,
             matcher: FactMatcherSettings, analysis: mechanical.Analysis,
             row: QuestionScores) -> None:
    """The registry's computed metrics on one answered question's row, in order."""
    for spec in specs:
        assert spec.compute is not None
        value, detail = spec.compute(registry.MetricInput(item, matcher, analysis, row.metrics))
        row.metrics[spec.name] = value
        row.detail[spec.name] = detail


def _apply_grades(row: QuestionScores, tasks: dict[str, JudgeTask],
                  verdicts: dict[str, Verdict], model: str, grader: grading.FactGrader) -> None:
    """The judge's per-fact grades in place of the matcher's, under the matcher's rules."""
    _under_matcher_rules(row, lambda: grading.apply_grades(
        row.metrics, row.detail["fact_recall"], tasks, verdicts, model, grader))


def _apply_offline(row: QuestionScores, grades: dict[str, FactGrade],
                   condition: dict[str, Any]) -> None:
    """The offline grader's per-fact grades in place of the matcher's, under the matcher's
    rules; it grades the key facts, and the question's conclusion keeps the matcher's check
    as one more item (as the judge grades it as one more fact)."""
    conclusion = row.detail["fact_recall"].get("conclusion")

    def replace() -> None:
        grading.apply_offline_grades(row.metrics, row.detail["fact_recall"], grades, condition)
        value = row.metrics.get("fact_recall")
        if grades and value is not None and conclusion is not None:
            # The matcher's rule (conclusion_backed): a verdict counts when a fact credited
            # after the veto, or the conclusion's own claim, backs it.
            rows = row.detail["fact_recall"].get("facts", [])
            backed = conclusion_backed(
                fact_credited=any((r.get("grade") or 0) > 0 for r in rows),
                claim_stated=bool(conclusion.get("claim_stated")), has_facts=True,
                cites_evidence=bool(conclusion.get("cites_evidence", True)))
            credit = 1.0 if conclusion["status"] == "stated" and backed else 0.0
            row.metrics["fact_recall"] = (value * len(grades) + credit) / (len(grades) + 1)

    _under_matcher_rules(row, replace)


def _under_matcher_rules(row: QuestionScores, replace: Callable[[], None]) -> None:
    """Run ``replace`` (a grader's per-fact grades in place of the matcher's) and keep what no
    grader overrides: the discount for stating far more figures than asked, and a contradicted
    or two-way conclusion taking every fact's credit with it (a grader may credit figures an
    answer states for the wrong verdict)."""
    factor = float(row.detail["fact_recall"].get("stuffing_factor", 1.0))
    conclusion = row.detail["fact_recall"].get("conclusion")
    replace()
    value = row.metrics.get("fact_recall")
    if value is not None and factor < 1.0:
        row.metrics["fact_recall"] = value * factor
        row.detail["fact_recall"]["stuffing_factor"] = factor
    if conclusion is not None:
        row.detail["fact_recall"]["conclusion"] = conclusion
        if conclusion["status"] in ("contradicted", "both") and value is not None:
            row.metrics["fact_recall"] = 0.0
            row.detail["fact_recall"]["reason"] = (f"conclusion {conclusion['status']}: "
                                                   "no fact credit")


async def _offline_grades(run: RunInput, offline: OfflineGrader | None
                          ) -> tuple[dict[str, dict[str, FactGrade]], dict[str, Any]]:
    """The offline grader's grades of every answered question's key facts, by question key,
    read from the answer's claims (not the record text it pasted), as the judge reads them."""
    own = offline is None
    if offline is None:
        offline = OfflineGrader.with_cache()
    if offline.store is None:
        offline.attach(run.store)
    keyed: list[tuple[str, str, FactTask]] = []
    for item in run.items:
        if item.answered:
            claims = mechanical.analyse(item).claims.text
            tasks = offline_grader.fact_tasks(item.question.prompt,
                                              item.question.ground_truth.key_facts, claims)
            keyed += [(item.key, fact, task) for fact, task in tasks.items()]
    try:
        graded = await anyio.to_thread.run_sync(offline.grade, [t for _, _, t in keyed])
    finally:
        if own:
            offline.close()
    out: dict[str, dict[str, FactGrade]] = {}
    for (key, fact, _), grade in zip(keyed, graded, strict=True):
        out.setdefault(key, {})[fact] = grade
    return out, offline.condition()


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


async def score_run(
    run_dir: Path,
    *,
    judge: ModelClient | None = None,
    tiers: set[int] | frozenset[int] = ALL_TIERS,
    weights: Mapping[str, float] | None = None,
    gate_threshold: float = DEFAULT_GATE_THRESHOLD,
    fact_grader: str | None = "matcher",
    judge_concurrency: int = 16,
    dataset_path: Path | None = None,
    matcher: FactMatcherSettings | None = None,
    write: bool = True,
    run_finished: bool | None = None,
    protocol: str = "lens",
    errata: Path | None = None,
    subset: str = "all",
    judge_prompt_file: Path | None = None,
    offline: OfflineGrader | None = None,
    model_free: bool = False,
) -> RunScores:
    """Score every stored question of ``run_dir`` and write ``RUN_DIR/scores.json``.

    ``judge`` is any ModelClient (None: judge metrics are missing). ``fact_grader`` decides
    fact_recall: ``matcher``, ``judge`` (per-fact grades with partial credit) or ``both``
    (lens.scoring.fact_grader), or ``local`` (the offline grader: ``offline``, else one on the
    default local model with lens's model cache); None picks ``judge`` when a judge is given,
    else ``local`` when it is installed and the run is not ``model_free``, else ``matcher``.
    ``protocol`` scores under a published benchmark's protocol instead of lens's metrics (see
    lens.scoring.protocols); ``errata`` is a gold errata file applied to the ground truth first;
    ``judge_prompt_file`` gives the protocol's judge the prompts of that file (the official
    repository's), its hash in the scoring condition.
    ``tiers`` selects the tiers to score (tier 1 always is). ``run_finished`` says the run is
    over even if its manifest does not say so yet (``lens run`` scores before it marks the run
    complete); None reads the manifest.
    """
    tiers = _check_tiers(set(tiers))
    if judge_prompt_file is not None and protocol == "lens":
        raise UserError("scoring.judge_prompt_file applies to a published protocol's judge "
                        "(scoring.protocol: longmemeval, longmemeval-v2); lens's own judge "
                        "reads lens's prompts: remove judge_prompt_file or set the protocol")
    if not 0.0 <= gate_threshold <= 1.0:
        raise UserError(f"gate threshold must be within 0..1 (got {gate_threshold})")
    resolved = resolve_weights(weights)
    matcher = matcher or FactMatcherSettings()
    try:
        grader = grading.resolve_grader(fact_grader, judge is not None and bool(tiers & {2, 3}),
                                        model_free=model_free)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    run = load_run(Path(run_dir), dataset_path=dataset_path)
    if run_finished:
        run.manifest = {**run.manifest, "status": "complete"}
    try:
        subset_notes = _apply_subset(run, subset, dataset_path)
        lens_score = functools.partial(
            _score, judge=judge, tiers=tiers, weights=resolved, gate_threshold=gate_threshold,
            grader=grader, judge_concurrency=judge_concurrency, matcher=matcher,
            extra_notes=subset_notes, subset=subset, offline=offline)
        if protocol != "lens" or errata is not None:
            from lens.scoring.protocols.dispatch import score_under_protocol

            scores = await score_under_protocol(
                run, protocol, errata_path=errata, judge=judge,
                judge_concurrency=judge_concurrency, write=write, lens_score=lens_score,
                condition=scoring_condition, subset=subset, subset_notes=subset_notes,
                judge_prompt_file=judge_prompt_file)
        else:
            scores = await lens_score(run, write=write)
    finally:
        run.store.close()
    if write:
        # Scenario plugins grade the run now, so a report only ever reads the run.
        after_scoring(run.run_dir, run.manifest)
    return scores


def _mechanical(item: ScoringItem, row: QuestionScores, tiers: set[int],
                matcher: FactMatcherSettings) -> mechanical.Analysis:
    """The metrics computed before the judge (tier 1, then the higher tiers scored), for one
    answered question."""
    analysis = mechanical.analyse(item)
    _compute(registry.computed({1}, after_judge=False), item, matcher, analysis, row)
    row.detail["retrieval"] = retrieval.question_retrieval(
        item.record, item.question.ground_truth.required_evidence_refs)
    _compute(registry.computed(tiers - {1}, after_judge=False), item, matcher, analysis, row)
    return analysis


def _plan_judge(item: ScoringItem, analysis: mechanical.Analysis, tiers: set[int],
                grader: grading.FactGrader, plan: _Plan) -> None:
    """The judge tasks one answered, non-empty question needs."""
    if grader in ("judge", "both"):
        # The judge grades the answer's claims, not the record text it pasted.
        claims = dataclasses.replace(item, record=item.record.model_copy(
            update={"answer": analysis.claims.text}))
        if tasks := grading.grade_tasks(claims):
            plan.facts[item.key] = tasks
    if 2 in tiers:
        plan.quality[item.key] = pairwise.comparisons(item)
    if 3 in tiers and item.question.question_type.value == ACTION:
        plan.action[item.key] = pairwise.comparisons(item, action=True)


def _first_pass(run: RunInput, tiers: set[int], matcher: FactMatcherSettings, use_judge: bool,
                grader: grading.FactGrader
                ) -> tuple[dict[str, QuestionScores], dict[str, mechanical.Analysis], _Plan]:
    """Every question's row with its mechanical metrics, each answered question's analysis,
    and the judge tasks to run."""
    rows: dict[str, QuestionScores] = {}
    analyses: dict[str, mechanical.Analysis] = {}
    plan = _Plan()
    for item in run.items:
        row = rows[item.key] = _row(item)
        if not item.answered:
            row.detail["error"] = item.record.error or "error"
            continue
        analysis = analyses[item.key] = _mechanical(item, row, tiers, matcher)
        if use_judge and item.record.answer.strip():
            _plan_judge(item, analysis, tiers, grader, plan)
    return rows, analyses, plan


def _judge_metrics(item: ScoringItem, row: QuestionScores, tiers: set[int], use_judge: bool,
                   plan: _Plan, verdicts: dict[str, Verdict], model: str,
                   grader: grading.FactGrader) -> tuple[int, int]:
    """Tier 2 and 3's judged metrics, and the judge's fact grades, on one row; return
    (pairs, disagreements)."""
    empty = not item.record.answer.strip()
    pairs = flips = 0
    if 2 in tiers:
        if use_judge:
            p, f = _judged(row, "answer_quality", plan.quality.get(item.key), verdicts, model,
                           empty)
            pairs, flips = pairs + p, flips + f
        else:
            row.metrics["answer_quality"] = None
    if item.key in plan.facts:
        _apply_grades(row, plan.facts[item.key], verdicts, model, grader)
    if 3 in tiers and item.question.question_type.value == ACTION:
        if use_judge:
            p, f = _judged(row, "action_quality", plan.action.get(item.key), verdicts, model,
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


def _write(run: RunInput, scores: RunScores, judge_runner: Judge | None, tiers: set[int],
           model: str) -> None:
    atomic_write_text(run.run_dir / SCORES_FILE, scores.model_dump_json(indent=1))
    usage = judge_runner.usage if judge_runner else None
    run.store.append_event(
        "scoring_done", SCORES_FILE, tiers=sorted(tiers), judge=model or None,
        new_judge_calls=usage.calls if usage else 0,
        reused_verdicts=usage.reused if usage else 0,
        failed_judge_calls=usage.errors if usage else 0,
    )


def _apply_subset(run: RunInput, subset: str, dataset_path: Path | None) -> list[str]:
    """Keep only the certified questions when asked; the note says what was left out."""
    if subset == "all":
        return []
    from lens.runs.certification import load_certification

    path = dataset_path or Path((run.manifest.get("config") or {})["dataset"]["path"])
    cert = load_certification(path)
    keep = cert.certified()
    run.items = [it for it in run.items
                 if (it.record.scope_id, it.record.question_id) in keep]
    return [cert.exclusion_note(len({(it.record.scope_id, it.record.question_id)
                                     for it in run.items}))]


async def _score(run: RunInput, *, judge: ModelClient | None, tiers: set[int],
                 weights: dict[str, float], gate_threshold: float, grader: grading.FactGrader,
                 judge_concurrency: int, matcher: FactMatcherSettings, write: bool,
                 extra_notes: list[str] | None = None, subset: str = "all",
                 offline: OfflineGrader | None = None) -> RunScores:
    use_judge = judge is not None and bool(tiers & {2, 3})
    rows, analyses, plan = _first_pass(run, tiers, matcher, use_judge, grader)
    offline_grades, offline_condition = (await _offline_grades(run, offline)
                                         if grader == "local" else ({}, None))
    failed = sum(g.grade is None for gs in offline_grades.values() for g in gs.values())
    if failed:
        first = next(g.reason for gs in offline_grades.values() for g in gs.values()
                     if g.grade is None)
        extra_notes = [*(extra_notes or []),
                       f"{failed} offline fact grade(s) failed: the questions concerned have "
                       f"no fact_recall; run lens score again to retry (first error: {first})"]
    verdicts: dict[str, Verdict] = {}
    judge_runner: Judge | None = None
    if use_judge:
        assert judge is not None
        judge_runner = Judge(judge, run.store, concurrency=judge_concurrency)
        verdicts = await judge_runner.run(plan.tasks())
    model = judge_runner.model if judge_runner else ""

    total_pairs = total_flips = 0
    after_judge = registry.computed(tiers, after_judge=True)
    for item in run.items:
        if not item.answered:
            continue
        row = rows[item.key]
        pairs, flips = _judge_metrics(item, row, tiers, use_judge, plan, verdicts, model,
                                      grader)
        if item.key in offline_grades:
            _apply_offline(row, offline_grades[item.key], offline_condition or {})
        _compute(after_judge, item, matcher, analyses[item.key], row)
        _finish_row(row, weights, gate_threshold, pairs, flips)
        total_pairs += pairs
        total_flips += flips

    ordered = [rows[it.key] for it in run.items]
    aggregates, agg_detail = aggregate(ordered, weights=weights, gate_threshold=gate_threshold,
                                       tiers=tiers)
    summary = _judge_summary(judge_runner, verdicts, total_pairs, total_flips,
                             grader != "matcher")
    # Every field of the matcher's settings, whatever fields it grows, and its rules' version:
    # each is a condition; so are the fact grader and the judge's prompts.
    settings = {"fact_matcher": matcher.as_condition(),
                "fact_grader": grader,
                "judge_prompts": judge_prompts_hash() if judge_runner else None,
                "subset": subset}
    if offline_condition is not None:
        # The offline grader's model, prompt and threshold: another grades differently.
        settings["offline_grader"] = offline_condition
    cond = scoring_condition(tiers=tiers, weights=weights, gate_threshold=gate_threshold,
                             judge_model=model or None, settings=settings)
    scores = RunScores(
        run_dir=str(run.run_dir), tiers=sorted(tiers), questions=ordered, judge=summary,
        weights=weights, gate_threshold=gate_threshold, aggregates=aggregates,
        aggregate_detail=agg_detail,
        notes=[*(extra_notes or []),
               *scoring_notes(run, ordered, aggregates, agg_detail, tiers, judge_runner, summary,
                       grader)],
        settings=settings, condition=cond, condition_hash=stable_hash(cond),
    )
    if write:
        _write(run, scores, judge_runner, tiers, model)
    return scores


def scoring_condition(*, tiers: set[int], weights: Mapping[str, float], gate_threshold: float,
                      judge_model: str | None, settings: Mapping[str, Any]) -> dict[str, Any]:
    """Everything a score depends on besides the records and the ground truth: two runs
    scored under different conditions are not comparable (``lens compare`` refuses them).
    ``settings`` holds every scoring knob (matcher, fact grading, ...), so a knob added there
    enters the condition by itself. The prompts hash covers the judge's prompt templates and
    rubrics (every registered template)."""
    return {
        "protocol": SCORING_PROTOCOL,
        "tiers": sorted(tiers),
        "weights": dict(sorted(weights.items())),
        "gate_threshold": gate_threshold,
        "judge_model": judge_model,
        "judge_prompts_hash": prompts_hash() if judge_model else None,
        "settings": dict(settings),
    }


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


def score_run_sync(run_dir: Path, **kwargs: Any) -> RunScores:
    """:func:`score_run` for synchronous callers (not from inside an event loop)."""
    return eventloop.run(functools.partial(score_run, run_dir, **kwargs))


async def score_with_settings(
    run_dir: Path, scoring: ScoringConfig, judge_config: JudgeConfig | None,
    cache: CacheConfig | None, *, judge: ModelClient | None = None,
    tiers: set[int] | frozenset[int] = ALL_TIERS, fact_grader: str | None = None,
    concurrency: int | None = None, protocol: str | None = None, errata: Path | None = None,
    subset: str | None = None, dataset_path: Path | None = None,
    run_finished: bool | None = None, write: bool = True, agent_model: str | None = None,
    judge_prompt_file: Path | None = None,
) -> RunScores:
    """Score a run as a config's ``scoring`` and ``judge`` settings say: the one place where
    settings become a :func:`score_run` call, for ``lens run`` (:func:`score_for_config`),
    ``lens score`` and, through ``score_run``, the published protocols. A keyword given (not
    None) overrides the setting, as ``lens score``'s flags do.

    Without a ``judge`` client one is made from ``judge_config`` (through the full model stack,
    with the cache; the batch transport when ``batch: true``) and closed afterwards; none when
    only tier 1 is scored, which calls no model and leaves fact_recall to the matcher.
    ``write=False`` scores without writing ``scores.json`` (an extra judge's scoring, which
    goes to its own file). ``agent_model`` is the run's agent: a scripted agent's run keeps
    fact grading model-free unless a grader is asked for."""
    tiers = set(tiers)
    judged = bool(tiers & {2, 3})
    own = None
    if judge is None and judge_config is not None and judged:
        from lens.scoring.batch_judge import make_judge_client

        own = judge = make_judge_client(judge_config, Path(run_dir), cache)
    grader = fact_grader or scoring.grader()
    if not judged and grader != "local":
        # Tier 1 calls no judge: the matcher decides, or the offline grader when asked for.
        grader = "matcher"
    # A scripted agent's run calls no model, and by default its scoring calls none either.
    model_free = grading.is_model_free(agent_model or "")
    offline = OfflineGrader.with_cache(cache)
    # A batched judge client is given every call at once by the judge engine, whatever this is.
    in_flight = concurrency or (judge_config.max_concurrency if judge_config else 16)
    try:
        return await score_run(
            run_dir, judge=judge, tiers=tiers, weights=scoring.weights,
            gate_threshold=scoring.gate_threshold, fact_grader=grader,
            judge_concurrency=in_flight, dataset_path=dataset_path, run_finished=run_finished,
            protocol=protocol or scoring.protocol, errata=errata or scoring.errata,
            subset=subset or scoring.subset, write=write, offline=offline,
            judge_prompt_file=judge_prompt_file or scoring.judge_prompt_file,
            model_free=model_free,
        )
    finally:
        offline.close()
        if own is not None:
            await own.aclose()


async def score_for_config(run_dir: Path, config: RunConfig, *,
                           judge: ModelClient | None = None) -> RunScores | None:
    """Score a finished run as its config says (``scoring`` and ``judge``), as ``lens run`` does
    at its end. Returns None when ``scoring.enabled`` is false. Without a ``judge`` client one
    is made from ``config.judge`` and closed afterwards; tier 1 only when the config names no
    judge."""
    if not config.scoring.enabled:
        return None
    return await score_with_settings(run_dir, config.scoring, config.judge, config.cache,
                                     judge=judge, dataset_path=config.dataset.path,
                                     run_finished=True,
                                     agent_model=config.agent.model)
