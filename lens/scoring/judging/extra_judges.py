"""The extra judges of a run's panel, beside the primary judge's ``scores.json``.

Each extra judge scores under the primary's plan (lens.scoring.plan: same tiers, weights,
grader, protocol, subset), from the same records: only the judge differs. Its scores go to
``RUN_DIR/judge_scores/`` (lens.scoring.judging.judge_panel); its verdicts to the run's events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lens.data.config import JudgeConfig
from lens.scoring.foundations.types import RunScores
from lens.scoring.judging.judge_panel import stored_judge_configs


@dataclass(frozen=True)
class ExtraJudgeResult:
    label: str
    scores: RunScores
    path: Path
    new_verdicts: int


def extra_judges(primary: str | None, configured: Sequence[JudgeConfig], run_dir: Path
                 ) -> list[JudgeConfig]:
    """The judges to score beside the primary: the configured ones after it, then every judge
    added to the run before (so a re-scoring keeps them all under one condition)."""
    out: dict[str, JudgeConfig] = {}
    for cfg in [*configured, *stored_judge_configs(run_dir)]:
        if cfg.label != primary:
            out.setdefault(cfg.label, cfg)
    return list(out.values())
