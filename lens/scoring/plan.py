"""The scoring plan: every setting a scoring of one run follows, built once and then only read.

A plan comes from a run config's ``scoring`` and ``judge`` sections (:func:`plan_from_settings`,
:func:`plan_for_config`) with the command line's overrides, or from keywords
(:func:`make_plan`, behind :func:`lens.scoring.scorer.score_run`). Building it checks every
setting (tiers, gate, weights, fact grader, judge prompt file), so scoring starts only under a
plan that holds together. :func:`lens.scoring.scorer.score` is the one function that scores a
run under a plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SkipValidation

import lens.scoring.grading.fact_grader as grading
from lens.core.errors import UserError
from lens.data.config import CacheConfig, JudgeConfig, RunConfig, ScoringConfig
from lens.models.base import ModelClient
from lens.runs.events import ScoringDone
from lens.runs.manifest import RecordedConfig
from lens.runs.sections import SectionDoc
from lens.scoring.aggregation.composite import DEFAULT_GATE_THRESHOLD, resolve_weights
from lens.scoring.foundations.types import RunScores
from lens.scoring.grading.offline_grader import OfflineGrader
from lens.scoring.judging.judge_panel import extra_judges
from lens.scoring.text.facts import FactMatcherSettings

ALL_TIERS = frozenset({1, 2, 3})
# Where a scoring's numbers go: the run's scores.json (its primary judge), the judge's own file
# beside it (an extra judge of the panel), or nowhere (the caller keeps the returned scores).
Target = Literal["scores", "judge_scores", "none"]


class ScoringPlan(BaseModel):
    """Every setting of one scoring, resolved. The judge is a client the caller owns
    (``judge``), or one made from ``judge_config`` for the scoring and closed after it; the
    panel's other judges (``extra_judges``) score under the same plan into their own files."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    tiers: frozenset[int] = ALL_TIERS
    weights: dict[str, float]
    gate_threshold: float = DEFAULT_GATE_THRESHOLD
    fact_grader: grading.FactGrader = "matcher"
    # The caller's objects are taken as they are: a client is whatever completes a request.
    judge: Annotated[ModelClient | None, SkipValidation] = None
    judge_config: JudgeConfig | None = None
    extra_judges: tuple[JudgeConfig, ...] = ()
    cache: CacheConfig | None = None
    # Judge calls in flight; None: the judge config's max_concurrency, else 16. A batched judge
    # client is given every call at once by the judge engine, whatever this is.
    concurrency: int | None = Field(default=None, ge=1)
    protocol: str = "lens"
    errata: Path | None = None
    subset: str = "all"
    judge_prompt_file: Path | None = None
    dataset_path: Path | None = None
    matcher: FactMatcherSettings = FactMatcherSettings()
    # The offline grader to use (None: one on the default local model, with ``cache``).
    offline: Annotated[OfflineGrader | None, SkipValidation] = None
    # The run is over even if its manifest does not say so yet (``lens run`` scores before it
    # marks the run complete); None reads the manifest.
    run_finished: bool | None = None
    target: Target = "scores"

    @property
    def judged(self) -> bool:
        """Whether a tier that needs the judge is scored and there is a judge to ask."""
        return (self.judge is not None or self.judge_config is not None) and bool(
            self.tiers & {2, 3})

    def judge_concurrency(self) -> int:
        if self.concurrency is not None:
            return self.concurrency
        return self.judge_config.max_concurrency if self.judge_config else 16

    def for_extra_judge(self, cfg: JudgeConfig) -> ScoringPlan:
        """The same plan for one more judge of the panel, into that judge's own file."""
        return self.model_copy(update={"judge": None, "judge_config": cfg, "extra_judges": (),
                                       "target": "judge_scores"})


@dataclass(frozen=True)
class ScoringOutcome:
    """What one protocol's scoring produced: the scores, the ``scoring_done`` event and the
    report sections to write beside them (relative path -> JSON document)."""

    scores: RunScores
    event: ScoringDone
    sections: dict[Path, SectionDoc] = field(default_factory=dict)


def _check_tiers(tiers: set[int] | frozenset[int]) -> frozenset[int]:
    bad = sorted(t for t in tiers if t not in ALL_TIERS)
    if bad or not tiers:
        raise UserError(f"tiers must be a non-empty subset of 1, 2, 3 (got {sorted(tiers)})")
    # Tier 1 is free and the composite's gate depends on it: it is always scored.
    return frozenset(tiers) | {1}


