"""How lenient each scorer is: the share of lens's wrong answers (``wrong_answers``) it accepts,
by kind of wrong answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from lens.claims.items import ClaimItem
from lens.claims.wrong_answers import KINDS, WrongAnswer
from lens.stats.intervals import Estimate, clustered_estimate, unknown


@dataclass(frozen=True)
class Leniency:
    scorer: str
    # kind -> the share of that kind's wrong answers accepted, with its interval
    by_kind: dict[str, Estimate]
    overall: Estimate
    # The wrong answers accepted, for reading: (id, kind, answer).
    accepted: tuple[tuple[str, str, str], ...]
    # Wrong answers the scorer gave no verdict on (failed or unreadable): left out, never 0.
    unknown: int = 0


def as_items(wrong: Sequence[WrongAnswer]) -> list[ClaimItem]:
    """The wrong answers as items a scorer takes (id and verdicts marked: they are lens's)."""
    return [replace(w.item, id=f"{w.item.id}~{w.kind}", answer=w.answer, verdicts=(False,))
            for w in wrong]


def leniency(scorer: str, wrong: Sequence[WrongAnswer],
             accepted: Sequence[float | None]) -> Leniency:
    """``accepted``: the scorer's verdict on each wrong answer (1 accepted, None unknown)."""
    def est(pairs: list[tuple[WrongAnswer, float]]) -> Estimate:
        if not pairs:
            return unknown(0)
        return clustered_estimate([v for _, v in pairs], [w.item.group for w, _ in pairs])

    known = [(w, v) for w, v in zip(wrong, accepted, strict=True) if v is not None]
    by_kind = {k: est([(w, v) for w, v in known if w.kind == k]) for k in KINDS}
    taken = tuple((w.item.id, w.kind, w.answer) for w, v in known if v >= 0.5)
    return Leniency(scorer, by_kind, est(known), taken, len(wrong) - len(known))
