"""A narrower statement states a coarser gold: a day or week inside a gold's period, a case of
the kind a gold names.

Two readings the fact matcher's word rules cannot make (lens.scoring.text.facts calls them
first):

- **Periods** (lens.scoring.text.periods). A gold that is wholly a period beyond a plain day
  ("March, 2023", "2022", "the summer of 2022", "The Saturday before 7 November, 2022") is
  stated by an answer that names a period inside it, in a clause it asserts: "during the week
  of 9 March to 15 March, 2023", "on Saturday, 5 November 2022". This reading alone decides
  such a gold: the words of "The Saturday before 7 November" are no statement of it ("the
  Saturday after 7 November 2022" has them all).
- **Kinds** (lens.scoring.lexicon.KINDS). A short gold that names a kind ("an instrument") is
  stated by an answer naming one case of it ("the violin"), besides the kind's own word, which
  the matcher reads.

Neither reading rewards a hedge or a list: a period or case offered beside another of its kind
with "or" between them, or with at most ``LIST_GAP`` words between them, states neither (a
hedge that names the gold among others, "on 5 or 12 November"); an answer naming more than
``MAX_OTHER_PERIODS`` periods outside the gold's, or more than ``MAX_CASES`` cases of the
kind, is stuffing and states nothing by this reading. A denied or doubted clause, and one with
a word of uncertainty ("maybe", "possibly"), asserts nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from lens.scoring.text.lexicon import KIND_NAMES, KINDS, fold
from lens.scoring.text.periods import Found, Period, find_periods, fold_text, gold_period

# More dates than this outside the gold's period: a list of every date, not an answer.
MAX_OTHER_PERIODS = 3
# More cases of the kind than this: every instrument, not the one.
MAX_CASES = 2
# Two periods (or cases) this few words apart are a list or a hedge.
LIST_GAP = 3

_HEDGE = re.compile(r"\b(?:maybe|perhaps|possibly|probably|might|unsure|uncertain|not\s+sure"
                    r"|i\s+guess|either)\b")
_OR = re.compile(r"\b(?:or|nor)\b|/")
_GENERAL = re.compile(r"^(?:(?:a|an|some|one|the|new|musical|kind\s+of|type\s+of|of)\s+)*"
                      r"(?P<kind>[a-z]+)$")


@dataclass(frozen=True)
class SentenceView:
    """One sentence of an answer as the matcher split it: its text and, per clause, its span
    and whether the clause asserts what it says (neither denied nor doubted)."""

    text: str
    clauses: tuple[tuple[int, int, bool], ...]

    @functools.cached_property
    def _asserting(self) -> tuple[tuple[int, int, bool], ...]:
        # Read once per clause: asked for every date of a long answer, a per-call read of the
        # clause would grow with the square of its length.
        return tuple((start, end, asserted and not _HEDGE.search(fold(self.text[start:end])))
                     for start, end, asserted in self.clauses)

    def asserted_at(self, pos: int) -> bool:
        for start, end, asserted in self._asserting:
            if start <= pos < end:
                return asserted
        return False


@dataclass(frozen=True)
class Narrow:
    matched: bool
    reason: str = ""


def _listed(text: str, a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two spans of a sentence stand as a list or as alternatives."""
    lo, hi = (a, b) if a[0] < b[0] else (b, a)
    gap = text[lo[1]:hi[0]]
    return bool(_OR.search(gap)) or len(re.findall(r"[a-z]+", gap)) <= LIST_GAP


def _period_match(gold: Found, sentences: Sequence[SentenceView]) -> Narrow:
    target = gold.period
    found = [(s, fold_text(s.text), find_periods(fold_text(s.text))) for s in sentences]
    others = _periods_outside(found, target)
    if len(others) > MAX_OTHER_PERIODS:
        return Narrow(False, f"dates stuffed: {len(others)} dates outside the gold's period")
    reason = "no date inside the gold's period"
    for s, text, fs in found:
        for f in fs:
            if not f.period.within(target):
                continue
            why_not = _why_not_stated(s, text, fs, f, target)
            if why_not is None:
                return Narrow(True)
            reason = why_not
    return Narrow(False, reason)


def _periods_outside(found: list[tuple[SentenceView, str, list[Found]]], target: Period
                     ) -> set[Period]:
    """The distinct periods the sentences assert outside the gold's."""
    return {f.period for s, _, fs in found for f in fs
            if s.asserted_at(f.start) and not f.period.overlaps(target)}


def _why_not_stated(s: SentenceView, text: str, fs: list[Found], f: Found, target: Period
                    ) -> str | None:
    """Why a date inside the gold's period does not state it (denied or hedged, or listed with
    dates outside the period); None when it does."""
    if not s.asserted_at(f.start):
        return "the date inside the gold's period is denied or hedged"
    if any(g is not f and not g.period.overlaps(target)
           and _listed(text, (f.start, f.end), (g.start, g.end)) for g in fs):
        return "the date inside the gold's period is listed with others"
    return None


def general_kind(fact: str) -> str | None:
    """The kind a short gold names in general ("an instrument" -> "instrument")."""
    m = _GENERAL.match(" ".join(fold(fact).strip(" .!").split()))
    return KIND_NAMES.get(m.group("kind")) if m else None


def _case_pattern(kind: str) -> re.Pattern[str]:
    forms = [w for case in sorted(KINDS[kind], key=len, reverse=True)
             for w in ((case[:-1] + "ies", case) if case.endswith("y") else (case,))]
    alts = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in forms)
    return re.compile(rf"(?<![\w-])(?P<case>{alts})(?:s|es)?(?![\w-])")


def _case(m: re.Match[str]) -> str:
    word = " ".join(m.group("case").split())
    return word[:-3] + "y" if word.endswith("ies") else word


def _kind_match(kind: str, sentences: Sequence[SentenceView]) -> Narrow | None:
    pattern = _case_pattern(kind)
    found = [(s, t, list(pattern.finditer(t))) for s in sentences for t in [fold_text(s.text)]]
    named = _named_cases(found)
    if len(named) > MAX_CASES:
        return Narrow(False, f"cases stuffed: {len(named)} cases of {kind}")
    for s, text, ms in found:
        if any(s.asserted_at(m.start()) and not _has_alternative(text, m, ms) for m in ms):
            return Narrow(True)
    return None


def _named_cases(found: list[tuple[SentenceView, str, list[re.Match[str]]]]) -> set[str]:
    """The distinct cases the sentences assert."""
    return {_case(m) for s, _, ms in found for m in ms if s.asserted_at(m.start())}


def _has_alternative(text: str, m: re.Match[str], ms: list[re.Match[str]]) -> bool:
    """Whether another case of the sentence stands as an alternative to ``m`` ("a or b")."""
    return any(_case(o) != _case(m)
               and _OR.search(text[min(m.end(), o.end()):max(m.start(), o.start())])
               for o in ms)


def narrower_match(fact: str, sentences: Sequence[SentenceView]) -> Narrow | None:
    """Whether the answer states ``fact`` by a narrower statement; None when neither reading
    applies (the fact is no period and names no kind, or, for a kind, no case is named: the
    matcher's own rules decide)."""
    gold = gold_period(fact)
    if gold is not None:
        return _period_match(gold, sentences)
    kind = general_kind(fact)
    if kind is not None:
        return _kind_match(kind, sentences)
    return None
