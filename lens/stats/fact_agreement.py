"""How well one fact grader agrees with another (or with a user's own labels).

Per fact: a fact counts as present when its grade is at least 0.5; Cohen's kappa, precision and
recall of the grader's "present" against the labels'. Per answer: the mean grade of each
answer's facts under both, and the Pearson r between them. Pairs where either grade is unknown
are left out (and counted); a statistic that cannot be computed is None.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from lens.stats.agreement import cohen_kappa


def answer_of(row_id: str, answer_id: str | None = None) -> str:
    """The answer a graded row belongs to: its ``answer_id`` when given, else its id up to the
    last ``#`` (``q7-run2#3`` belongs to ``q7-run2``), else the id itself (one fact, one
    answer)."""
    if answer_id:
        return answer_id
    return row_id.rsplit("#", 1)[0] if "#" in row_id else row_id


def pearson(xs: list[float], ys: list[float]) -> float | None:
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / math.sqrt(sxx * syy)


@dataclass
class FactAgreement:
    pairs: int
    unknown: int
    kappa: float | None
    precision: float | None
    recall: float | None
    answers: int
    answer_r: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def render(self) -> str:
        def f(v: float | None) -> str:
            return "n/a" if v is None else f"{v:.3f}"

        return (f"agreement on {self.pairs} fact(s) ({self.unknown} left out: a grade unknown): "
                f"kappa {f(self.kappa)}, precision {f(self.precision)}, "
                f"recall {f(self.recall)} (present = grade >= 0.5); answer-level Pearson r "
                f"{f(self.answer_r)} over {self.answers} answer(s)")


def fact_agreement(grades: Mapping[str, float | None], labels: Mapping[str, float | None],
              answers: Mapping[str, str] | None = None) -> FactAgreement:
    """``grades`` and ``labels`` by row id; ``answers`` maps a row id to its answer (default:
    :func:`answer_of` of the id). Only ids in both are compared."""
    answers = answers or {}
    both = [i for i in grades if i in labels]
    known, g, lab = _known_pairs(both, grades, labels)
    gp = [x >= 0.5 for x in g]
    lp = [x >= 0.5 for x in lab]
    tp = sum(x and y for x, y in zip(gp, lp, strict=True))
    xs, ys = _answer_means(known, g, lab, answers)
    return FactAgreement(
        pairs=len(known), unknown=len(both) - len(known), kappa=cohen_kappa(gp, lp),
        precision=_share(tp, sum(gp)), recall=_share(tp, sum(lp)),
        answers=len(xs), answer_r=pearson(xs, ys))


def _known_pairs(ids: Sequence[str], grades: Mapping[str, float | None],
                 labels: Mapping[str, float | None]
                 ) -> tuple[list[str], list[float], list[float]]:
    """The ids where both the grade and the label are known, with their grades and labels."""
    known = [i for i in ids if grades[i] is not None and labels[i] is not None]
    g = [float(v) for i in known if (v := grades[i]) is not None]
    lab = [float(v) for i in known if (v := labels[i]) is not None]
    return known, g, lab


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _answer_means(ids: Sequence[str], grades: Sequence[float], labels: Sequence[float],
                  answers: Mapping[str, str]) -> tuple[list[float], list[float]]:
    """The mean grade and the mean label of each answer's facts, answer by answer."""
    by_answer: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for i, x, y in zip(ids, grades, labels, strict=True):
        mine, theirs = by_answer[answers.get(i) or answer_of(i)]
        mine.append(x)
        theirs.append(y)
    return ([sum(m) / len(m) for m, _ in by_answer.values()],
            [sum(t) / len(t) for _, t in by_answer.values()])
