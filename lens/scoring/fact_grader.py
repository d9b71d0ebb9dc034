"""Per-fact grading with partial credit: who decides whether an answer states each key fact.

``matcher``: the phrase matcher alone (free, deterministic, blind to paraphrase: its
fact_recall is a lower bound). ``judge``: the judge grades each key fact present (1), partial
(0.5) or absent (0) with a fixed rubric and examples (``judge_prompts.FACT_GRADE_TEMPLATE``);
fact_recall is the mean grade. ``both``: the judge's grades count, and the matcher's verdict is
kept beside each one with their agreement, to audit either. A grade the judge failed to give or
that could not be read (after its format retry) leaves the question's fact_recall missing:
averaging over the facts that happened to be graded would score a different question. A
question's conclusion is graded as one more fact; an answer whose conclusion the mechanical
check finds contradicted or two-way keeps fact_recall 0 whatever the grades
(:mod:`lens.scoring.conclusion`), and a fact whose figure, date or identifier the matcher finds
missing, denied or only in a bare list earns no points whatever its grade (``VETO_REASONS``).
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from lens.scoring.conclusion import conclusion_as_fact
from lens.scoring.judge import JudgeTask, Verdict, fact_grade_task
from lens.scoring.judge_prompts import GRADE_POINTS
from lens.scoring.run_input import ScoringItem

FactGrader = Literal["matcher", "judge", "both"]
# Matcher verdicts on a fact's value that no judge grade overrides.
VETO_REASONS = frozenset({"figure missing", "date missing", "identifier missing", "denied",
                          "bare list"})
GRADERS: tuple[str, ...] = get_args(FactGrader)


def resolve_grader(requested: str | None, has_judge: bool) -> FactGrader:
    """The grader in force: the one asked for, else ``judge`` when there is a judge, else
    ``matcher``. Asking for judge grading without a judge is a user error."""
    if requested is None:
        return "judge" if has_judge else "matcher"
    if requested not in GRADERS:
        raise ValueError(f"fact grader {requested!r}: use one of {', '.join(GRADERS)}")
    if requested != "matcher" and not has_judge:
        raise ValueError(f"fact grader {requested!r} needs a judge model: configure a judge "
                         "(judge: model: …, or --judge MODEL) or use the matcher")
    return requested  # type: ignore[return-value]


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
            # a value the answer never states as a claim (absent, hedged, denied, listed bare).
            row["points"] = 0.0
            row["matcher_veto"] = veto
        if grader == "both":
            row["matcher"] = bool(by_fact.get(fact, {}).get("matched"))
        rows.append(row)
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