def make_plan(*, judge: ModelClient | None = None, judge_config: JudgeConfig | None = None,
              tiers: set[int] | frozenset[int] = ALL_TIERS,
              weights: Mapping[str, float] | None = None,
              gate_threshold: float = DEFAULT_GATE_THRESHOLD,
              fact_grader: str | None = "matcher", model_free: bool = False,
              protocol: str = "lens", judge_prompt_file: Path | None = None,
              matcher: FactMatcherSettings | None = None, **settings: Any) -> ScoringPlan:
    """A checked plan. ``fact_grader`` None picks ``judge`` when there is a judge, else
    ``local`` when it is installed and the run is not ``model_free``, else ``matcher``
    (:func:`lens.scoring.grading.fact_grader.resolve_grader`). ``settings`` are the plan's other
    fields as they are."""
    checked = _check_tiers(set(tiers))
    if judge_prompt_file is not None and protocol == "lens":
        raise UserError("scoring.judge_prompt_file applies to a published protocol's judge "
                        "(a scoring.protocol other than lens); lens's own judge reads lens's "
                        "prompts: remove judge_prompt_file or set the protocol")
    if not 0.0 <= gate_threshold <= 1.0:
        raise UserError(f"gate threshold must be within 0..1 (got {gate_threshold})")
    resolved = resolve_weights(weights)
    has_judge = (judge is not None or judge_config is not None) and bool(checked & {2, 3})
    try:
        grader = grading.resolve_grader(fact_grader, has_judge, model_free=model_free)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return ScoringPlan(tiers=checked, weights=resolved, gate_threshold=gate_threshold,
                       fact_grader=grader, judge=judge, judge_config=judge_config,
                       protocol=protocol, judge_prompt_file=judge_prompt_file,
                       matcher=matcher or FactMatcherSettings(), **settings)


def plan_from_settings(scoring: ScoringConfig, judge_config: JudgeConfig | None,
                       cache: CacheConfig | None, *, judge: ModelClient | None = None,
                       tiers: set[int] | frozenset[int] = ALL_TIERS,
                       fact_grader: str | None = None, concurrency: int | None = None,
                       protocol: str | None = None, errata: Path | None = None,
                       subset: str | None = None, judge_prompt_file: Path | None = None,
                       agent_model: str | None = None,
                       extra_judges: Sequence[JudgeConfig] = (),
                       **settings: Any) -> ScoringPlan:
    """The plan a config's ``scoring`` and ``judge`` sections say; each keyword given (not
    None) overrides its setting, as ``lens score``'s flags do. Tier 1 alone asks no judge:
    the matcher decides fact_recall, or the offline grader when asked for. ``agent_model`` is
    the run's agent: a scripted agent's run keeps fact grading model-free unless a grader is
    asked for."""
    judged = bool(set(tiers) & {2, 3})
    grader = fact_grader or scoring.grader()
    if not judged and grader != "local":
        grader = "matcher"
    return make_plan(
        judge=judge if judged else None, judge_config=judge_config if judged else None,
        tiers=tiers, weights=scoring.weights, gate_threshold=scoring.gate_threshold,
        fact_grader=grader, model_free=grading.is_model_free(agent_model or ""),
        protocol=protocol or scoring.protocol, errata=errata or scoring.errata,
        subset=subset or scoring.subset,
        judge_prompt_file=judge_prompt_file or scoring.judge_prompt_file,
        cache=cache, concurrency=concurrency,
        extra_judges=tuple(extra_judges) if judged else (), **settings)


def plan_for_config(config: RunConfig | RecordedConfig, *, judge: ModelClient | None = None,
                    panel_of: Path | None = None, **overrides: Any) -> ScoringPlan:
    """The plan a run config says, for ``lens run`` at the end of a run and ``lens score`` over
    a stored one (``config``: the run's config, or the sections its manifest recorded): its
    judge (``judge``, a client the caller owns, else one made from ``judge_config``, by default
    the config's), and the keywords of :func:`plan_from_settings` given in ``overrides``
    (``lens score``'s flags). With ``panel_of`` (the run directory) the panel's other judges
    score beside the primary: the config's judges after the first, then every judge added to
    the run before."""
    settings: dict[str, Any] = {"judge_config": config.judge,
                                "dataset_path": config.dataset.path, "run_finished": True,
                                "agent_model": config.agent.model}
    settings.update(overrides)
    if settings["dataset_path"] is None:
        settings["dataset_path"] = config.dataset.path
    judge_config = settings.pop("judge_config")
    panel = (extra_judges(judge_config.label, list(config.judges or [])[1:], panel_of)
             if panel_of is not None and judge_config is not None else [])
    return plan_from_settings(config.scoring, judge_config, config.cache, judge=judge,
                              extra_judges=panel, **settings)
