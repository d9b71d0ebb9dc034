"""The fixed-n verdict on one metric of one pair of arms (Δ = B − A), in words that say what the
interval says, each with its reason (docs/reports.md, "Verdicts"):

- better / worse: a real difference (the family's Holm-corrected test, the scope-clustered
  interval excluding 0, and the bounded-mean test over scopes, lens.stats.bounded, all agree)
  larger than either arm's margin of error (and the judge-noise floor for judge metrics);
- equivalent (within the margin): the interval of Δ lies inside ± the larger margin of error;
- real but small (a real difference smaller than the margin): a real difference, within the
  margin of error or below the noise floor;
- undecided: anything else, the reason saying what is missing ("N scopes cannot rule out …"
  when only the bounded-mean test stands in the way);
- unknown: no paired values.

Only better, worse and real but small claim a difference; each needs the bounded-mean test, valid
for any distribution of the scope differences, so their error rate is at most α however skewed
the differences are (bench/null_suite.py measures it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from lens.stats.bounded import scopes_needed

FixedVerdict = Literal["better", "worse", "equivalent", "real but small", "undecided", "unknown"]
# A verdict that claims the arms differ.
DIFFERENT: Final = ("better", "worse", "real but small")


@dataclass(frozen=True)
class Evidence:
    """What a verdict is decided on. ``p_holm``: the family's Holm-corrected test of the pair;
    ``interval``: the scope-clustered interval of Δ; ``bounded_p_holm``: the bounded-mean
    test's p-value over ``scopes`` scope differences, Holm-corrected over the same family;
    ``alpha_each``: the level the bounded test's stakes were tuned to (α over the family,
    whose size is ``family_size``)."""

    delta: float | None
    margins: Sequence[float | None]
    floor: float | None
    p_holm: float | None
    alpha: float
    interval: tuple[float, float] | None = None
    mc_error: float | None = None
    bounded_p_holm: float | None = None
    scopes: int = 0
    alpha_each: float | None = None
    bound: float = 1.0
    # Tests in the family the Holm correction runs over.
    family_size: int = 1


def _f(x: float) -> str:
    return f"{x:.3f}"


def words(verdict: str, a: str, b: str) -> str:
    """The verdict as a reader reads it (B against A)."""
    if verdict == "better":
        return f"{b} better than {a}"
    if verdict == "worse":
        return f"{b} worse than {a}"
    if verdict == "equivalent":
        return "equivalent within the margin"
    if verdict == "real but small":
        return "a real difference smaller than the margin"
    return verdict


def _scopes_reason(e: Evidence, delta: float) -> str:
    needed = scopes_needed(delta, alpha=e.alpha_each or e.alpha, bound=e.bound)
    family = "" if e.family_size <= 1 else f" over a family of {e.family_size} tests"
    need = ("no number of scopes settles a Δ of 0" if needed is None
            else f"at |Δ| {_f(abs(delta))} a verdict at α={e.alpha:g}{family} needs at least "
            f"{needed} scopes")
    shown = "unknown" if e.bounded_p_holm is None else f"{e.bounded_p_holm:.3g}"
    scopes = f"{e.scopes} scope" + ("" if e.scopes == 1 else "s")
    return (f"{scopes} cannot rule out a minority of scopes far behind offsetting the rest "
            f"(bounded-mean test p (Holm) {shown}); {need}")


def decide(e: Evidence) -> tuple[FixedVerdict, str, str]:
    """The verdict, the rule that decided it (significance, scopes, margin, noise floor,
    interval, or none) and its reason."""
    delta = e.delta
    if delta is None:
        return "unknown", "none", "no paired values"
    known = [m for m in e.margins if m is not None]
    margin = max(known) if known else None
    borderline = (e.p_holm is not None and bool(e.mc_error)
                  and abs(e.p_holm - e.alpha) <= (e.mc_error or 0.0))
    tested = e.p_holm is not None and e.p_holm < e.alpha and not borderline
    excludes = e.interval is None or not (e.interval[0] <= 0 <= e.interval[1])
    bounded = e.bounded_p_holm is not None and e.bounded_p_holm < e.alpha
    if tested and excludes and bounded:
        return _real_difference(e, delta, margin)
    if (margin is not None and e.interval is not None
            and -margin < e.interval[0] and e.interval[1] < margin):
        return "equivalent", "margin", (
            f"the interval of Δ [{_f(e.interval[0])}, {_f(e.interval[1])}] lies within the "
            f"margin of error ±{_f(margin)}")
    return _undecided(e, delta, borderline=borderline, tested=tested, excludes=excludes)


def _p_text(e: Evidence) -> str:
    return "" if e.p_holm is None else f"p (Holm) {e.p_holm:.3g}"


def _real_difference(e: Evidence, delta: float, margin: float | None
                     ) -> tuple[FixedVerdict, str, str]:
    """The verdict of a difference both tests call real: better or worse beyond the margin of
    error and the judge-noise floor, else real but small (or undecided, the margin unknown)."""
    real = (f"{_p_text(e)}, bounded-mean test over {e.scopes} scopes p (Holm) "
            f"{e.bounded_p_holm:.3g}, both below α={e.alpha:g}")
    if margin is None:
        return "undecided", "margin", (f"a real difference ({real}), but the margin of "
                                       "error is unknown (too few questions)")
    if abs(delta) <= margin:
        return "real but small", "margin", (f"{real}; |Δ| {_f(abs(delta))} within the "
                                            f"margin of error ±{_f(margin)}")
    if e.floor is not None and abs(delta) < e.floor:
        return "real but small", "noise floor", (
            f"{real}; |Δ| {_f(abs(delta))} below the judge-noise floor {_f(e.floor)}")
    return ("better" if delta > 0 else "worse"), "significance", (
        f"{real}; |Δ| {_f(abs(delta))} beyond the margin of error ±{_f(margin)}")


def _undecided(e: Evidence, delta: float, *, borderline: bool, tested: bool, excludes: bool
               ) -> tuple[FixedVerdict, str, str]:
    """Why a difference that is neither real nor equivalent stays undecided: the first rule it
    fails."""
    if borderline and e.p_holm is not None:
        return "undecided", "significance", (
            f"p (Holm) {e.p_holm:.3g} is within its Monte Carlo error ±{e.mc_error:.2g} of "
            f"α={e.alpha:g}")
    if e.p_holm is None:
        return "undecided", "significance", "no test possible (too few questions)"
    if not tested:
        return "undecided", "significance", (f"not significant after Holm ({_p_text(e)} ≥ "
                                             f"α={e.alpha:g})")
    if not excludes:
        return "undecided", "interval", (f"{_p_text(e)}, but the scope-clustered interval of Δ "
                                         "includes 0")
    return "undecided", "scopes", _scopes_reason(e, delta)


def sequential_reason(verdict: str, blocks: int, low: float | None, high: float | None,
                      margin: float) -> str:
    """Why a sequential verdict (lens.stats.sequential) reads as it does, on one line."""
    if low is None or high is None:
        return "no scope block read"
    shown = f"[{_f(low)}, {_f(high)}]"
    if verdict == "better":
        return f"the confidence sequence {shown} lies above 0 after {blocks} scope blocks"
    if verdict == "worse":
        return f"the confidence sequence {shown} lies below 0 after {blocks} scope blocks"
    if verdict == "equivalent":
        return (f"the confidence sequence {shown} lies within ±{margin:g} after {blocks} "
                "scope blocks")
    return (f"{blocks} scopes cannot rule out either sign: the confidence sequence {shown} "
            "includes 0" + ("" if margin > 0 else ", and a margin of 0 never settles "
                            "equivalence"))
