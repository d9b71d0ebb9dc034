"""A fact grader's per-fact grades on a question's fact_recall, under the matcher's rules.

The matcher's fact_recall stands unless a grader (the judge, or the offline grader) graded the
question's key facts; their grades then replace the matcher's, and the value is the one rule
of :mod:`lens.scoring.measures.fact_recall` on them: what no grader overrides is kept, the discount
for stating far more figures than asked, and a contradicted or two-way conclusion taking every
fact's credit with it. :func:`_settle` is the one place a grader's value is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio.to_thread

import lens.scoring.grading.fact_grader as grading
import lens.scoring.grading.offline_grader as offline_grader
import lens.scoring.measures.mechanical as mechanical
from lens.data.config import CacheConfig
from lens.scoring.foundations.run_input import RunInput
from lens.scoring.foundations.types import QuestionScores
from lens.scoring.grading.offline_grader import FactGrade, FactTask, OfflineGrader
from lens.scoring.judging.judge import JudgeTask, Verdict
from lens.scoring.measures.fact_recall import FactCredit, fact_recall_of

METRIC = "fact_recall"


def apply_judge_grades(row: QuestionScores, tasks: dict[str, JudgeTask],
                       verdicts: dict[str, Verdict], model: str,
                       grader: grading.FactGrader) -> None:
    """The judge's per-fact grades in place of the matcher's, under the matcher's rules."""
    _settle(row, grading.judge_credit(row.detail[METRIC], row.metrics.get(METRIC), tasks,
                                      verdicts, model, grader))


def apply_offline(row: QuestionScores, grades: dict[str, FactGrade],
                  condition: dict[str, Any]) -> None:
    """The offline grader's per-fact grades in place of the matcher's, under the matcher's
    rules; it grades the key facts, and the question's conclusion keeps the matcher's check
    as one more item (as the judge grades it as one more fact)."""
    _settle(row, grading.offline_credit(row.detail[METRIC], row.metrics.get(METRIC), grades,
                                        condition))


def _settle(row: QuestionScores, graded: tuple[FactCredit, dict[str, Any]] | None) -> None:
    """Write a grader's fact_recall and its detail on ``row`` (nothing when it graded no
    item): the grades' detail, then what the matcher's rules kept (the stuffing factor when it
    discounts, the conclusion's check, and why a conclusion voided the facts)."""
    if graded is None:
        return
    credit, detail = graded
    check = row.detail[METRIC].get("conclusion")
    row.metrics[METRIC] = fact_recall_of(credit)
    if credit.graded and credit.stuffing < 1.0:
        detail["stuffing_factor"] = credit.stuffing
    if check is not None:
        detail["conclusion"] = check
        if credit.graded and credit.void_reason:
            detail["reason"] = credit.void_reason
    row.detail[METRIC] = detail


def vetoed_facts(rows: Mapping[str, QuestionScores]) -> dict[str, dict[str, str]]:
    """The key facts the matcher vetoes in each row's fact_recall detail, with the reason (a
    figure, date or id missing, denied, listed bare, given to another subject): no grade can
    earn them points (grading.VETO_REASONS), so the offline grader need not read them."""
    out: dict[str, dict[str, str]] = {}
    for key, row in rows.items():
        for f in row.detail.get(METRIC, {}).get("facts", []):
            if isinstance(f, dict) and not f.get("matched") \
                    and f.get("reason") in grading.VETO_REASONS:
                out.setdefault(key, {})[str(f.get("fact"))] = str(f["reason"])
    return out


async def offline_grades(run: RunInput, offline: OfflineGrader | None,
                         cache: CacheConfig | None = None,
                         analyses: Mapping[str, mechanical.Analysis] | None = None,
                         vetoed: Mapping[str, Mapping[str, str]] | None = None
                         ) -> tuple[dict[str, dict[str, FactGrade]], dict[str, Any]]:
    """The offline grader's grades of every answered question's key facts, by question key,
    read from the answer's claims (not the record text it pasted), as the judge reads them.
    Without ``offline`` one is made on the default local model with ``cache`` (lens's model
    cache when None) and closed afterwards. ``analyses`` are the answers' analyses by question
    key, worked out already (those missing are worked out here). A fact in ``vetoed`` (by
    question key, :func:`vetoed_facts`) grades 0 without the model: the matcher's veto would
    take its points whatever the model said, and on datasets whose key facts are figures
    (lens's own) most misses are such."""
    own = offline is None
    if offline is None:
        offline = OfflineGrader.with_cache(cache)
    if offline.store is None:
        offline.attach(run.store)
    keyed: list[tuple[str, str, FactTask]] = []
    out: dict[str, dict[str, FactGrade]] = {}
    for item in run.items:
        if item.answered:
            known = analyses.get(item.key) if analyses is not None else None
            claims = (known or mechanical.analyse(item)).claims.text
            tasks = offline_grader.fact_tasks(item.question.prompt,
                                              item.question.ground_truth.key_facts, claims)
            veto = (vetoed or {}).get(item.key, {})
            for fact, task in tasks.items():
                if fact in veto:
                    out.setdefault(item.key, {})[fact] = FactGrade(
                        0.0, "matcher", reason=f"the matcher's veto: {veto[fact]}")
                else:
                    keyed.append((item.key, fact, task))
    try:
        graded = await anyio.to_thread.run_sync(offline.grade, [t for _, _, t in keyed])
    finally:
        if own:
            offline.close()
    for (key, fact, _), grade in zip(keyed, graded, strict=True):
        out.setdefault(key, {})[fact] = grade
    # Each question's facts in their own order, whichever check settled them.
    order = {item.key: list(dict.fromkeys(item.question.ground_truth.key_facts))
             for item in run.items if item.key in out}
    return {key: {f: out[key][f] for f in order[key] if f in out[key]} for key in out}, \
        offline.condition()
