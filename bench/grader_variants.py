"""Grader variants read from graders' saved grades, for bench.grader_agreement: no model call.

- ``split``: the matcher alone decides a gold that is a bare figure, id or date
  (``is_exact_fact``, the rule of lens's previous offline grader); every other gold is
  credited when the matcher
  credits it or the model's P(present) reaches the threshold (the ``either`` grader's
  readings, in which the model read every pair the matcher did not credit, short phrases and
  abstentions included).
- ``matcher-dates``: the matcher, and a coarse date gold ("May 2023", "2022") credited when the
  answer states a finer date inside it ("27 May 2023"): the finer date states the coarser. Not
  the reverse: a gold "27 May 2023" is not stated by "May 2023".
- ``split-dates``: ``split`` with the same date reading for its exact golds.
- ``matcher+yes``: lens's offline grader as it ships: its cheap checks (an empty answer, the
  matcher's credit, a restated fact the matcher rejects, an abstention, a bare list of values,
  a long answer without enough of the fact's words:
  lens.scoring.grading.offline_grader.cheap_grade) and, for
  every other pair, the local judge's reading (``judge-local``: P(yes) of lens's per-fact judge
  prompt, the offline grader's prompt, at the threshold; LOCAL_YES_AT as shipped, and
  LONG_PRESENT_AT for a long answer), from the saved verdicts.
- ``offline-v2``: the offline grader's version 2, ``matcher+yes`` without the check of a long
  answer's support (``unsupported``): the model reads those pairs too.
- ``local+yes``: the previous offline grader's cheap checks (``previous_cheap_grade``: also a
  bare figure, id or date the matcher misses graded 0, and an answer of bare values "no
  claim") first, the local judge's P(yes) for the rest.

These exist only in the bench, to measure choices before any of them reaches lens's shipped
grader (whose scores are pinned); the previous grader's rules live here for them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from bench.grader_sources import GradedFact

Saved = dict[str, dict[str, Any]]

_MONTHS = {name: n for n, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
    ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
    ("october", "oct"), ("november", "nov"), ("december", "dec")), 1) for name in names}
_MONTH = r"(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(\d{4})"

# A coarse gold is the whole gold: a month and year, or a year, perhaps after "in".
_GOLD_MONTH_YEAR = re.compile(rf"^(?:in\s+)?{_MONTH},?\s+{_YEAR}$", re.I)
_GOLD_YEAR = re.compile(rf"^(?:in\s+)?{_YEAR}$", re.I)
# Finer dates an answer may state.
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.I)


def coarse_gold(gold: str) -> tuple[int, int | None] | None:
    """(year, month or None) when ``gold`` is a month and year or a bare year."""
    text = gold.strip().rstrip(".").strip()
    if m := _GOLD_MONTH_YEAR.match(text):
        return int(m.group(2)), _MONTHS[m.group(1).lower()]
    if m := _GOLD_YEAR.match(text):
        return int(m.group(1)), None
    return None


def finer_dates(answer: str) -> set[tuple[int, int, bool]]:
    """(year, month, has_day) of each date the answer states at month precision or finer."""
    out: set[tuple[int, int, bool]] = set()
    for m in _DAY_MONTH_YEAR.finditer(answer):
        out.add((int(m.group(3)), _MONTHS[m.group(2).lower()], True))
    for m in _MONTH_DAY_YEAR.finditer(answer):
        out.add((int(m.group(3)), _MONTHS[m.group(1).lower()], True))
    for m in _ISO.finditer(answer):
        if 1 <= int(m.group(2)) <= 12:
            out.add((int(m.group(1)), int(m.group(2)), True))
    for m in _MONTH_YEAR.finditer(answer):
        out.add((int(m.group(2)), _MONTHS[m.group(1).lower()], False))
    return out


def finer_date_states(gold: str, answer: str) -> bool:
    """Whether ``answer`` states a date strictly finer than the coarse ``gold`` and inside it."""
    coarse = coarse_gold(gold)
    if coarse is None:
        return False
    year, month = coarse
    return any(y == year and (month is None or (m == month and has_day))
               for y, m, has_day in finer_dates(answer))


_ID_OR_FIGURE = re.compile(r"\S*\d\S*")
_WORD = re.compile(r"[A-Za-z]+")
_REF = re.compile(r"\[[^\[\]]*\]")


def is_exact_fact(fact: str) -> bool:
    """A bare figure, id or date, perhaps with its unit ("224 ms", "449 per hour", "CHG-5382",
    "2024-03-22", "March 22"): the previous grader left these to the matcher alone."""
    if not _ID_OR_FIGURE.search(fact):
        return len(fact.split()) == 1 and any(c.isupper() for c in fact[1:])
    return len(_WORD.findall(_ID_OR_FIGURE.sub(" ", fact))) <= 3


def bare_values(answer: str) -> bool:
    """Values and references with (almost) no words between them: "CHG-5382, 224 ms, 531 ms
    [e1]" (and, as it happens, a one-word answer such as "Drama.")."""
    words = _WORD.findall(_ID_OR_FIGURE.sub(" ", _REF.sub(" ", answer)))
    return len([w for w in words if len(w) > 2]) < 3


