"""The one path every scoring protocol goes through, lens's own metrics and the published ones
alike: the ground truth after the gold errata, a question's row, then (from what the protocol
scored) the judge summary, the settings and the scoring condition, ``scores.json``'s numbers and
the ``scoring_done`` event's fields, built here for every protocol.

A protocol (:class:`ScoringProtocol`) scores the questions it is handed and nothing else: lens's
own metrics (:mod:`lens.scoring.protocols.lens`) or a published benchmark's
(:class:`PublishedProtocol`, over the task shape of :mod:`lens.scoring.protocols.base`). The
questions a run dropped (its manifest's ``dataset.dropped``) are not in the dataset it is scored
against, so no protocol scores them, and an erratum naming one counts as an exclusion.

Under a published protocol its numbers replace lens's own metrics in ``scores.json`` (a run
scored under a protocol is compared only with runs scored under the same protocol and version).
Judge verdicts are kept in the run's events by one judge engine
(:mod:`lens.scoring.judging.judge_engine`), so re-scoring makes no new call.
"""

from __future__ import annotations

import dataclasses
import functools
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lens.core.errors import UserError
from lens.data.dataset import Question
from lens.models.base import ModelClient
from lens.runs.condition import stable_hash
from lens.runs.events import ScoringDone
from lens.runs.sections import Cell, SectionDoc, SectionTable
from lens.runs.store import RunStore
from lens.scoring.foundations.condition import scoring_condition
from lens.scoring.foundations.errata import Errata, ErrataReport, apply_errata
from lens.scoring.foundations.run_input import RunInput, ScoringItem
from lens.scoring.foundations.types import JudgeSummary, QuestionScores, RunScores
from lens.scoring.judging.judge_engine import Ask, JudgeEngine, JudgeUsage, Verdict, verdict_totals
from lens.scoring.judging.judge_prompts import INVALID
from lens.scoring.plan import ScoringOutcome, ScoringPlan
from lens.scoring.protocols.base import Protocol, ProtocolTask

SECTION_FILE = Path("sections") / "protocol.json"
_VALUES = {1.0: "correct", 0.0: "wrong"}

Aggregates = dict[str, dict[str, dict[str, float | None]]]


@dataclass
class Scoring:
    """What the path hands a protocol: the run, the plan, every stored question with its ground
    truth after the errata (in the run's order), the keys of those the errata exclude, and what
    the errata did (None: no errata)."""

    run: RunInput
    plan: ScoringPlan
    items: list[ScoringItem]
    excluded: frozenset[str] = frozenset()
    report: ErrataReport | None = None

    def kept(self) -> list[ScoringItem]:
        """The questions the errata leave in the score."""
        return [it for it in self.items if it.key not in self.excluded]


@dataclass(frozen=True)
class JudgeRun:
    """What the judge did for one scoring: its model, its usage, the verdicts the scores rest
    on, and (for pairwise metrics) the position-swapped pairs and how many flipped."""

    model: str
    usage: JudgeUsage
    verdicts: list[Verdict]
    pairs: int = 0
    disagreements: int = 0
    fact_checks: bool = False


@dataclass
class Scored:
    """What a protocol scored: a row per question (in the run's order), the aggregates, its own
    settings (the path adds the errata's and the subset's), its notes, the judge (None: none
    asked) and the figures of the condition it scored under."""

    questions: list[QuestionScores]
    aggregates: Aggregates
    settings: dict[str, Any]
    notes: list[str]
    judge: JudgeRun | None
    tiers: frozenset[int] = frozenset({1})
    weights: dict[str, float] = field(default_factory=dict)
    gate_threshold: float = 0.0
    aggregate_detail: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)


class ScoringProtocol(ABC):
    """A way of scoring a run's questions: lens's own metrics, or a published benchmark's."""

    name: str

    @abstractmethod
    async def score_questions(self, scoring: Scoring) -> Scored:
        """Every question of ``scoring`` scored (the judge is ``scoring.plan.judge``; None: the
        judged metrics are unknown)."""

    def sections(self, scores: RunScores, report: ErrataReport | None
                 ) -> dict[Path, SectionDoc]:
        """The report sections to write beside ``scores.json`` (relative path -> document);
        none by default."""
        return {}


def question_row(item: ScoringItem) -> QuestionScores:
    """A question's row before any metric: which question, asked of whom, and how it ended."""
    r = item.record
    return QuestionScores(key=r.key, unit_key=r.unit_key, adapter=r.adapter, scope_id=r.scope_id,
                          repeat=r.repeat, question_id=r.question_id,
                          question_type=item.question.question_type.value,
                          checkpoint=r.checkpoint, status=r.status)


