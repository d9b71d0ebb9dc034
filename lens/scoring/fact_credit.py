"""A fact grader's per-fact grades on a question's fact_recall, under the matcher's rules.

The matcher's fact_recall stands unless a grader (the judge, or the offline grader) graded the
question's key facts; their grades then replace the matcher's, and what no grader overrides is
kept: the discount for stating far more figures than asked, and a contradicted or two-way
conclusion taking every fact's credit with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio.to_thread

import lens.scoring.fact_grader as grading
import lens.scoring.mechanical as mechanical
import lens.scoring.offline_grader as offline_grader
from lens.data.config import CacheConfig
from lens.scoring.conclusion import conclusion_backed
from lens.scoring.judge import JudgeTask, Verdict
from lens.scoring.offline_grader import FactGrade, FactTask, OfflineGrader
from lens.scoring.run_input import RunInput
from lens.scoring.types import QuestionScores


def apply_judge_grades(row: QuestionScores, tasks: dict[str, JudgeTask],
                       verdicts: dict[str, Verdict], model: str,
                       grader: grading.FactGrader) -> None:
    """The judge's per-fact grades in place of the matcher's, under the matcher's rules."""
    _under_matcher_rules(row, lambda: grading.apply_grades(
        row.metrics, row.detail["fact_recall"], tasks, verdicts, model, grader))


def apply_offline(row: QuestionScores, grades: dict[str, FactGrade],
                  condition: dict[str, Any]) -> None:
    """The offline grader's per-fact grades in place of the matcher's, under the matcher's
    rules; it grades the key facts, and the question's conclusion keeps the matcher's check
    as one more item (as the judge grades it as one more fact)."""
    conclusion = row.detail["fact_recall"].get("conclusion")

    def replace() -> None:
        grading.apply_offline_grades(row.metrics, row.detail["fact_recall"], grades, condition)
        value = row.metrics.get("fact_recall")
        if grades and value is not None and conclusion is not None:
            # The matcher's rule (conclusion_backed): a verdict counts when a fact credited
            # after the veto, or the conclusion's own claim, backs it.
            rows = row.detail["fact_recall"].get("facts", [])
            backed = conclusion_backed(
                fact_credited=any((r.get("grade") or 0) > 0 for r in rows),
                claim_stated=bool(conclusion.get("claim_stated")), has_facts=True,
                cites_evidence=bool(conclusion.get("cites_evidence", True)))
            credit = 1.0 if conclusion["status"] == "stated" and backed else 0.0
            row.metrics["fact_recall"] = (value * len(grades) + credit) / (len(grades) + 1)

    _under_matcher_rules(row, replace)


def _under_matcher_rules(row: QuestionScores, replace: Callable[[], None]) -> None:
    """Run ``replace`` (a grader's per-fact grades in place of the matcher's) and keep what no
    grader overrides: the discount for stating far more figures than asked, and a contradicted
    or two-way conclusion taking every fact's credit with it (a grader may credit figures an
    answer states for the wrong verdict)."""
    factor = float(row.detail["fact_recall"].get("stuffing_factor", 1.0))
    conclusion = row.detail["fact_recall"].get("conclusion")
    replace()
    value = row.metrics.get("fact_recall")
    if value is not None and factor < 1.0:
        row.metrics["fact_recall"] = value * factor
        row.detail["fact_recall"]["stuffing_factor"] = factor
    if conclusion is not None:
        row.detail["fact_recall"]["conclusion"] = conclusion
        if conclusion["status"] in ("contradicted", "both") and value is not None:
            row.metrics["fact_recall"] = 0.0
            row.detail["fact_recall"]["reason"] = (f"conclusion {conclusion['status']}: "
                                                   "no fact credit")


async def offline_grades(run: RunInput, offline: OfflineGrader | None,
                         cache: CacheConfig | None = None
                         ) -> tuple[dict[str, dict[str, FactGrade]], dict[str, Any]]:
    """The offline grader's grades of every answered question's key facts, by question key,
    read from the answer's claims (not the record text it pasted), as the judge reads them.
    Without ``offline`` one is made on the default local model with ``cache`` (lens's model
    cache when None) and closed afterwards."""
    own = offline is None
    if offline is None:
        offline = OfflineGrader.with_cache(cache)
    if offline.store is None:
        offline.attach(run.store)
    keyed: list[tuple[str, str, FactTask]] = []
    for item in run.items:
        if item.answered:
            claims = mechanical.analyse(item).claims.text
            tasks = offline_grader.fact_tasks(item.question.prompt,
                                              item.question.ground_truth.key_facts, claims)
            keyed += [(item.key, fact, task) for fact, task in tasks.items()]
    try:
        graded = await anyio.to_thread.run_sync(offline.grade, [t for _, _, t in keyed])
    finally:
        if own:
            offline.close()
    out: dict[str, dict[str, FactGrade]] = {}
    for (key, fact, _), grade in zip(keyed, graded, strict=True):
        out.setdefault(key, {})[fact] = grade
    return out, offline.condition()
