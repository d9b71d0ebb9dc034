"""Number formatting shared by the markdown and HTML reports: unknown stays "unknown"."""

from __future__ import annotations

from lens.report.figures.verdicts import words
from lens.report.foundations.shapes import Check, ComparisonRow, EstimateOut, Usage

UNKNOWN = "unknown"


def num(x: float | None, digits: int = 3) -> str:
    return UNKNOWN if x is None else f"{x:.{digits}f}"


def sizes(e: EstimateOut) -> str:
    """``n=150 n_eff=35``: the questions, and the independent questions they are worth (left
    out where it cannot be estimated, as from one scope: an "unknown" on every line tells a
    reader nothing they can act on; the checklist says why); ``flip 12%`` when repeats
    disagree."""
    text = f"n={e.n}"
    if e.n and e.mean is not None and e.n_eff is not None:
        text += f" n_eff={e.n_eff:.0f}"
    if e.flip_rate is not None:
        text += f" flip {e.flip_rate:.0%}"
    return text


def est(e: EstimateOut | None, digits: int = 3) -> str:
    """``0.910 [0.838, 0.952] n=100 n_eff=41``; intervals that cannot be computed are said to
    be so."""
    if e is None or e.mean is None:
        return f"{UNKNOWN} (n={e.n if e else 0})"
    if e.low is None or e.high is None:
        return f"{e.mean:.{digits}f} [no interval] {sizes(e)}"
    return f"{e.mean:.{digits}f} [{e.low:.{digits}f}, {e.high:.{digits}f}] {sizes(e)}"


def margin(e: EstimateOut | None) -> str:
    return UNKNOWN if e is None or e.margin is None else f"±{e.margin:.3f}"


def pval(p: float | None, mc: float | None = None) -> str:
    """A p-value, with its Monte Carlo error when it comes from resampling."""
    if p is None:
        return UNKNOWN
    text = f"{p:.1e}" if p < 0.001 else f"{p:.3f}"
    return f"{text} ±{mc:.4f}" if mc else text


def verdict(row: ComparisonRow, a: str, b: str) -> str:
    """The verdict in words (lens.report.figures.verdicts), B against A."""
    return words(row.verdict, a, b)


def money(x: float | None) -> str:
    return UNKNOWN if x is None else f"${x:.4f}"


def cost(u: Usage, questions: int) -> str:
    """Mean cost per question, saying how many questions it rests on when not all."""
    text = money(u.cost_usd_per_question)
    if u.cost_usd_per_question is not None and u.cost_known < questions:
        text += f" ({u.cost_known}/{questions} known)"
    return text


def at_most(text: str, unknown_usage_calls: int) -> str:
    """A token or cost figure that counts calls of unreadable usage at their limit: an upper
    bound, shown as one (``≤ 1234``); unknown stays unknown."""
    return f"≤ {text}" if unknown_usage_calls and not text.startswith(UNKNOWN) else text


def check_value(c: Check) -> str:
    """A checklist row's measured value, led by the arms that failed or warned it."""
    if not c.failing or c.status == "pass":
        return c.value
    who = "failed" if c.status == "fail" else "warned"
    also = f"; warned by {', '.join(c.warned)}" if c.warned else ""
    return f"{who} by {', '.join(c.failing)}{also} — {c.value}"


def not_comparable_label(fields: list[str]) -> str:
    return f"not comparable: {', '.join(fields)}"
