"""Which arms a comparison sets against each other, and in which pairs.

``lens compare --arms A,B,C`` compares every pair of the named arms; ``--baseline ARM`` compares
the baseline against each other arm (of ``--arms`` when given). The pairs chosen are exactly
the confirmatory family Holm's correction runs over, so naming fewer pairs is how a user keeps
a clear difference from being diluted by comparisons nobody asked for.

An arm never meets itself: the same adapter (label and options) in two runs under one
condition is one arm, kept once (from the first run that has it), unless the user names both
(``RUN_A:label,RUN_B:label``). Under differing conditions (``--force``) the runs differ in
something other than the adapter, so the same adapter in two runs is two arms; and runs that
hold nothing but that one arm are compared with each other (two versions of one memory).

The viewer's side by side uses the same rules (:func:`choose`), so the arms it shows are the
arms ``lens compare`` would compare.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Generic, TypeVar

from lens.core.errors import UserError
from lens.report.foundations.data import RunData

T = TypeVar("T")


@dataclass(frozen=True)
class Candidate(Generic[T]):
    """One arm as the user may name it: its full name (``run_id:label`` when several runs are
    compared, else the label), its run's id and directory name, its label, and what makes two
    arms the same arm (label and options hash)."""

    item: T
    name: str
    run_id: str
    run_dir: str
    label: str
    identity: tuple[str, str]


@dataclass(frozen=True)
class Choice(Generic[T]):
    """The arms compared (in the order the user gave them, else the runs' order) and the
    pairs (A, B) set against each other, Δ = B − A."""

    arms: list[T]
    pairs: list[tuple[T, T]]


def options_hash(run: RunData | dict[str, Any], label: str) -> str:
    """The options hash the run's condition records for the arm ``label`` ('' when absent)."""
    cond = run.condition if isinstance(run, RunData) else run
    for a in cond.get("adapters") or []:
        if isinstance(a, dict) and str(a.get("label") or a.get("name")) == label:
            return str(a.get("options_hash") or "")
    return ""


def parse_names(text: str | None) -> list[str]:
    """``"a, b,c"`` → ``["a", "b", "c"]`` (empty parts dropped)."""
    if not text:
        return []
    return [part.strip() for part in text.split(",") if part.strip()]


def _resolve(selector: str, cands: Sequence[Candidate[T]]) -> tuple[Candidate[T] | None, str]:
    exact = [c for c in cands if c.name == selector]
    if exact:
        return exact[0], ""
    run_part, sep, label_part = selector.rpartition(":")
    if sep:
        found = [c for c in cands if c.label == label_part and run_part in (c.run_id, c.run_dir)]
        if found:
            return found[0], ""
    found = [c for c in cands if c.label == selector]
    if not found:
        return None, (f"{selector!r}: no such arm; the arms are "
                      f"{', '.join(c.name for c in cands)}")
    if len({c.identity for c in found}) > 1:
        return None, (f"{selector!r}: several different arms have this label; name one of "
                      f"{', '.join(c.name for c in found)}")
    return found[0], ""


def choose(cands: Sequence[Candidate[T]], *, arms: Sequence[str] = (), baseline: str | None = None,
           one_condition: bool = True, flag: Callable[[str], str] = "--{}".format) -> Choice[T]:
    """The arms and pairs to compare. ``arms`` and ``baseline`` name arms by full name,
    ``RUN:label`` (run id or directory name) or bare label; every unknown or ambiguous name is
    reported at once (a :class:`UserError`). ``flag`` names the option in messages (the
    viewer's query parameters are not command-line flags)."""
    picked, base = _named(cands, arms, baseline, flag)
    chosen = picked or _unnamed(cands, base, one_condition)
    if len(chosen) < 2:
        raise UserError(f"nothing to compare: fewer than two different arms "
                        f"({', '.join(c.name for c in chosen) or 'none'}); give another run "
                        f"directory, a run with several adapters, or name two or more arms "
                        f"with {flag('arms')}")
    if base is not None:
        pairs = [(base, c) for c in chosen if c is not base]
    else:
        pairs = list(combinations(chosen, 2))
    return Choice(arms=[c.item for c in chosen], pairs=[(a.item, b.item) for a, b in pairs])


def _named(cands: Sequence[Candidate[T]], arms: Sequence[str], baseline: str | None,
           flag: Callable[[str], str]) -> tuple[list[Candidate[T]], Candidate[T] | None]:
    """The arms ``arms`` names and the baseline, or a :class:`UserError` listing every name that
    is unknown, ambiguous or given twice."""
    problems: list[str] = []
    picked: list[Candidate[T]] = []
    for sel in arms:
        cand, why = _resolve(sel, cands)
        if cand is None:
            problems.append(f"{flag('arms')} {why}")
        elif cand in picked:
            problems.append(f"{flag('arms')} {sel!r}: names {cand.name}, named already")
        else:
            picked.append(cand)
    base: Candidate[T] | None = None
    if baseline:
        base, why = _resolve(baseline, picked or cands)
        if base is None:
            problems.append(f"{flag('baseline')} {why}"
                            + (f" (the baseline must be one of {flag('arms')})" if picked else ""))
    if problems:
        raise UserError(["the arms to compare are not clear:", *(f"  - {p}" for p in problems)])
    return picked, base


def _unnamed(cands: Sequence[Candidate[T]], base: Candidate[T] | None,
             one_condition: bool) -> list[Candidate[T]]:
    """The arms compared when none is named: every arm (the same arm in two runs under one
    condition once), the baseline first."""
    chosen: list[Candidate[T]] = []
    for c in cands:
        # The same arm in two runs under one condition is kept once.
        if one_condition and any(k.identity == c.identity for k in chosen):
            continue
        chosen.append(c)
    if len(chosen) < 2 and len(cands) >= 2:
        # Runs that hold nothing but that arm are what the user compares: two versions of
        # one memory under one name (answers the condition cannot tell apart).
        chosen = list(cands)
    if base is not None and base not in chosen:
        chosen = [base, *[c for c in chosen
                          if not (one_condition and c.identity == base.identity)]]
    return chosen
