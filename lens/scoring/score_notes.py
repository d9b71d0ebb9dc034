"""The notes of a lens scoring: what a reader must know to read its numbers.

Each function below covers one kind of caveat; :func:`scoring_notes` lists them in the order
``scores.json`` and the report show them.
"""

from __future__ import annotations

from typing import Any

import lens.scoring.grading.fact_grader as grading
from lens.runs.records import is_scored
from lens.scoring.foundations.run_input import RunInput
from lens.scoring.foundations.types import JudgeSummary, QuestionScores
from lens.scoring.judging.judge import Judge

# A note names at most this many groups, then says how many more.
SHOWN_GROUPS = 12

Aggregates = dict[str, dict[str, dict[str, float | None]]]
Detail = dict[str, dict[str, dict[str, Any]]]


def scoring_notes(run: RunInput, rows: list[QuestionScores], aggregates: Aggregates,
                  detail: Detail, tiers: set[int], judge: Judge | None, summary: JudgeSummary,
                  grader: grading.FactGrader = "matcher") -> list[str]:
    return [*coverage_notes(run, rows, tiers), *judge_notes(judge, summary, tiers, grader),
            *error_notes(rows), *composite_notes(aggregates, detail)]


def coverage_notes(run: RunInput, rows: list[QuestionScores], tiers: set[int]) -> list[str]:
    """What part of the run and which tiers the scores cover."""
    notes = []
    status = run.manifest.status
    if status not in (None, "complete"):
        notes.append(f"the run's status is {status!r}: these scores cover the {len(rows)} "
                     "question(s) stored so far")
    skipped = sorted({1, 2, 3} - tiers)
    if skipped:
        notes.append(f"tier(s) {', '.join(map(str, skipped))} not scored: their metrics are "
                     "missing and composites are renormalised without them")
    return notes


def judge_notes(judge: Judge | None, summary: JudgeSummary, tiers: set[int],
                grader: grading.FactGrader) -> list[str]:
    """Judge metrics that are missing or unreadable, and who decided fact_recall."""
    notes = []
    if judge is None and tiers & {2, 3}:
        notes.append("no judge configured: answer_quality and action_quality are missing "
                     "(longitudinal_advantage too where it needs answer_quality); composites "
                     "are renormalised without them")
    if judge is not None and judge.usage.errors:
        notes.append(f"{judge.usage.errors} judge call(s) failed; the questions concerned have "
                     f"missing judge metrics: run lens score again to retry them "
                     f"(first error: {judge.usage.error_messages[0]})")
    if summary.invalid:
        notes.append(f"{summary.invalid} of {summary.verdicts} judge verdict(s) could not be "
                     "read, even after a retry with a format reminder: the scores resting on "
                     "them are unknown (missing), never a tie")
    if grader == "matcher":
        notes.append("fact_recall comes from the phrase matcher alone: read it as a lower "
                     "bound, since the matcher misses facts restated in other words; "
                     "scoring.fact_grader: local (the 'local' extra) or a judge reads meaning")
    if grader == "local":
        notes.append("fact_recall comes from the offline grader: the phrase matcher for "
                     "figures, ids and dates, the local model for facts written as sentences "
                     "(its agreement with a large judge is in docs/scoring.md)")
    return notes


def error_notes(rows: list[QuestionScores]) -> list[str]:
    unconsulted = sum(r.status == "no_memory" for r in rows)
    errored = sum(not is_scored(r.status) for r in rows) - unconsulted
    notes = []
    if errored:
        notes.append(f"{errored} question(s) ended in an error: they are excluded from every "
                     "metric's mean and counted as n_errored, and a group's composite counts "
                     "them as failures (it is scaled by the share of questions answered)")
    if unconsulted:
        notes.append(f"{unconsulted} question(s) were answered without any tool call "
                     "(status no_memory): the answer did not come from memory, so like errors "
                     "they are excluded from every metric's mean, counted in n_errored, and "
                     "count as failures in the composite")
    return notes


def composite_notes(aggregates: Aggregates, detail: Detail) -> list[str]:
    """How composites are built, and the groups whose composite was renormalised or gated."""
    notes = ["longitudinal_advantage is reported beside the composite, never in it (it "
             "rises when control questions fail); question composites leave out "
             "action_quality outside action_recommendation questions and are renormalised "
             "over the metrics present (see each question's detail.composite)"]
    by_missing: dict[tuple[str, ...], list[str]] = {}
    gated: list[str] = []
    for level, groups in aggregates.items():
        for key, entry in groups.items():
            missing = tuple(detail[level][key].get("composite_missing", []))
            if missing:
                by_missing.setdefault(missing, []).append(f"{level}={key}")
            if entry.get("composite_gated"):
                gated.append(f"{level}={key}")
    notes += [f"composite renormalised (missing {', '.join(missing)}) for: {_some(where)}"
              for missing, where in by_missing.items()]
    if gated:
        notes.append("composite gated to 0 (evidence_grounding or budget_compliance below the "
                     f"gate) for: {_some(gated)}")
    notes += [f"longitudinal_advantage for adapter={key} uses answer_quality on both sides: its "
              "null_hypothesis questions have no key facts"
              for key, d in detail.get("adapter", {}).items()
              if d.get("longitudinal_advantage", {}).get("basis") == "answer_quality"]
    return notes


def _some(where: list[str]) -> str:
    more = len(where) - SHOWN_GROUPS
    return ", ".join(where[:SHOWN_GROUPS]) + (f" and {more} more" if more > 0 else "")