def judge_summary(judge: JudgeRun | None) -> JudgeSummary:
    """The scores' account of the judge: its verdicts' totals, failures and noise."""
    if judge is None:
        return JudgeSummary()
    return JudgeSummary(
        model=judge.model, pairs=judge.pairs, disagreements=judge.disagreements,
        disagreement_rate=judge.disagreements / judge.pairs if judge.pairs else None,
        errors=judge.usage.errors, fact_checks=judge.fact_checks,
        **verdict_totals(judge.verdicts))


def _with_errata(run: RunInput, plan: ScoringPlan, errata: Errata | None) -> Scoring:
    """The run's questions with the errata applied to their ground truth. An erratum naming a
    question the run dropped counts as excluded, whatever the protocol."""
    if errata is None:
        return Scoring(run, plan, list(run.items))
    fixed, report = apply_errata(run.dataset.questions, errata, dataset_id=run.dataset.dataset_id,
                                 dropped=[d.question_id for d in run.manifest.dataset.dropped])
    items: list[ScoringItem] = []
    excluded: set[str] = set()
    for item in run.items:
        q = fixed.get((item.question.scope_id, item.question.question_id), item.question)
        if q is None:
            excluded.add(item.key)
            items.append(item)
        else:
            items.append(dataclasses.replace(item, question=q))
    return Scoring(run, plan, items, frozenset(excluded), report)


def _settings(scored: Scored, errata: Errata | None, subset: str) -> dict[str, Any]:
    settings = dict(scored.settings)
    if errata is not None:
        settings["errata"] = errata.condition()
    if subset != "all":
        # Recorded when it narrows the questions (a protocol may record it always), so the
        # condition of a scoring of every question keeps the hash it had before the subset was
        # recorded.
        settings.setdefault("subset", subset)
    return settings


def _done(protocol: ScoringProtocol, scores: RunScores, judge: JudgeRun | None,
          errata: Errata | None, report: ErrataReport | None) -> ScoringDone:
    """The ``scoring_done`` event of a scoring: the same fields for every protocol."""
    done = ScoringDone(
        protocol=protocol.name, tiers=scores.tiers, judge=judge.model if judge else None,
        new_judge_calls=judge.usage.calls if judge else 0,
        reused_verdicts=judge.usage.reused if judge else 0,
        failed_judge_calls=judge.usage.errors if judge else 0)
    if errata is not None and report is not None:
        # Set only then: the event carries the fields a scoring set.
        done.errata, done.errata_touched = errata.path.name, report.touched
    return done


async def score_protocol(run: RunInput, protocol: ScoringProtocol, plan: ScoringPlan,
                         errata: Errata | None, notes: Sequence[str] = ()) -> ScoringOutcome:
    """Score ``run`` under ``protocol``. ``plan.judge`` is the judge client (None: the judged
    metrics are unknown); ``plan.subset`` names the questions the scorer kept (``run.items``
    holds only them) and ``notes`` (what it left out) go first among the scores' notes."""
    scoring = _with_errata(run, plan, errata)
    scored = await protocol.score_questions(scoring)
    settings = _settings(scored, errata, plan.subset)
    model = scored.judge.model if scored.judge else None
    cond = scoring_condition(tiers=scored.tiers, weights=scored.weights,
                             gate_threshold=scored.gate_threshold, judge_model=model,
                             settings=settings)
    scores = RunScores(
        run_dir=str(run.run_dir), tiers=sorted(scored.tiers), questions=scored.questions,
        judge=judge_summary(scored.judge), weights=scored.weights,
        gate_threshold=scored.gate_threshold, aggregates=scored.aggregates,
        aggregate_detail=scored.aggregate_detail, notes=[*notes, *scored.notes],
        settings=settings, condition=cond, condition_hash=stable_hash(cond))
    done = _done(protocol, scores, scored.judge, errata, scoring.report)
    return ScoringOutcome(scores, done, protocol.sections(scores, scoring.report))


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


class PublishedProtocol(ScoringProtocol):
    """A published benchmark's protocol on the one path: per-question metrics (mechanical, or a
    judge call each with the protocol's own prompt), its per-group tables and headline figures,
    and its report section."""

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self.name = protocol.name

    async def score_questions(self, scoring: Scoring) -> Scored:
        protocol, judge = self.protocol, scoring.plan.judge
        rows = _question_rows(scoring, protocol, judged=judge is not None)
        pj: ProtocolJudge | None = None
        verdicts: dict[str, Verdict] = {}
        if judge is not None:
            pj = ProtocolJudge(judge, protocol, scoring.run.store,
                               concurrency=scoring.plan.judge_concurrency())
            verdicts = await pj.run(t for row in rows for t in row.tasks.values())
        model = pj.model if pj else None
        _apply_verdicts(rows, protocol, model, verdicts)
        scored = [r for r in rows if r.question is not None]
        notes = [*_notes(protocol, model, scoring.report, pj, rows),
                 *protocol.run_notes(scoring.run.manifest.as_dict()),
                 *protocol.score_notes([(r.scores.detail["protocol"]["group"], r.scores.metrics)
                                        for r in scored])]
        return Scored(questions=[r.scores for r in rows], aggregates=_aggregates(protocol, scored),
                      settings={"protocol": protocol.condition()}, notes=notes,
                      judge=_judge_run(pj, verdicts, rows))

    def sections(self, scores: RunScores, report: ErrataReport | None
                 ) -> dict[Path, SectionDoc]:
        return {SECTION_FILE: protocol_section(self.protocol, scores, report)}


