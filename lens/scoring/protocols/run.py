"""Score a stored run under a published protocol: per-question metrics, per-group tables, the
protocol's headline figures, errata, and the report section that shows them.

The protocol's numbers replace lens's own metrics in ``scores.json`` (a run scored under a
protocol is compared only with runs scored under the same protocol and version). Judge verdicts
are kept in the run's events by the same judge engine as lens's own
(:mod:`lens.scoring.judging.judge_engine`), so re-scoring makes no new call.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lens.core.errors import UserError
from lens.data.dataset import Question
from lens.models.base import ModelClient
from lens.runs.condition import stable_hash
from lens.runs.store import RunStore
from lens.scoring.condition import scoring_condition
from lens.scoring.errata import Errata, ErrataReport, apply_errata
from lens.scoring.judging.judge_engine import Ask, JudgeEngine, JudgeUsage, Verdict, verdict_totals
from lens.scoring.judging.judge_prompts import INVALID
from lens.scoring.plan import ScoringOutcome, ScoringPlan
from lens.scoring.protocols.base import Protocol, ProtocolTask
from lens.scoring.run_input import RunInput, ScoringItem
from lens.scoring.types import JudgeSummary, QuestionScores, RunScores

SECTION_FILE = Path("sections") / "protocol.json"
_VALUES = {1.0: "correct", 0.0: "wrong"}


class ProtocolJudge:
    """Asks a protocol's judge tasks through the judge engine, reusing the verdicts stored in
    the run under this protocol."""

    def __init__(self, client: ModelClient, protocol: Protocol, store: RunStore | None, *,
                 concurrency: int = 16) -> None:
        self.protocol = protocol
        self.engine = JudgeEngine(client, store, concurrency=concurrency, scope=protocol.name)
        self.model = self.engine.model

    @property
    def usage(self) -> JudgeUsage:
        return self.engine.usage

    async def run(self, tasks: Iterable[ProtocolTask]) -> dict[str, Verdict]:
        return await self.engine.run(self._ask(t) for t in tasks)

    def _ask(self, task: ProtocolTask) -> Ask:
        key = task.key(self.model)
        return Ask(key, task.prompt_id, task.request(key),
                   functools.partial(self._read, task.prompt_id))

    def _read(self, prompt_id: str, text: str) -> str:
        # correct/wrong for 1/0, the number itself for a graded reply (see _label).
        value = self.protocol.parse(prompt_id, text)
        return _label(value) if value is not None else INVALID


@dataclass
class _Row:
    item: ScoringItem
    question: Question | None
    scores: QuestionScores
    tasks: dict[str, ProtocolTask]


def _label(value: float | None) -> str:
    """A verdict as stored: correct/wrong for 1/0, the number itself for a graded reply (a rubric
    item's 0.5, a count of supported key points)."""
    if value is None:
        return "invalid"
    return _VALUES.get(value) or f"{value:g}"


def _value(verdict: Verdict | None) -> float | None:
    if verdict is None:
        return None
    known = {"correct": 1.0, "wrong": 0.0}.get(verdict.value)
    if known is not None:
        return known
    try:
        return float(verdict.value)
    except ValueError:
        return None


async def score_protocol(run: RunInput, protocol: Protocol, plan: ScoringPlan,
                         errata: Errata | None, notes: Sequence[str] = ()) -> ScoringOutcome:
    """Score ``run`` under a published ``protocol``. ``plan.judge`` is the judge client (None:
    the judged metrics are unknown); ``plan.subset`` names the questions the scorer kept
    (``run.items`` holds only them) and ``notes`` say what it left out."""
    fixed: dict[tuple[str, str], Question | None] | None = None
    report: ErrataReport | None = None
    if errata is not None:
        # Questions the run left out count as the lens protocol counts them.
        fixed, report = apply_errata(run.dataset.questions, errata,
                                     dataset_id=run.dataset.dataset_id,
                                     dropped=[d.question_id for d in run.manifest.dataset.dropped])
    judge = plan.judge
    rows = _question_rows(run, protocol, fixed, judged=judge is not None)
    pj: ProtocolJudge | None = None
    verdicts: dict[str, Verdict] = {}
    if judge is not None:
        pj = ProtocolJudge(judge, protocol, run.store, concurrency=plan.judge_concurrency())
        verdicts = await pj.run(t for row in rows for t in row.tasks.values())
    model = pj.model if pj else None
    _apply_verdicts(rows, protocol, model, verdicts)
    settings = _settings(protocol, errata, plan.subset)
    cond = scoring_condition(tiers={1}, weights={}, gate_threshold=0.0, judge_model=model,
                             settings=settings)
    scores = RunScores(run_dir=str(run.run_dir), tiers=[1], questions=[r.scores for r in rows],
                       judge=_judge_summary(pj, verdicts, rows), weights={},
                       gate_threshold=0.0,
                       aggregates=_aggregates(protocol,
                                              [r for r in rows if r.question is not None]),
                       notes=[*notes, *_notes(protocol, model, report, pj, rows),
                              *protocol.run_notes(run.manifest.as_dict()),
                              *protocol.score_notes(
                                  [(r.scores.detail["protocol"]["group"], r.scores.metrics)
                                   for r in rows if r.question is not None])],
                       settings=settings, condition=cond, condition_hash=stable_hash(cond))
    event = {"protocol": protocol.name, "judge": pj.model if pj else None,
             "new_judge_calls": pj.usage.calls if pj else 0,
             "reused_verdicts": pj.usage.reused if pj else 0,
             "failed_judge_calls": pj.usage.errors if pj else 0}
    return ScoringOutcome(scores, event,
                          {SECTION_FILE: protocol_section(protocol, scores, report)})


def _question_rows(run: RunInput, protocol: Protocol,
                   fixed: dict[tuple[str, str], Question | None] | None, *, judged: bool
                   ) -> list[_Row]:
    """One row per stored question, its mechanical metrics filled in; a UserError when the
    protocol cannot score some question."""
    rows: list[_Row] = []
    problems: list[str] = []
    for item in run.items:
        asked = item.question
        q = asked if fixed is None else fixed.get((asked.scope_id, asked.question_id), asked)
        row, problem = _question_row(item, q, protocol, judged)
        rows.append(row)
        if problem:
            problems.append(problem)
    if problems:
        raise UserError(f"{run.run_dir}: protocol {protocol.name} cannot score "
                        f"{len(problems)} question(s): {problems[0]}")
    return rows


def _question_row(item: ScoringItem, q: Question | None, protocol: Protocol, judged: bool
                  ) -> tuple[_Row, str]:
    """The row of one question (``q``: its ground truth after errata, None if excluded) and
    why the protocol cannot score it ("" when it can)."""
    r = item.record
    scores = QuestionScores(key=r.key, unit_key=r.unit_key, adapter=r.adapter,
                            scope_id=r.scope_id, repeat=r.repeat, question_id=r.question_id,
                            question_type=item.question.question_type.value,
                            checkpoint=r.checkpoint, status=r.status)
    row = _Row(item, q, scores, {})
    if q is None:
        scores.detail["errata"] = "excluded by the gold errata"
        return row, ""
    why = protocol.check(q)
    if why:
        return row, why
    scores.detail["protocol"] = {"name": protocol.name, "group": protocol.group(q)}
    answer = r.answer.strip() if item.answered else ""
    scores.metrics.update(protocol.mechanical(q, answer))
    scores.metrics.update(protocol.record_metrics(q, r))
    if not answer:
        # An errored or empty answer is wrong by every judged metric: erroring cannot
        # lift a score, and no judge call is needed to say so.
        scores.metrics.update(protocol.combine(q, "", dict.fromkeys(protocol.tasks(q, "-"), 0.0)))
        scores.detail["reason"] = ("errored: scored as a wrong answer" if not item.answered
                                   else "empty answer: scored as wrong (no judge call)")
    elif judged:
        row.tasks = protocol.tasks(q, answer)
    return row, ""


def _apply_verdicts(rows: list[_Row], protocol: Protocol, model: str | None,
                    verdicts: dict[str, Verdict]) -> None:
    """Each judged metric from its task verdicts; unknown (None) where no verdict came back."""
    for row in rows:
        if row.question is None:
            continue
        values: dict[str, float | None] = {}
        for name, task in row.tasks.items():
            assert model is not None
            v = verdicts.get(task.key(model))
            values[name] = _value(v)
            row.scores.detail[name] = {"verdict": v.value if v else None,
                                       "prompt": task.prompt_id}
            if v is None:
                row.scores.detail[name]["reason"] = ("the judge call failed; re-run lens "
                                                     "score to retry it")
        if row.tasks:
            answer = row.item.record.answer.strip() if row.item.answered else ""
            row.scores.metrics.update(protocol.combine(row.question, answer, values))
        for metric in protocol.metrics:
            row.scores.metrics.setdefault(metric, None)


def _judge_summary(pj: ProtocolJudge | None, verdicts: dict[str, Verdict], rows: list[_Row]
                   ) -> JudgeSummary:
    if pj is None:
        return JudgeSummary()
    used = [verdicts[t.key(pj.model)] for r in rows for t in r.tasks.values()
            if t.key(pj.model) in verdicts]
    return JudgeSummary(model=pj.model, errors=pj.usage.errors, **verdict_totals(used))


def _settings(protocol: Protocol, errata: Errata | None, subset: str) -> dict[str, Any]:
    settings: dict[str, Any] = {"protocol": protocol.condition()}
    if errata is not None:
        settings["errata"] = errata.condition()
    if subset != "all":
        # Recorded only when it narrows the questions, so the condition of a protocol scoring
        # of every question keeps the hash it had before the subset was recorded.
        settings["subset"] = subset
    return settings


def _aggregates(protocol: Protocol, rows: list[_Row]
                ) -> dict[str, dict[str, dict[str, float | None]]]:
    """Overall figures per adapter (level "adapter") and per group (level "adapter/<group
    label>", keys "adapter|group")."""
    level = f"adapter/{protocol.group_label.replace(' ', '_')}"
    out: dict[str, dict[str, dict[str, float | None]]] = {"adapter": {}, level: {}}
    adapters = list(dict.fromkeys(r.scores.adapter for r in rows))
    for a in adapters:
        mine = [(r.scores.detail["protocol"]["group"], r.scores.metrics)
                for r in rows if r.scores.adapter == a]
        entry: dict[str, float | None] = {"n_questions": float(len(mine))}
        entry.update(protocol.overall(mine))
        out["adapter"][a] = entry
        for g, stats in protocol.by_group(mine).items():
            out[level][f"{a}|{g}"] = {"n_questions": float(stats.n), **stats.values}
    return out


def _notes(protocol: Protocol, model: str | None, report: ErrataReport | None,
           pj: ProtocolJudge | None, rows: list[_Row]) -> list[str]:
    notes = [f"scored under the {protocol.title} protocol, version {protocol.version} "
             f"({protocol.source}); lens's own metrics are not computed"]
    judged = protocol.published_judge is not None
    if judged and model is None:
        notes.append("no judge: the judged metrics are unknown")
    elif judged and model != protocol.published_judge:
        notes.append(f"the published {protocol.title} numbers use the judge "
                     f"{protocol.published_judge}; this scoring used {model}, so its judged "
                     "numbers are not the published condition")
    errored = sum(1 for r in rows if r.question is not None and not r.item.answered)
    if errored:
        notes.append(f"{errored} errored question(s) are scored as wrong answers")
    if pj is not None and pj.usage.errors:
        messages = pj.usage.error_messages
        notes.append(f"{pj.usage.errors} judge call(s) failed (their metric is unknown; re-run "
                     f"lens score to retry): {messages[0] if messages else ''}")
    if report is not None:
        notes.append(report.note())
    return notes


def _fmt(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def protocol_section(protocol: Protocol, scores: RunScores, report: ErrataReport | None
                     ) -> dict[str, Any]:
    """The report section (``RUN_DIR/sections/protocol.json``): overall figures and the
    per-group table of each adapter, in the protocol's order and naming."""
    level = f"adapter/{protocol.group_label.replace(' ', '_')}"
    tables = []
    overall_cols = sorted({k for e in scores.aggregates["adapter"].values() for k in e}
                          - {"n_questions"})
    tables.append({"title": "overall", "columns": ["adapter", "questions", *overall_cols],
                   "rows": [[a, int(e.get("n_questions") or 0), *(_fmt(e.get(c))
                                                                  for c in overall_cols)]
                            for a, e in scores.aggregates["adapter"].items()]})
    for a in scores.aggregates["adapter"]:
        rows = []
        for key, e in scores.aggregates[level].items():
            adapter, group = key.split("|", 1)
            if adapter == a:
                rows.append([group, int(e.get("n_questions") or 0),
                             *(_fmt(e.get(m)) for m in protocol.metrics)])
        tables.append({"title": f"{a}: by {protocol.group_label}",
                       "columns": [protocol.group_label, "questions", *protocol.metrics],
                       "rows": rows})
    metrics: dict[str, Any] = {"protocol_version": protocol.version}
    if report is not None:
        metrics.update({"errata_touched": report.touched, "errata_excluded": len(report.excluded),
                        "errata_corrected": len(report.corrected),
                        "score_ceiling_uncorrected_gold": _fmt(report.ceiling)})
    return {"title": f"{protocol.title} protocol (version {protocol.version})",
            "metrics": metrics, "tables": tables, "notes": list(scores.notes)}

