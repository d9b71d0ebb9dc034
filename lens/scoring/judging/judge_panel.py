"""Several judges on one run: prompt versions, every extra judge's scores, and their verdicts.

A judge is a (model, prompt version) pair, named by its label (``openai/gpt-4o-mini`` or
``openai/gpt-4o-mini#strict``). The primary judge scores ``RUN_DIR/scores.json``; every other
judge scores the same records the same way into ``RUN_DIR/judge_scores/<slug>.json``. Each
judge's verdicts are kept in the run's events under its label, so adding a judge asks only that
judge, and scoring again with a judge asked before makes no new call.

Each extra judge scores under the primary's plan (lens.scoring.plan: same tiers, weights,
grader, protocol, subset), from the same records: only the judge differs. An extra judge's
scores are only valid beside the primary's when both were scored under the same condition but
for the judge; :func:`load_panel` sets the others aside, with a note.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from lens.core.redact import redact
from lens.data.config import JudgeConfig
from lens.data.scoring_names import JUDGE_GRADERS
from lens.models.base import Completion, CompletionRequest, Message, ModelClient
from lens.runs.store import atomic_write_text
from lens.scoring.foundations.detail import FactRecallDetail, PairwiseDetail
from lens.scoring.foundations.types import SCORES_FILE, RunScores
from lens.scoring.judging.judge_prompts import JUDGE_ADDENDA, JUDGE_SYSTEM, JUDGE_SYSTEMS

JUDGE_SCORES_DIR = "judge_scores"
# Condition fields that name the judge: everything else must match for judges to be set side
# by side.
_JUDGE_FIELDS = frozenset({"judge_model"})


class PromptVersionClient:
    """A judge client asked under another prompt version: its system message is the version's,
    and its model name carries the version, so its verdicts are keyed and stored apart."""

    def __init__(self, inner: ModelClient, version: str) -> None:
        self.inner = inner
        self.version = version
        self.provider = inner.provider
        self.model = f"{inner.model}#{version}"
        self._system = JUDGE_SYSTEMS[version]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def complete(self, request: CompletionRequest) -> Completion:
        if any(m.role == "system" and m.content == JUDGE_SYSTEM for m in request.messages):
            messages = [m.model_copy(update={"content": self._system})
                        if m.role == "system" and m.content == JUDGE_SYSTEM else m
                        for m in request.messages]
        else:
            # A published protocol's judge prompt (no lens system message): the version's
            # instruction comes first, as a system message, and the protocol's text is kept.
            messages = [Message(role="system", content=JUDGE_ADDENDA[self.version]),
                        *request.messages]
        return await self.inner.complete(request.model_copy(update={"messages": messages}))

    async def aclose(self) -> None:
        await self.inner.aclose()


def with_prompts(client: ModelClient, version: str) -> ModelClient:
    """``client`` asked under ``version`` (lens's own version leaves it as it is)."""
    return client if version == "lens" else PromptVersionClient(client, version)


def judge_slug(label: str) -> str:
    """A file name for a judge label: readable, and unique by its hash."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", label.rsplit("/", 1)[-1])[:40].strip("._")
    return f"{readable or 'judge'}-{hashlib.sha256(label.encode()).hexdigest()[:10]}"


def judge_scores_path(run_dir: Path, label: str) -> Path:
    return Path(run_dir) / JUDGE_SCORES_DIR / f"{judge_slug(label)}.json"


class JudgeScoresFile(BaseModel):
    """One extra judge's scores and the judge's settings (secrets masked), so the run can be
    scored again with it."""

    model_config = ConfigDict(extra="forbid")

    judge: dict[str, Any]
    scores: RunScores


def write_judge_scores(run_dir: Path, cfg: JudgeConfig, scores: RunScores) -> Path:
    path = judge_scores_path(run_dir, cfg.label)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = JudgeScoresFile(judge=redact(cfg.model_dump(mode="json")), scores=scores)
    atomic_write_text(path, doc.model_dump_json(indent=1))
    return path


def stored_judges(run_dir: Path) -> dict[str, JudgeScoresFile]:
    """Every extra judge's scores file, by label; an unreadable file is skipped (the panel
    names it)."""
    out: dict[str, JudgeScoresFile] = {}
    folder = Path(run_dir) / JUDGE_SCORES_DIR
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            doc = JudgeScoresFile.model_validate_json(path.read_text(encoding="utf-8"))
        except (ValidationError, OSError, UnicodeDecodeError):
            continue
        if doc.scores.judge.model:
            out[doc.scores.judge.model] = doc
    return out


def stored_judge_configs(run_dir: Path) -> list[JudgeConfig]:
    """The settings of every judge added to the run before (readable ones)."""
    out = []
    for doc in stored_judges(run_dir).values():
        try:
            out.append(JudgeConfig.model_validate(doc.judge))
        except ValidationError:
            continue
    return out


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


def _without_judge(condition: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in condition.items() if k not in _JUDGE_FIELDS}


@dataclass
class Panel:
    """The judges of one run: the primary first, then every extra judge scored under the same
    condition, and why any stored judge is left out."""

    scores: dict[str, RunScores] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        return list(self.scores)


def load_panel(run_dir: Path, primary: RunScores | None) -> Panel:
    panel = Panel()
    if primary is None or not primary.judge.model:
        if stored_judges(run_dir):
            panel.notes.append(
                f"{JUDGE_SCORES_DIR}/ holds other judges' scores, but {SCORES_FILE} has no "
                "judge: they are not shown (score the run with a judge first)")
        return panel
    panel.scores[primary.judge.model] = primary
    for label, doc in stored_judges(run_dir).items():
        if label == primary.judge.model:
            continue
        if _without_judge(doc.scores.condition) != _without_judge(primary.condition):
            panel.notes.append(
                f"judge {label}: its scores were made under another scoring condition than "
                f"{SCORES_FILE}; not shown (re-score: lens score RUN_DIR --judge "
                f"{label.split('#')[0]})")
            continue
        panel.scores[label] = doc.scores
    for label, scores in panel.scores.items():
        j = scores.judge
        if j.errors or j.invalid:
            panel.notes.append(
                f"judge {label}: {j.errors} failed call(s), {j.invalid} unreadable verdict(s): "
                "the scores resting on them are unknown (lens score RUN_DIR --judge "
                f"{label} asks again)")
    return panel


def verdict_units(scores: RunScores) -> dict[tuple[str, str, str], str]:
    """Every judged outcome of the scores, keyed the same for every judge: (question key, what
    was judged, the fact or criterion) -> the outcome (``candidate``/``tie``/``canonical`` for a
    pairwise comparison, ``present``/``partial``/``absent`` for a fact grade)."""
    out: dict[tuple[str, str, str], str] = {}
    for q in scores.questions:
        d = q.details
        for metric in ("answer_quality", "action_quality"):
            pairwise = d.block(metric, PairwiseDetail)
            for c in pairwise.comparisons if pairwise else ():
                if c.final:
                    out[(q.key, metric, str(c.label))] = c.final
        facts = d.block("fact_recall", FactRecallDetail)
        if facts is not None and facts.grader in JUDGE_GRADERS:
            for f in facts.facts:
                if f.grade:
                    out[(q.key, "fact_grade", str(f.fact))] = str(f.grade)
    return out


def judge_config_for(model: str, known: list[JudgeConfig]) -> JudgeConfig:
    """The settings for ``--judge MODEL``: a known judge's (by label or model) if there is one,
    else the model under lens's prompts; ``MODEL#version`` picks a prompt version."""
    for cfg in known:
        if model in (cfg.label, cfg.model) and (cfg.prompts == "lens" or "#" in model):
            return cfg
    base, _, version = model.partition("#")
    return JudgeConfig(model=base, prompts=version or "lens")  # type: ignore[arg-type]  # pydantic checks the version