def _question_rows(scoring: Scoring, protocol: Protocol, *, judged: bool) -> list[_Row]:
    """One row per stored question, its mechanical metrics filled in; a UserError when the
    protocol cannot score some question."""
    rows: list[_Row] = []
    problems: list[str] = []
    for item in scoring.items:
        q = None if item.key in scoring.excluded else item.question
        row, problem = _question_row(item, q, protocol, judged)
        rows.append(row)
        if problem:
            problems.append(problem)
    if problems:
        raise UserError(f"{scoring.run.run_dir}: protocol {protocol.name} cannot score "
                        f"{len(problems)} question(s): {problems[0]}")
    return rows


def _question_row(item: ScoringItem, q: Question | None, protocol: Protocol, judged: bool
                  ) -> tuple[_Row, str]:
    """The row of one question (``q``: its ground truth after errata, None if excluded) and
    why the protocol cannot score it ("" when it can)."""
    r = item.record
    scores = question_row(item)
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


def _judge_run(pj: ProtocolJudge | None, verdicts: dict[str, Verdict], rows: list[_Row]
               ) -> JudgeRun | None:
    if pj is None:
        return None
    used = [verdicts[t.key(pj.model)] for r in rows for t in r.tasks.values()
            if t.key(pj.model) in verdicts]
    return JudgeRun(pj.model, pj.usage, used)


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


def _judge_note(protocol: Protocol, model: str | None) -> str | None:
    """What a protocol's judged metrics mean under this scoring's judge: unknown without one,
    off the published condition with another than the publisher's."""
    if protocol.published_judge is None:
        return None
    if model is None:
        return "no judge: the judged metrics are unknown"
    if model != protocol.published_judge:
        return (f"the published {protocol.title} numbers use the judge "
                f"{protocol.published_judge}; this scoring used {model}, so its judged "
                "numbers are not the published condition")
    return None


def _notes(protocol: Protocol, model: str | None, report: ErrataReport | None,
           pj: ProtocolJudge | None, rows: list[_Row]) -> list[str]:
    notes = [f"scored under the {protocol.title} protocol, version {protocol.version} "
             f"({protocol.source}); lens's own metrics are not computed"]
    judge_note = _judge_note(protocol, model)
    if judge_note:
        notes.append(judge_note)
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


def _group_table(protocol: Protocol, by_group: dict[str, dict[str, float | None]],
                 adapter: str) -> SectionTable:
    """One adapter's figures by the protocol's group, in the protocol's metric order."""
    rows: list[list[Cell]] = []
    for key, e in by_group.items():
        own, group = key.split("|", 1)
        if own == adapter:
            rows.append([group, int(e.get("n_questions") or 0),
                         *(_fmt(e.get(m)) for m in protocol.metrics)])
    return {"title": f"{adapter}: by {protocol.group_label}",
            "columns": [protocol.group_label, "questions", *protocol.metrics], "rows": rows}


def protocol_section(protocol: Protocol, scores: RunScores, report: ErrataReport | None
                     ) -> SectionDoc:
    """The report section (``RUN_DIR/sections/protocol.json``): overall figures and the
    per-group table of each adapter, in the protocol's order and naming."""
    level = f"adapter/{protocol.group_label.replace(' ', '_')}"
    tables: list[SectionTable] = []
    overall_cols = sorted({k for e in scores.aggregates["adapter"].values() for k in e}
                          - {"n_questions"})
    tables.append({"title": "overall", "columns": ["adapter", "questions", *overall_cols],
                   "rows": [[a, int(e.get("n_questions") or 0), *(_fmt(e.get(c))
                                                                  for c in overall_cols)]
                            for a, e in scores.aggregates["adapter"].items()]})
    tables.extend(_group_table(protocol, scores.aggregates[level], a)
                  for a in scores.aggregates["adapter"])
    metrics: dict[str, Cell] = {"protocol_version": protocol.version}
    if report is not None:
        metrics.update({"errata_touched": report.touched, "errata_excluded": len(report.excluded),
                        "errata_corrected": len(report.corrected),
                        "score_ceiling_uncorrected_gold": _fmt(report.ceiling)})
    return {"title": f"{protocol.title} protocol (version {protocol.version})",
            "metrics": metrics, "tables": tables, "notes": list(scores.notes)}

