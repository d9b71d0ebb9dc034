"""Per-fact grading with partial credit: who decides whether an answer states each key fact.

``matcher``: the phrase matcher alone (free, deterministic, blind to paraphrase: its
fact_recall is a lower bound). ``local``: the offline grader (lens.scoring.offline_grader): the
matcher for figures, ids and dates, the local model for facts written as sentences; the default
when no judge is configured and the ``local`` extra is installed. ``judge``: the judge grades
each key fact present (1), partial (0.5) or absent (0) with a fixed rubric and examples
(``judge_prompts.FACT_GRADE_TEMPLATE``); fact_recall is the mean grade. ``both``: the judge's
grades count, and the matcher's verdict is kept beside each one with their agreement, to audit
either. A grade the judge (or the local model) failed to give or that could not be read (after
its format retry) leaves the question's fact_recall missing: averaging over the facts that
happened to be graded would score a different question. A question's conclusion is graded as
one more fact; an answer whose conclusion the mechanical check finds contradicted or two-way
keeps fact_recall 0 whatever the grades (:mod:`lens.scoring.conclusion`), and a fact whose
figure, date or identifier the matcher finds missing, denied, only in a bare list or given to
another subject earns no points whatever its grade (``VETO_REASONS``), from the judge or the
local model alike.
"""

from __future__ import annotations

from typing import Any, cast

from lens.data.scoring_names import FACT_GRADERS, JUDGE_GRADERS, FactGraderName
from lens.scoring.conclusion import conclusion_as_fact, conclusion_backed
from lens.scoring.judge import JudgeTask, Verdict, fact_grade_task
from lens.scoring.judge_prompts import GRADE_POINTS
from lens.scoring.offline_grader import FactGrade
from lens.scoring.run_input import ScoringItem

FactGrader = FactGraderName
# Matcher verdicts on a fact's value that no judge grade overrides.
VETO_REASONS = frozenset({"figure missing", "date missing", "identifier missing", "denied",
                          "bare list", "about another subject"})
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


def apply_grades(metrics: dict[str, float | None], detail: dict[str, Any],
                 tasks: dict[str, JudgeTask], verdicts: dict[str, Verdict], model: str,
                 grader: FactGrader) -> None:
    """Replace the matcher's fact_recall (in ``metrics`` and its ``detail``) by the judge's."""
    if grader == "matcher" or not tasks:
        return
    matcher_value = metrics.get("fact_recall")
    by_fact = {f.get("fact"): f for f in detail.get("facts", []) if isinstance(f, dict)}
    rows: list[dict[str, Any]] = []
    failed = unreadable = 0
    for fact, task in tasks.items():
        v = verdicts.get(task.key(model))
        grade = v.value if v is not None and v.value in GRADE_POINTS else None
        if v is None:
            failed += 1
        elif grade is None:
            unreadable += 1
        row: dict[str, Any] = {"fact": fact, "grade": grade,
                               "points": GRADE_POINTS.get(grade or ""), "method": "judge"}
        veto = by_fact.get(fact, {}).get("reason")
        if veto in VETO_REASONS and row["points"]:
            # The matcher is the exact check of figures, dates and ids: a judge cannot credit
            # a value the answer never states as a claim (absent, hedged, denied, listed bare,
            # given to another subject).
            row["points"] = 0.0
            row["matcher_veto"] = veto
        if grader == "both":
            row["matcher"] = bool(by_fact.get(fact, {}).get("matched"))
        rows.append(row)
    _back_conclusion(rows, detail.get("conclusion"))
    out: dict[str, Any] = {"grader": grader, "facts": rows}
    if grader == "both":
        out["matcher_recall"] = matcher_value
        judged = [r for r in rows if r["grade"] is not None]
        out["agreement"] = (sum((r["grade"] == "present") == r["matcher"] for r in judged)
                            / len(judged)) if judged else None
    if failed or unreadable:
        metrics["fact_recall"] = None
        out["reason"] = (f"{failed} judge call(s) failed (re-run lens score to retry)"
                         if failed else
                         f"{unreadable} grade(s) could not be read, even after a retry with a "
                         "format reminder: fact_recall is unknown")
    else:
        metrics["fact_recall"] = sum(r["points"] for r in rows) / len(rows)
    detail.clear()
    detail.update(out)


def _back_conclusion(rows: list[dict[str, Any]], conclusion: dict[str, Any] | None) -> None:
    """The judge's grade of the conclusion earns its points under the matcher's rule
    (``conclusion_backed``): backed by a key fact the judge credits (after the veto) or by the
    conclusion's own claim, and citing a record the agent received."""
    if not conclusion:
        return
    key = conclusion_as_fact(conclusion["conclusion"])
    facts = [r for r in rows if r["fact"] != key]
    for row in rows:
        if row["fact"] != key or not row["points"]:
            continue
        if not conclusion_backed(fact_credited=any(r["points"] for r in facts),
                                 claim_stated=bool(conclusion.get("claim_stated")),
                                 has_facts=bool(facts),
                                 cites_evidence=bool(conclusion.get("cites_evidence", True))):
            row["points"] = 0.0
            row["unbacked"] = ("no key fact credited backs it" if conclusion.get(
                "cites_evidence", True) else "the answer cites no record it received")


def apply_offline_grades(metrics: dict[str, float | None], detail: dict[str, Any],
                         grades: dict[str, FactGrade], condition: dict[str, Any]) -> None:
    """Replace the matcher's fact_recall (in ``metrics`` and its ``detail``) by the offline
    grader's; a grade left unknown (its model call failed) leaves fact_recall unknown."""
    if not grades:
        return
    by_fact = {f.get("fact"): f for f in detail.get("facts", []) if isinstance(f, dict)}
    rows = []
    for fact, g in grades.items():
        row: dict[str, Any] = {"fact": fact, **g.as_detail(),
                               "matcher": bool(by_fact.get(fact, {}).get("matched"))}
        veto = by_fact.get(fact, {}).get("reason")
        if veto in VETO_REASONS and row["grade"]:
            # As for the judge: the model cannot credit a value the answer never states as a
            # claim (absent, hedged, denied, listed bare, given to another subject).
            row["grade"] = 0.0
            row["matcher_veto"] = veto
        rows.append(row)
    out: dict[str, Any] = {"grader": "local", "model": condition.get("model"),
                           "matcher_recall": metrics.get("fact_recall"), "facts": rows}
    failed = [r for r in rows if r["grade"] is None]
    if failed:
        metrics["fact_recall"] = None
        out["reason"] = (f"{len(failed)} offline grade(s) failed (re-run lens score to retry): "
                         f"{failed[0].get('reason', '')}")
    else:
        metrics["fact_recall"] = sum(float(r["grade"]) for r in rows) / len(rows)
    detail.clear()
    detail.update(out)
