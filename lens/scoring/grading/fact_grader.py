"""Per-fact grading with partial credit: who decides whether an answer states each key fact.

``matcher``: the phrase matcher alone (free, deterministic, blind to paraphrase: its
fact_recall is a lower bound). ``local``: the offline grader (lens.scoring.grading.offline_grader):
the matcher's credit, and the local model reading lens's per-fact judge prompt for what the
matcher misses; the default when no judge is configured and the ``local`` extra is installed.
``judge``: the judge grades each key fact present (1), partial (0.5) or absent (0) with a fixed
rubric and examples
(``judge_prompts.FACT_GRADE_TEMPLATE``). ``both``: the judge's grades count, and the matcher's
verdict is kept beside each one with their agreement, to audit either. A question's
conclusion is graded as one more fact, and a fact whose figure, date or identifier the matcher
finds missing, denied, only in a bare list or given to another subject earns no points
whatever its grade (``VETO_REASONS``), from the judge or the local model alike.

Each grader's grades become a :class:`~lens.scoring.measures.fact_recall.FactCredit`, and the
question's fact_recall is the one rule of :mod:`lens.scoring.measures.fact_recall` on it (a missing
grade leaves it unknown, a contradicted or two-way conclusion makes it 0, the stuffing factor
discounts it), as for the matcher's own grades.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict, cast

from lens.data.scoring_names import FACT_GRADERS, JUDGE_GRADERS, FactGraderName
from lens.scoring.foundations.run_input import ScoringItem
from lens.scoring.grading.offline_grader import FactGrade
from lens.scoring.judging.judge import JudgeTask, Verdict, fact_grade_task
from lens.scoring.judging.judge_prompts import GRADE_POINTS
from lens.scoring.measures.fact_recall import ConclusionItem, FactCredit, stuffing_of
from lens.scoring.text.conclusion import conclusion_as_fact

FactGrader = FactGraderName
# Matcher verdicts on a fact's value that no judge grade overrides.
VETO_REASONS = frozenset({"figure missing", "date missing", "identifier missing", "denied",
                          "bare list", "change reversed", "about another subject"})
GRADERS = FACT_GRADERS


def offline_available() -> bool:
    """Whether the offline grader can run here: llama-cpp-python and the default local model's
    parts (the ``local`` extra) are installed. Nothing is loaded."""
    from importlib.util import find_spec

    from lens.models.local_models import DEFAULT_LOCAL_MODEL, LOCAL_MODELS

    spec = LOCAL_MODELS[DEFAULT_LOCAL_MODEL]
    return (find_spec("llama_cpp") is not None
            and find_spec(f"{spec.module_prefix}{spec.parts}") is not None)


def is_model_free(agent_model: str) -> bool:
    """A run whose agent is scripted (``scripted/…``: the no-model baseline, and tests) calls no
    model, and by default its scoring calls none either."""
    return agent_model.startswith("scripted/")


def resolve_grader(requested: str | None, has_judge: bool, *,
                   model_free: bool = False) -> FactGrader:
    """The grader in force: the one asked for; else ``judge`` when there is a judge, else the
    offline grader (``local``) when it is installed and the run may use a model, else
    ``matcher``. ``model_free`` runs (a scripted agent: the no-model baseline) keep fact grading
    model-free too. Asking for judge grading without a judge is a user error."""
    if requested is None:
        if has_judge:
            return "judge"
        return "local" if not model_free and offline_available() else "matcher"
    if requested not in GRADERS:
        raise ValueError(f"fact grader {requested!r}: use one of {', '.join(GRADERS)}")
    if requested in JUDGE_GRADERS and not has_judge:
        raise ValueError(f"fact grader {requested!r} needs a judge model: configure a judge "
                         "(judge: model: …, or --judge MODEL) or use the matcher")
    return cast(FactGrader, requested)  # a member of GRADERS, checked above


def grade_tasks(item: ScoringItem) -> dict[str, JudgeTask]:
    """One grading task per key fact of the question, and one for its conclusion when it has
    one (none for an empty answer)."""
    if not item.record.answer.strip():
        return {}
    q = item.question
    facts = list(q.ground_truth.key_facts)
    if q.ground_truth.conclusion:
        facts.append(conclusion_as_fact(q.ground_truth.conclusion))
    return {f: fact_grade_task(q.prompt, f, item.record.answer) for f in dict.fromkeys(facts)}


class JudgedFactRow(TypedDict):
    """One key fact as the judge graded it, in fact_recall's detail."""

    fact: str
    grade: str | None
    points: float | None
    method: str
    matcher_veto: NotRequired[str]
    matcher: NotRequired[bool]
    unbacked: NotRequired[str]


def judge_credit(detail: Mapping[str, Any], matcher_value: float | None,
                 tasks: dict[str, JudgeTask], verdicts: dict[str, Verdict], model: str,
                 grader: FactGrader) -> tuple[FactCredit, dict[str, Any]] | None:
    """The judge's grades of one question's items (``tasks``), under the matcher's veto, as
    the question's :class:`FactCredit` and its grades' detail; None when the judge grades no
    item. ``detail`` and ``matcher_value`` are the matcher's."""
    if grader == "matcher" or not tasks:
        return None
    by_fact = {f.get("fact"): f for f in detail.get("facts", []) if isinstance(f, dict)}
    rows, failed, unreadable = _judge_rows(tasks, verdicts, model, by_fact, grader)
    credit = _with_conclusion(rows, detail)
    out: dict[str, Any] = {"grader": grader, "facts": rows}
    if grader == "both":
        out["matcher_recall"] = matcher_value
        out["agreement"] = _agreement(rows)
    if failed or unreadable:
        out["reason"] = (f"{failed} judge call(s) failed (re-run lens score to retry)"
                         if failed else
                         f"{unreadable} grade(s) could not be read, even after a retry with a "
                         "format reminder: fact_recall is unknown")
    return credit, out


