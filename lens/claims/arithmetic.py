"""The publisher's figure from their own verdicts, with the arithmetic named: how several judge
runs become one figure (verdicts as stored, the mean of per-run accuracies, or a majority vote
per answer), whether LoCoMo's category 5 (adversarial) counts, and the denominator."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from lens.claims.items import ClaimItem, ClaimSet

RunRule = Literal["stored", "mean", "majority"]
RUN_RULES: tuple[RunRule, ...] = ("stored", "mean", "majority")
# LoCoMo's code (task_eval/evaluation.py) numbers its categories so; category 5 has no gold
# answer in the data, and most papers leave it out of the judge's figure.
LOCOMO_NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop",
                "5": "adversarial"}
ADVERSARIAL = "5"


@dataclass(frozen=True)
class Arithmetic:
    runs: RunRule
    # Whether LoCoMo's category 5 is in the figure (None: the file has none).
    category5: bool | None

    def describe(self, n_runs: int) -> str:
        how = {"stored": "verdicts as stored (one per answer)",
               "mean": f"mean of the {n_runs} runs' accuracies",
               "majority": f"majority vote per answer over {n_runs} runs (a tie counts wrong)"}
        five = ("" if self.category5 is None else
                ", category 5 counted" if self.category5 else ", category 5 left out")
        return how[self.runs] + five


@dataclass(frozen=True)
class Share:
    # Correct answers (a fraction under the mean of runs); n the denominator.
    correct: float
    n: int
    unreadable: int = 0

    @property
    def percent(self) -> float | None:
        return None if self.n == 0 else 100.0 * self.correct / self.n


@dataclass(frozen=True)
class Figure:
    arithmetic: Arithmetic
    overall: Share
    categories: dict[str, Share]
    # The items in the figure, in file order: a finding's items are named from them.
    items: tuple[ClaimItem, ...]
    # Each item's credit under the arithmetic (1, 0, a run share, or None unreadable).
    credit: tuple[float | None, ...]


def item_credit(item: ClaimItem, runs: RunRule) -> float | None:
    known = [v for v in item.verdicts if v is not None]
    if not known or (len(known) < len(item.verdicts) and runs != "mean"):
        return None
    if runs == "majority":
        return 1.0 if sum(known) * 2 > len(known) else 0.0
    return sum(known) / len(known)


def _share(credits: Sequence[float | None]) -> Share:
    known = [c for c in credits if c is not None]
    return Share(sum(known), len(known), len(credits) - len(known))


def compute(claims: ClaimSet, arithmetic: Arithmetic) -> Figure:
    """The figure under ``arithmetic``: every item with a readable verdict in the denominator
    (an unreadable one is counted apart, never as wrong)."""
    kept = tuple(i for i in claims.items
                 if arithmetic.category5 is not False or i.category != ADVERSARIAL)
    credit = tuple(item_credit(i, arithmetic.runs) for i in kept)
    cats: dict[str, list[float | None]] = {}
    for item, c in zip(kept, credit, strict=True):
        cats.setdefault(item.category or "", []).append(c)
    return Figure(arithmetic, _share(credit),
                  {k: _share(v) for k, v in sorted(cats.items(), key=lambda kv: _order(kv[0]))},
                  kept, credit)


def _order(category: str) -> tuple[int, str]:
    return (int(category), "") if category.isdigit() else (10**6, category)


def candidates(claims: ClaimSet) -> list[Arithmetic]:
    """Every arithmetic that applies to this file: run rules only with several runs, category 5
    in or out only when the file has it."""
    rules: tuple[RunRule, ...] = ("stored",) if claims.runs <= 1 else ("mean", "majority")
    has5 = claims.benchmark == "locomo" and any(i.category == ADVERSARIAL for i in claims.items)
    fives: tuple[bool | None, ...] = (False, True) if has5 else (None,)
    return [Arithmetic(r, f) for r, f in itertools.product(rules, fives)]


def rounds_to(value: float | None, published: float, decimals: int) -> bool:
    if value is None:
        return False
    return bool(abs(value - published) <= 0.5 * 10 ** -decimals + 1e-9)


@dataclass(frozen=True)
class Gap:
    """A published share the items do not give: by how much, and what would have to change."""

    published: float
    reproduced: float | None
    # The whole counts of n that print as the published figure (empty: none does).
    counts: tuple[int, ...]
    # Answers to flip, and which way: "to correct" takes them from the wrong ones.
    flips: int | None
    direction: str
    # The items that could be flipped (up to a few named).
    candidates: tuple[str, ...]
    # For a category column: the category it was measured against (by the publisher's label).
    category: str | None = None

    def describe(self, n: int) -> str:
        diff = "unknown" if self.reproduced is None else f"{self.reproduced - self.published:+.2f}"
        if not self.counts:
            return (f"differs by {diff} points; no whole count of {n} answers prints as "
                    f"{self.published:g}: the figure is not a share of these answers")
        named = ", ".join(self.candidates)
        return (f"differs by {diff} points; {self.flips} answer(s) would have to flip "
                f"{self.direction} (a count of {' or '.join(map(str, self.counts))} of {n})"
                + (f", e.g. {named}" if named else ""))


def gap(share: Share, items: Sequence[ClaimItem], credit: Sequence[float | None],
        published: float, decimals: int, shown: int = 5) -> Gap:
    n = share.n
    half = 0.5 * 10 ** -decimals
    lo, hi = math.ceil((published - half) * n / 100 - 1e-9), math.floor((published + half) * n
                                                                         / 100 + 1e-9)
    counts = tuple(k for k in range(max(lo, 0), min(hi, n) + 1)
                   if rounds_to(100 * k / n, published, decimals)) if n else ()
    if not counts:
        return Gap(published, share.percent, (), None, "", ())
    target = min(counts, key=lambda k: abs(k - share.correct))
    flips = math.ceil(abs(target - share.correct) - 1e-9)
    up = target > share.correct
    pool = [i.id for i, c in zip(items, credit, strict=True)
            if c is not None and ((c < 1) if up else (c > 0))]
    return Gap(published, share.percent, counts, flips,
               "from wrong to correct" if up else "from correct to wrong", tuple(pool[:shown]))
