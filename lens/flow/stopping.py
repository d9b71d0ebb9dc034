"""Sequential stopping inside ``lens run`` (the config's ``stopping`` section): the scope blocks
are answered in a seeded order, and after each block finished by every arm the primary metric's
paired verdicts are read from anytime-valid confidence sequences (lens.stats.sequential); once
every pair of arms is settled, no further unit starts.

A look scores the answers so far without a judge (tier 1, facts by the matcher), through the
same scoring call as ``lens score``; the metric must therefore be one lens computes without a
judge. The stop is recorded in events.jsonl (``run_stopped``) with the blocks and questions used
and every pair's interval at that point; ``lens run --resume --continue-past-stop`` answers the
rest. A look scores each finished block once (:mod:`lens.flow.look_reader`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import lens.scoring.metrics as registry
from lens.core.errors import ConfigError, Problem, did_you_mean
from lens.data.config import RunConfig, StoppingConfig
from lens.data.dataset import Dataset
from lens.flow.look_reader import LookReader
from lens.report.figures.groupstats import GroupScoring
from lens.runs.store import RunStore
from lens.scoring.plan import plan_from_settings
from lens.scoring.types import QuestionScores, RunScores
from lens.stats.sequential import block_order, family_verdicts, looked_at

STOP_EVENT = "run_stopped"
OVERRIDE_EVENT = "stop_overridden"
# Differences of a metric on [0, 1] lie in [−1, 1].
BOUND = 1.0


def stopping_metric(stopping: StoppingConfig) -> str:
    return stopping.metric or registry.COMPOSITE


def stopping_problems(config: RunConfig) -> list[tuple[str, str]]:
    """Every reason the config's stopping section cannot work, as (field, message)."""
    s = config.stopping
    if s is None:
        return []
    out: list[tuple[str, str]] = []
    if len(config.adapters) < 2:
        out.append(("stopping", "a verdict needs at least two arms and the config has one "
                    "adapter; add the adapter to compare against, or remove 'stopping'"))
    if not config.scoring.enabled:
        out.append(("stopping", "stopping reads the scores as the run goes and scoring is off; "
                    "set scoring.enabled: true, or remove 'stopping'"))
    if config.scoring.protocol != "lens":
        out.append(("stopping", f"stopping reads lens's metrics and the run is scored under "
                    f"the {config.scoring.protocol!r} protocol; remove 'stopping'"))
    metric = stopping_metric(s)
    judged = registry.judged_metrics() - {registry.COMPOSITE}
    known = (registry.COMPOSITE, *registry.question_metrics())
    if metric not in known:
        out.append(("stopping.metric", f"unknown metric {metric!r}; "
                    f"{did_you_mean(metric, [m for m in known if m not in judged], 'metric')}"))
    elif metric == registry.COMPOSITE:
        if config.judge is not None:
            out.append(("stopping.metric", "the composite of a run with a judge includes the "
                        "judge's metrics, which are known only after the run; name a metric "
                        "lens computes without the judge (e.g. stopping.metric: fact_recall)"))
    elif metric in judged:
        out.append(("stopping.metric", f"{metric} is graded by the judge, which is asked only "
                    "after the run; choose a metric lens computes as answers arrive (e.g. "
                    "fact_recall)"))
    if config.scoring.grader() not in (None, "matcher"):
        out.append(("scoring.fact_grader", f"stopping reads fact_recall as the matcher grades "
                    f"it during the run, and the run grades facts with "
                    f"{config.scoring.grader()!r}; set scoring.fact_grader: matcher, or remove "
                    "'stopping'"))
    return out


def check_stopping(config: RunConfig, config_file: str) -> None:
    problems = stopping_problems(config)
    if problems:
        raise ConfigError(f"{config_file}: invalid config: {len(problems)} problem(s) with "
                          "stopping", [Problem(config_file, f"field '{f}'", m)
                                       for f, m in problems])


def settings(stopping: StoppingConfig) -> dict[str, Any]:
    """The stopping settings as the run's condition records them."""
    return {**stopping.model_dump(mode="json"), "metric": stopping_metric(stopping)}


def scope_order(dataset: Dataset) -> list[str]:
    """The seeded order of the scope blocks: by a hash of each scope's question prompts, so
    renaming a scope (or the run) changes nothing."""
    return block_order({s.scope_id: sorted(q.prompt for q in dataset.questions_for(s.scope_id))
                        for s in dataset.scopes})


