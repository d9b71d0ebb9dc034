"""Pairwise judging against the canonical answer, asked in both orders.

Per comparison the judge sees (candidate, canonical) once as (A, B) and once as (B, A). A
verdict that holds in both orders stands; one that flips with the order, or is a tie in either,
counts as a tie. Score per comparison: candidate wins 1, tie 0.5, canonical wins 0; a question's
score is the mean over its comparisons. The share of comparisons whose two orders disagree is the
position-swap disagreement rate: the judge-noise estimate reports use. A verdict that could not
be read (even after the judge's format retry) is no tie: the comparison is unknown, and so is
the question's score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lens.scoring.foundations.run_input import ScoringItem
from lens.scoring.judging.judge import JudgeTask, Verdict, pairwise_task

FACT_CRITERION = "establishes this finding: {fact}"
WHOLE_CRITERION = ("answers the question correctly and completely, saying nothing the records "
                   "do not support")
ACTION_CRITERION = ("recommends concrete, well-founded actions that address the underlying "
                    "problem the records show")

_POINTS = {"candidate": 1.0, "tie": 0.5, "canonical": 0.0}


@dataclass(frozen=True)
class Comparison:
    label: str  # the key fact, or "(whole answer)" / "(actions)"
    candidate_first: JudgeTask  # candidate is A
    canonical_first: JudgeTask  # candidate is B


def comparisons(item: ScoringItem, *, action: bool = False) -> list[Comparison]:
    q = item.question
    gt = q.ground_truth
    if action:
        criteria = [("(actions)", ACTION_CRITERION)]
    elif gt.key_facts:
        criteria = [(f, FACT_CRITERION.format(fact=f)) for f in gt.key_facts]
    else:
        # No key facts (e.g. null_hypothesis controls): compare the whole answer.
        criteria = [("(whole answer)", WHOLE_CRITERION)]
    cand, canon = item.record.answer, gt.canonical_answer
    return [
        Comparison(label, pairwise_task(q.prompt, crit, cand, canon),
                   pairwise_task(q.prompt, crit, canon, cand))
        for label, crit in criteria
    ]


def winner(verdict: str, first_is_a: bool, first: str = "candidate",
           second: str = "canonical") -> str | None:
    """Who won one ordering: ``first``, ``second``, "tie", or None for an unreadable reply."""
    if verdict == "A":
        return first if first_is_a else second
    if verdict == "B":
        return second if first_is_a else first
    if verdict == "TIE":
        return "tie"
    return None


@dataclass(frozen=True)
class PairOutcome:
    label: str
    first: str  # winner with the candidate as A
    second: str  # winner with the candidate as B
    final: str
    disagree: bool

    def as_detail(self) -> dict[str, Any]:
        return {"label": self.label, "candidate_as_a": self.first,
                "candidate_as_b": self.second, "final": self.final}


def resolve(comparison: Comparison, verdicts: dict[str, Verdict],
            model: str) -> PairOutcome | str:
    """The outcome of one comparison, or why there is none: "failed" (a judge call failed)
    or "unreadable" (a reply could not be read after its retry)."""
    v1 = verdicts.get(comparison.candidate_first.key(model))
    v2 = verdicts.get(comparison.canonical_first.key(model))
    if v1 is None or v2 is None:
        return "failed"
    first = winner(v1.value, first_is_a=True)
    second = winner(v2.value, first_is_a=False)
    if first is None or second is None:
        return "unreadable"
    final = first if first == second else "tie"
    return PairOutcome(comparison.label, first, second, final, first != second)


@dataclass
class PairwiseScore:
    value: float | None
    outcomes: list[PairOutcome]
    failed: int
    unreadable: int = 0

    @property
    def pairs(self) -> int:
        return len(self.outcomes)

    @property
    def disagreements(self) -> int:
        return sum(o.disagree for o in self.outcomes)

    def as_detail(self) -> dict[str, Any]:
        d: dict[str, Any] = {"comparisons": [o.as_detail() for o in self.outcomes]}
        if self.failed:
            d["failed_judge_calls"] = self.failed
        if self.unreadable:
            d["unreadable_verdicts"] = self.unreadable
        if self.value is None:
            d["reason"] = self.reason
        return d

    @property
    def reason(self) -> str:
        if self.failed:
            return "a judge call failed; re-run lens score to retry it"
        if self.unreadable:
            return ("a judge reply could not be read as a verdict, even after a retry with a "
                    "format reminder: the score is unknown, not a tie")
        return "no comparison"


def score(comps: list[Comparison], verdicts: dict[str, Verdict], model: str) -> PairwiseScore:
    outcomes: list[PairOutcome] = []
    failed = unreadable = 0
    for c in comps:
        o = resolve(c, verdicts, model)
        if o == "failed":
            failed += 1
        elif o == "unreadable":
            unreadable += 1
        elif isinstance(o, PairOutcome):
            outcomes.append(o)
    if failed or unreadable or not outcomes:
        # A partial score would silently drop the facts the judge failed on.
        return PairwiseScore(None, outcomes, failed, unreadable)
    value = sum(_POINTS[o.final] for o in outcomes) / len(outcomes)
    return PairwiseScore(value, outcomes, failed, unreadable)
