"""Score a stored run under a scoring plan: the one path from a plan to ``RUN_DIR/scores.json``.

:func:`score` loads the run, keeps the plan's subset of questions, hands the run to the plan's
protocol (lens's own metrics or a published benchmark's, :mod:`lens.scoring.protocols`), writes
what it produced (``scores.json``, the report sections, the ``scoring_done`` event: here and
nowhere else) and scores the panel's other judges into their own files. Every number is a
function of the stored records, the dataset's ground truth and the judge's verdicts (kept in the
run's events), so a run can be re-scored, with another judge too, without re-running any agent.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lens.core import eventloop
from lens.core.errors import UserError
from lens.data.config import RunConfig
from lens.data.dataset import Dataset
from lens.memory.scenarios import after_scoring
from lens.models.base import ModelClient
from lens.runs.events import ScoringDone
from lens.runs.manifest import RunManifest
from lens.runs.store import MANIFEST, RunStore, atomic_write_text
from lens.scoring.foundations.condition import SCORING_PROTOCOL, scoring_condition
from lens.scoring.foundations.errata import load_errata
from lens.scoring.foundations.run_input import RunInput, load_run
from lens.scoring.foundations.types import SCORES_FILE, RunScores
from lens.scoring.judging.judge_panel import ExtraJudgeResult, write_judge_scores
from lens.scoring.measures.write_side import write_write_side
from lens.scoring.plan import (
    ALL_TIERS,
    ScoringOutcome,
    ScoringPlan,
    make_plan,
    plan_for_config,
)
from lens.scoring.protocols import score_protocol, scoring_protocol

__all__ = ["ALL_TIERS", "SCORES_FILE", "SCORING_PROTOCOL", "RunRead", "ScoringResult", "score",
           "score_for_config", "score_run", "score_run_sync", "scoring_condition"]


@dataclass(frozen=True)
class ScoringResult:
    """A scoring's numbers under the plan's judge, where they went (None: not written) and
    the panel's other judges' results."""

    scores: RunScores
    path: Path | None
    new_verdicts: int = 0
    extras: list[ExtraJudgeResult] = field(default_factory=list)
    # The ``scoring_done`` event written with scores.json (None when it was not written).
    done: ScoringDone | None = None
    # The run as the scorer read it for scores.json (None when scores.json was not written).
    read: RunRead | None = None


@dataclass(frozen=True)
class RunRead:
    """Where the run stood when the scorer read it, so that what judges the run after its
    scoring (the exit status of ``lens score``) reads it as it was scored: the number of events
    the run had before the scoring added its own (the events file only grows)."""

    events: int

    @classmethod
    def of(cls, run: RunInput) -> RunRead:
        return cls(sum(1 for _ in run.store.events()))


async def score(run_dir: Path, plan: ScoringPlan, *, dataset: Dataset | None = None
                ) -> ScoringResult:
    """Score every stored question of ``run_dir`` under ``plan``, then the panel's other
    judges. Without a ``plan.judge`` client one is made from ``plan.judge_config`` (through the
    full model stack, with the cache; the batch transport when ``batch: true``) and closed
    afterwards. ``dataset``: the run's dataset as the run used it, already in memory (scopes
    selected, questions left out), instead of loading and checking the file again."""
    run_dir = Path(run_dir)
    result = await _score_one(run_dir, plan, dataset)
    extras = []
    for cfg in plan.extra_judges:
        one = await _score_one(run_dir, plan.for_extra_judge(cfg), dataset)
        assert one.path is not None
        extras.append(ExtraJudgeResult(cfg.label, one.scores, one.path, one.new_verdicts))
    return ScoringResult(result.scores, result.path, result.new_verdicts, extras, result.done,
                         result.read)


async def _score_one(run_dir: Path, plan: ScoringPlan, dataset: Dataset | None = None
                     ) -> ScoringResult:
    own: ModelClient | None = None
    if plan.judge is None and plan.judge_config is not None and plan.judged:
        from lens.scoring.judging.batch_judge import make_judge_client

        own = make_judge_client(plan.judge_config, run_dir, plan.cache)
        plan = plan.model_copy(update={"judge": own})
    label = plan.judge_config.label if plan.judge_config else None
    before = _verdicts_of(run_dir, label) if plan.target == "judge_scores" else 0
    try:
        outcome, read = await _score_run(run_dir, plan, dataset)
    finally:
        if own is not None:
            await own.aclose()
    if plan.target == "scores":
        return ScoringResult(outcome.scores, run_dir / SCORES_FILE,
                             done=outcome.event, read=read)
    if plan.target == "none":
        return ScoringResult(outcome.scores, None, read=read)
    # One more judge of the panel: its scores go to its own file; scores.json is left as it is.
    assert plan.judge_config is not None
    path = write_judge_scores(run_dir, plan.judge_config, outcome.scores)
    new = _verdicts_of(run_dir, label) - before
    RunStore.open(run_dir).append_event("judge_scores_done", plan.judge_config.label,
                                        path=str(path.name),
                                        new_judge_verdicts=new)
    return ScoringResult(outcome.scores, path, new, read=read)


async def _score_run(run_dir: Path, plan: ScoringPlan, dataset: Dataset | None = None
                     ) -> tuple[ScoringOutcome, RunRead | None]:
    run = load_run(run_dir, dataset=dataset, dataset_path=plan.dataset_path)
    if plan.run_finished:
        run.manifest = run.manifest.model_copy(update={"status": "complete"})
    try:
        # What judges the run after the scoring of scores.json reads nothing again.
        read = RunRead.of(run) if plan.target == "scores" else None
        notes = _apply_subset(run, plan)
        errata = load_errata(plan.errata) if plan.errata is not None else None
        protocol = scoring_protocol(plan.protocol, plan.judge_prompt_file)
        outcome = await score_protocol(run, protocol, plan, errata, notes)
        if plan.target == "scores":
            _write_scores(run, outcome)
            # What the memory wrote, from its recorded listings (absent when none listed).
            write_write_side(run.run_dir, run.dataset, _arms(run.manifest))
    finally:
        run.store.close()
    if plan.target == "scores":
        # Scenario plugins grade the run now, so a report only ever reads the run.
        after_scoring(run.run_dir, run.manifest.as_dict())
    return outcome, read


def _arms(manifest: RunManifest) -> list[str]:
    adapters = manifest.condition.get("adapters") or []
    return [str(a.get("label") or a.get("name")) for a in adapters if isinstance(a, dict)]


def _write_scores(run: RunInput, outcome: ScoringOutcome) -> None:
    """The one writer of ``scores.json``, the protocol's report sections and the
    ``scoring_done`` event."""
    atomic_write_text(run.run_dir / SCORES_FILE, outcome.scores.model_dump_json(indent=1))
    for rel, doc in outcome.sections.items():
        (run.run_dir / rel).parent.mkdir(exist_ok=True)
        atomic_write_text(run.run_dir / rel, json.dumps(doc, indent=1))
    run.store.append_event(ScoringDone.KIND, SCORES_FILE, **outcome.event.payload())


def _verdicts_of(run_dir: Path, label: str | None) -> int:
    return sum(1 for e in RunStore.open(run_dir).events()
               if e.get("kind") == "judge_verdict" and e.get("model") == label)


def _apply_subset(run: RunInput, plan: ScoringPlan) -> list[str]:
    """Keep only the certified questions when asked; the note says what was left out."""
    if plan.subset == "all":
        return []
    from lens.runs.certification import load_certification

    path = run.dataset_path
    if path is None:
        raise UserError(f"{run.run_dir / MANIFEST}: field 'config.dataset.path' is missing; "
                        "the certified subset is read beside the dataset: pass the dataset "
                        "with --dataset PATH")
    cert = load_certification(path)
    keep = cert.certified()
    run.items = [it for it in run.items
                 if (it.record.scope_id, it.record.question_id) in keep]
    return [cert.exclusion_note(len({(it.record.scope_id, it.record.question_id)
                                     for it in run.items}))]


async def score_run(run_dir: Path, *, judge: ModelClient | None = None,
                    judge_concurrency: int = 16, write: bool = True, **settings: Any
                    ) -> RunScores:
    """Score every stored question of ``run_dir`` and write ``RUN_DIR/scores.json`` (not with
    ``write=False``), under the plan :func:`lens.scoring.plan.make_plan` builds from the
    keywords: ``tiers``, ``weights``, ``gate_threshold``, ``fact_grader``, ``protocol``,
    ``errata``, ``subset``, ``judge_prompt_file``, ``dataset_path``, ``matcher``, ``offline``,
    ``model_free``, ``run_finished``.

    ``judge`` is any ModelClient (None: judge metrics are missing). ``fact_grader`` decides
    fact_recall: ``matcher`` (the default), ``judge``, ``both`` or ``local``; None picks
    ``judge`` when a judge is given, else ``local`` when it is installed and the run is not
    ``model_free``, else ``matcher``. ``protocol`` scores under a published benchmark's protocol
    instead of lens's metrics; ``errata`` is a gold errata file applied to the ground truth
    first.
    """
    plan = make_plan(judge=judge, concurrency=judge_concurrency,
                     target="scores" if write else "none", **settings)
    return (await score(Path(run_dir), plan)).scores


def score_run_sync(run_dir: Path, **kwargs: Any) -> RunScores:
    """:func:`score_run` for synchronous callers (not from inside an event loop)."""
    return eventloop.run(functools.partial(score_run, run_dir, **kwargs))


async def score_for_config(run_dir: Path, config: RunConfig, *,
                           judge: ModelClient | None = None) -> RunScores | None:
    """Score a finished run as its config says (``scoring``, ``judge`` and the panel's other
    ``judges``), as ``lens run`` does at its end. Returns the primary judge's scores, None when
    ``scoring.enabled`` is false. Without a ``judge`` client one is made from ``config.judge``
    and closed afterwards; tier 1 only when the config names no judge."""
    if not config.scoring.enabled:
        return None
    result = await score(Path(run_dir), plan_for_config(config, judge=judge,
                                                        panel_of=Path(run_dir)))
    return result.scores