# A pair of arms by their labels (arm A, arm B): labels are free text, so a pair is never one
# joined string.
Pair = tuple[str, str]


def block_differences(scores: RunScores, arms: Sequence[str], blocks: Sequence[str],
                      metric: str) -> tuple[dict[Pair, list[float]], list[str]]:
    """Each pair's per-block difference of ``metric`` (arm j − arm i), over the questions every
    arm answered in the block, and the blocks used (a block where some arm has no value is
    left out)."""
    how = GroupScoring.of(scores)
    by: dict[tuple[str, str], list[QuestionScores]] = {}
    for row in scores.questions:
        by.setdefault((row.adapter, row.scope_id), []).append(row)
    pairs = list(combinations(range(len(arms)), 2))
    values: dict[Pair, list[float]] = {(arms[i], arms[j]): [] for i, j in pairs}
    used: list[str] = []
    for block in blocks:
        rows = [by.get((a, block), []) for a in arms]
        common = set.intersection(*({(r.question_id, r.repeat) for r in rs} for rs in rows))
        points = [how.point([r for r in rs if (r.question_id, r.repeat) in common]).get(metric)
                  if common else None for rs in rows]
        known = [p for p in points if p is not None]
        if len(known) < len(points):
            continue
        used.append(block)
        for i, j in pairs:
            diff = float(known[j]) - float(known[i])
            values[(arms[i], arms[j])].append(max(-BOUND, min(BOUND, diff)))
    return values, used


@dataclass
class RunStopper:
    """The runner's stop rule: the block order, and a look after each finished block."""

    config: RunConfig
    store: RunStore
    order: list[str]
    questions_total: int
    # Looks taken, for the record: (blocks, settled).
    looks: list[tuple[int, bool]] = field(default_factory=list)
    # The run's dataset as the runner holds it: a look scores against it (None: the file).
    dataset: Dataset | None = None
    reader: LookReader = field(init=False)

    def __post_init__(self) -> None:
        self.reader = LookReader(self.store.root, self.dataset)

    def release(self) -> None:
        """Let go of the dataset and what the looks kept, once the run's units are done."""
        self.dataset = None
        self.reader = LookReader(self.store.root)

    @property
    def arms(self) -> list[str]:
        return [a.display for a in self.config.adapters]

    async def look(self, done: Sequence[str]) -> bool:
        """Whether the run stops after the blocks ``done`` (a prefix of ``order``)."""
        s = self.config.stopping
        assert s is not None
        total = len(self.order)
        if not done or len(done) >= total or not looked_at(len(done), total, s.look_every):
            return False
        plan = plan_from_settings(
            self.config.scoring, None, None, tiers={1}, fact_grader="matcher",
            dataset_path=self.config.dataset.path, target="none",
            agent_model=self.config.agent.model)
        scores = await self.reader.scores(done, plan)
        metric = stopping_metric(s)
        values, used = block_differences(scores, self.arms, done, metric)
        if not used:
            self.looks.append((len(done), False))
            return False
        order = list(values)
        # family_verdicts names its pairs by strings: their positions here, never the labels.
        stop = family_verdicts({str(n): values[p] for n, p in enumerate(order)},
                               alpha=s.alpha, margin=s.margin, method=s.method, bound=BOUND)
        settled = stop.settled
        self.looks.append((len(done), settled))
        if not settled:
            return False
        blocks = set(done)
        asked = sum(1 for r in scores.questions if r.scope_id in blocks)
        pairs = []
        for n, (a, b) in enumerate(order):
            seq = stop.pairs[str(n)]
            look = seq.look
            pairs.append({"arm_a": a, "arm_b": b, "verdict": seq.verdict,
                          "blocks": seq.blocks, "alpha": seq.alpha,
                          "mean": look.mean if look else None,
                          "low": look.low if look else None,
                          "high": look.high if look else None})
        self.store.append_event(
            STOP_EVENT, reason=f"every pair of arms settled on {metric}", metric=metric,
            method=s.method, alpha=s.alpha, margin=s.margin, look_every=s.look_every,
            blocks=len(done), blocks_with_values=len(used), total_blocks=total,
            questions_used=asked, questions_total=self.questions_total,
            graded_by="matcher, no judge", blocks_done=list(done), pairs=pairs)
        return True
