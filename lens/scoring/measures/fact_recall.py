"""fact_recall, defined once: a question's value from its per-item grades.

Whoever grades the items (the phrase matcher, the judge or the offline grader: see
:mod:`lens.scoring.grading.fact_grader`), a question's fact_recall is :func:`fact_recall_of` of a
:class:`FactCredit`:

1. **unknown** (None, never 0) when the question has neither key facts nor a conclusion, or
   when any item's grade is missing (a failed or unreadable grade: averaging over the items
   that happened to be graded would score a different question);
2. **0** when the answer's conclusion is contradicted or two-way (the matcher's check,
   :mod:`lens.scoring.text.conclusion`): figures stated for the wrong verdict, or for both, are not
   a right answer, whatever their grades;
3. else the mean over the items, each key fact's points (1 stated, 0.5 partial, 0 not) and,
   when the question has a conclusion, its points as one more item, earned only when the
   conclusion is **backed** (``conclusion_backed``: a key fact credited or the conclusion's own
   claim stated, and a record it received cited); times the **stuffing factor** (below 1 when
   the answer states far more figures than the question needs, :mod:`lens.scoring.text.claims`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lens.scoring.text.conclusion import Status, conclusion_backed

__all__ = ["ConclusionItem", "FactCredit", "fact_recall_of", "stuffing_of"]

# A conclusion with one of these statuses takes every item's credit with it.
VOIDING: frozenset[Status] = frozenset({"contradicted", "both"})


@dataclass(frozen=True)
class ConclusionItem:
    """The question's conclusion as one item of fact_recall: the matcher's check of the
    answer's verdict (``status``, ``claim_stated``, ``cites_evidence``) and the item's grade
    (``points``; None when its grader gave none)."""

    status: Status
    points: float | None
    claim_stated: bool = False
    cites_evidence: bool = True

    @classmethod
    def from_check(cls, check: Mapping[str, Any]) -> ConclusionItem:
        """The item as the matcher grades it, from its check's detail
        (``detail["fact_recall"]["conclusion"]``): 1 when stated, else 0."""
        return cls(status=check["status"], points=1.0 if check["status"] == "stated" else 0.0,
                   claim_stated=bool(check.get("claim_stated")),
                   cites_evidence=bool(check.get("cites_evidence", True)))


@dataclass(frozen=True)
class FactCredit:
    """Everything a question's fact_recall is made of: each key fact's points (None:
    ungraded), the conclusion item when the question has one, and the stuffing factor."""

    facts: tuple[float | None, ...]
    conclusion: ConclusionItem | None = None
    stuffing: float = 1.0

    @property
    def graded(self) -> bool:
        """Whether every item has its grade."""
        return (all(p is not None for p in self.facts)
                and (self.conclusion is None or self.conclusion.points is not None))

    @property
    def backed(self) -> bool:
        """Whether the conclusion may earn its points (``conclusion_backed``); False without
        one."""
        c = self.conclusion
        return c is not None and conclusion_backed(
            fact_credited=any(self.facts), claim_stated=c.claim_stated,
            has_facts=bool(self.facts), cites_evidence=c.cites_evidence)

    @property
    def voided(self) -> bool:
        """Whether the conclusion is contradicted or two-way."""
        return self.conclusion is not None and self.conclusion.status in VOIDING

    @property
    def void_reason(self) -> str | None:
        """The detail's ``reason`` when the conclusion voids the facts."""
        if self.conclusion is None or not self.voided:
            return None
        return f"conclusion {self.conclusion.status}: no fact credit"


def fact_recall_of(credit: FactCredit) -> float | None:
    """A question's fact_recall (the rule in this module's docstring)."""
    if (not credit.facts and credit.conclusion is None) or not credit.graded:
        return None
    if credit.voided:
        return 0.0
    items: list[float] = [p for p in credit.facts if p is not None]
    if credit.conclusion is not None:
        earned = credit.conclusion.points if credit.backed else None
        items.append(earned or 0.0)
    # Summed in item order, divided, then discounted: the pinned scores depend on this order
    # to the last digit.
    return sum(items) / len(items) * credit.stuffing


def stuffing_of(matcher_detail: Mapping[str, Any]) -> float:
    """The stuffing factor the matcher wrote in its detail (rounded there), which a grader's
    grades keep."""
    return float(matcher_detail.get("stuffing_factor", 1.0))
