"""Scoring a run with its extra judges, beside the primary judge's ``scores.json``.

Each extra judge scores exactly as the primary did (same tiers, weights, grader, protocol,
subset), from the same records: only the judge differs. Its scores go to
``RUN_DIR/judge_scores/`` (lens.scoring.judge_panel); its verdicts to the run's events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lens.data.config import CacheConfig, JudgeConfig, RunConfig, ScoringConfig
from lens.models.base import ModelClient
from lens.runs.store import RunStore
from lens.scoring.judge_panel import stored_judge_configs, write_judge_scores
from lens.scoring.scorer import score_with_settings
from lens.scoring.types import RunScores


@dataclass(frozen=True)
class ExtraJudgeResult:
    label: str
    scores: RunScores
    path: Path
    new_verdicts: int


def _verdicts_of(run_dir: Path, label: str) -> int:
    return sum(1 for e in RunStore.open(run_dir).events()
               if e.get("kind") == "judge_verdict" and e.get("model") == label)


async def score_with_judge(run_dir: Path, cfg: JudgeConfig, cache: CacheConfig | None, *,
                           scoring: ScoringConfig, client: ModelClient | None = None,
                           **overrides: Any) -> ExtraJudgeResult:
    """Score ``run_dir`` with one extra judge into its own file; ``scores.json`` is left as it
    is. The settings are the primary's (``scoring`` and the same ``overrides`` of
    :func:`lens.scoring.scorer.score_with_settings`): only the judge differs."""
    before = _verdicts_of(run_dir, cfg.label)
    scores = await score_with_settings(run_dir, scoring, cfg, cache, judge=client, write=False,
                                       **overrides)
    path = write_judge_scores(run_dir, cfg, scores)
    new = _verdicts_of(run_dir, cfg.label) - before
    RunStore.open(run_dir).append_event("judge_scores_done", cfg.label, path=str(path.name),
                                        new_judge_verdicts=new)
    return ExtraJudgeResult(cfg.label, scores, path, new)


def extra_judges(primary: str | None, configured: Sequence[JudgeConfig], run_dir: Path
                 ) -> list[JudgeConfig]:
    """The judges to score beside the primary: the configured ones after it, then every judge
    added to the run before (so a re-scoring keeps them all under one condition)."""
    out: dict[str, JudgeConfig] = {}
    for cfg in [*configured, *stored_judge_configs(run_dir)]:
        if cfg.label != primary:
            out.setdefault(cfg.label, cfg)
    return list(out.values())


async def score_extra_for_config(run_dir: Path, config: RunConfig) -> list[ExtraJudgeResult]:
    """What ``lens run`` does after scoring with the primary judge: every other judge of
    ``judges:`` scores the run too, under the same settings."""
    if not config.scoring.enabled or config.judge is None:
        return []
    results = []
    for cfg in extra_judges(config.judge.label, config.all_judges()[1:], Path(run_dir)):
        results.append(await score_with_judge(
            Path(run_dir), cfg, config.cache, scoring=config.scoring,
            dataset_path=config.dataset.path, run_finished=True,
            agent_model=config.agent.model))
    return results