def _judge_rows(tasks: dict[str, JudgeTask], verdicts: dict[str, Verdict], model: str,
                by_fact: Mapping[Any, Mapping[str, Any]], grader: FactGrader
                ) -> tuple[list[JudgedFactRow], int, int]:
    """The judge's row of each fact under the matcher's veto, and how many calls failed and
    how many verdicts gave no grade."""
    rows: list[JudgedFactRow] = []
    failed = unreadable = 0
    for fact, task in tasks.items():
        v = verdicts.get(task.key(model))
        row = _judge_row(fact, v)
        if v is None:
            failed += 1
        elif row["grade"] is None:
            unreadable += 1
        rows.append(_under_matcher(row, by_fact.get(fact, {}), grader))
    return rows, failed, unreadable


def _judge_row(fact: str, v: Verdict | None) -> JudgedFactRow:
    """A fact's row from the judge's verdict (grade and points None when there is no
    verdict, or one that is not a grade)."""
    grade = v.value if v is not None and v.value in GRADE_POINTS else None
    return {"fact": fact, "grade": grade, "points": GRADE_POINTS.get(grade or ""),
            "method": "judge"}


def _agreement(rows: list[JudgedFactRow]) -> float | None:
    """The share of the judge's grades that agree with the matcher (present = matched)."""
    judged = [r for r in rows if r["grade"] is not None]
    if not judged:
        return None
    return sum((r["grade"] == "present") == r["matcher"] for r in judged) / len(judged)


def _under_matcher(row: JudgedFactRow, matched: Mapping[str, Any], grader: FactGrader
                   ) -> JudgedFactRow:
    """A judge's row under the matcher's veto (``matched``: the matcher's item for the fact),
    with the matcher's own finding beside it when both grade."""
    veto = matched.get("reason")
    if veto in VETO_REASONS and row["points"]:
        # The matcher is the exact check of figures, dates and ids: a judge cannot credit
        # a value the answer never states as a claim (absent, hedged, denied, listed bare,
        # given to another subject).
        row["points"] = 0.0
        row["matcher_veto"] = veto
    if grader == "both":
        row["matcher"] = bool(matched.get("matched"))
    return row


def _with_conclusion(rows: list[JudgedFactRow], detail: Mapping[str, Any]) -> FactCredit:
    """The judge's grades as a :class:`FactCredit`: the conclusion, graded as one more fact,
    is the matcher's check with the judge's points. A conclusion row the rule leaves unbacked
    (``conclusion_backed``) shows 0 points and why."""
    check = detail.get("conclusion")
    if not check:
        return FactCredit(tuple(r["points"] for r in rows), None, stuffing_of(detail))
    key = conclusion_as_fact(check["conclusion"])
    ours = [r for r in rows if r["fact"] == key]
    conclusion = ConclusionItem.from_check(check)
    if ours:
        conclusion = dataclasses.replace(conclusion, points=ours[0]["points"])
    credit = FactCredit(tuple(r["points"] for r in rows if r["fact"] != key), conclusion,
                        stuffing_of(detail))
    for row in ours:
        if row["points"] and not credit.backed:
            row["points"] = 0.0
            row["unbacked"] = ("no key fact credited backs it" if conclusion.cites_evidence
                               else "the answer cites no record it received")
    return credit


def _offline_row(fact: str, g: FactGrade, matched: Mapping[str, Any]) -> dict[str, Any]:
    """The offline grader's row of a fact under the matcher's veto (``matched``: the matcher's
    item for the fact), with the matcher's own finding beside it."""
    row: dict[str, Any] = {"fact": fact, **g.as_detail(), "matcher": bool(matched.get("matched"))}
    veto = matched.get("reason")
    if veto in VETO_REASONS and row["grade"]:
        # As for the judge: the model cannot credit a value the answer never states as a
        # claim (absent, hedged, denied, listed bare, given to another subject).
        row["grade"] = 0.0
        row["matcher_veto"] = veto
    return row


def offline_credit(detail: Mapping[str, Any], matcher_value: float | None,
                   grades: dict[str, FactGrade], condition: dict[str, Any]
                   ) -> tuple[FactCredit, dict[str, Any]] | None:
    """The offline grader's grades of one question's key facts, under the matcher's veto, as
    the question's :class:`FactCredit` (its conclusion is the matcher's item) and its grades'
    detail; None without grades. ``detail`` and ``matcher_value`` are the matcher's."""
    if not grades:
        return None
    by_fact = {f.get("fact"): f for f in detail.get("facts", []) if isinstance(f, dict)}
    rows = [_offline_row(fact, g, by_fact.get(fact, {})) for fact, g in grades.items()]
    out: dict[str, Any] = {"grader": "local", "model": condition.get("model"),
                           "matcher_recall": matcher_value, "facts": rows}
    failed = [r for r in rows if r["grade"] is None]
    if failed:
        out["reason"] = (f"{len(failed)} offline grade(s) failed (re-run lens score to retry): "
                         f"{failed[0].get('reason', '')}")
    check = detail.get("conclusion")
    credit = FactCredit(tuple(r["grade"] for r in rows),
                        ConclusionItem.from_check(check) if check is not None else None,
                        stuffing_of(detail))
    return credit, out