def previous_cheap_grade(task: Any) -> Any:
    """The previous offline grader's cheap checks on a FactTask: version 2's, and a bare
    figure, id or date the matcher misses and an answer of bare values, each graded 0 without
    the model."""
    from lens.scoring.grading.offline_grader import FactGrade

    settled = version2_cheap_grade(task)
    if settled is not None:
        return settled
    if is_exact_fact(task.fact):
        return FactGrade(0.0, "matcher", reason="a bare figure, id or date the matcher misses")
    if bare_values(task.answer):
        return FactGrade(0.0, "no_claim", reason="only values and references, no claim")
    return None


def _exact(row: GradedFact) -> bool:
    return any(is_exact_fact(form) for form in row.forms())


def _dates(row: GradedFact) -> bool:
    return any(finer_date_states(form, row.answer) for form in row.forms())


def _split(rows: dict[str, GradedFact], matcher: Saved, either: Saved,
           dates: bool) -> Saved:
    out: Saved = {}
    for rid, saved in either.items():
        row = rows.get(rid)
        if row is None or rid not in matcher:
            continue
        if _exact(row):
            credited = matcher[rid]["grade"] == 1.0 or (dates and _dates(row))
            out[rid] = {"id": rid, "grade": 1.0 if credited else 0.0, "method": "matcher"}
        else:
            out[rid] = saved
    return out


def _matcher_dates(rows: dict[str, GradedFact], matcher: Saved) -> Saved:
    return {rid: {"id": rid, "grade": 1.0 if s["grade"] == 1.0 or _dates(rows[rid]) else 0.0}
            for rid, s in matcher.items() if rid in rows}


def _checks_then_judge(rows: dict[str, GradedFact], judge: Saved,
                       check: Callable[[Any], Any], long_at: float | None = None) -> Saved:
    """``long_at``: the threshold on P(yes) of a long answer (the shipped grader's
    LONG_PRESENT_AT); such a grade is kept as ``model-long``, which a reading at another
    threshold leaves as it is (the threshold chosen on the others is the short answers')."""
    from lens.scoring.grading.offline_grader import FactTask, long_answer

    out: Saved = {}
    for rid, saved in judge.items():
        row = rows.get(rid)
        if row is None:
            continue
        tasks = [FactTask(row.question, form, row.answer) for form in row.forms()]
        settled = [check(t) for t in tasks]
        # A form the cheap checks credit credits the fact; the judge reads the fact when any
        # form is left open (it was asked about every form at once).
        if any(g is not None and g.grade == 1.0 for g in settled):
            out[rid] = {"id": rid, "grade": 1.0, "method": "matcher"}
        elif None not in settled:
            out[rid] = {"id": rid, "grade": 0.0,
                        "method": next(g.method for g in settled if g is not None)}
        elif long_at is not None and long_answer(tasks[0]) and saved.get("p_yes") is not None:
            out[rid] = {**saved, "method": "model-long",
                        "grade": 1.0 if float(saved["p_yes"]) >= long_at else 0.0}
        else:
            out[rid] = saved
    return out


def _shipped(rows: dict[str, GradedFact], judge: Saved) -> Saved:
    from lens.scoring.grading.offline_grader import LONG_PRESENT_AT, cheap_grade

    return _checks_then_judge(rows, judge, cheap_grade, LONG_PRESENT_AT)


def version2_cheap_grade(task: Any) -> Any:
    """The offline grader's version 2 checks: the shipped ones but the long answer's support,
    which version 3 added (the model read those pairs)."""
    from lens.scoring.grading.offline_grader import cheap_grade

    settled = cheap_grade(task)
    return None if settled is not None and settled.method == "unsupported" else settled


# Each variant: the saved graders it reads, and how it reads them.
VARIANTS: dict[str, tuple[tuple[str, ...], Callable[..., Saved]]] = {
    "split": (("matcher", "either"),
              lambda rows, m, e: _split(rows, m, e, dates=False)),
    "matcher-dates": (("matcher",), _matcher_dates),
    "split-dates": (("matcher", "either"),
                    lambda rows, m, e: _split(rows, m, e, dates=True)),
    "matcher+yes": (("judge-local",), _shipped),
    "offline-v2": (("judge-local",),
                   lambda rows, j: _checks_then_judge(rows, j, version2_cheap_grade)),
    "local+yes": (("judge-local",),
                  lambda rows, j: _checks_then_judge(rows, j, previous_cheap_grade)),
}


def variant(name: str, rows: list[GradedFact], saved: dict[str, Saved]) -> Saved:
    """The variant ``name``'s grades from the saved grades of the graders it reads."""
    bases, read = VARIANTS[name]
    return read({r.id: r for r in rows}, *(saved[b] for b in bases))
