"""Numbers in free text, normalised so that paraphrased figures compare equal.

"1,200", "1200" and "1.2k" are one value; "800ms" and "0.8 s" are one duration; "45%" and
"45 percent" are one share. Each number keeps its dimension (time, percent, bytes, currency,
ratio, or none) and the value as written (before unit conversion), so that a bare "200" in an
answer can still match "200ms" in a fact.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_MULTIPLIERS = {
    "k": 1e3, "thousand": 1e3,
    "m": 1e6, "mn": 1e6, "million": 1e6,
    "b": 1e9, "bn": 1e9, "billion": 1e9,
}
# unit -> (dimension, factor to the dimension's base unit)
_UNITS: dict[str, tuple[str, float]] = {
    "%": ("percent", 1.0), "percent": ("percent", 1.0), "pct": ("percent", 1.0),
    "ms": ("time", 1e-3), "msec": ("time", 1e-3), "millisecond": ("time", 1e-3),
    "milliseconds": ("time", 1e-3),
    "s": ("time", 1.0), "sec": ("time", 1.0), "secs": ("time", 1.0), "second": ("time", 1.0),
    "seconds": ("time", 1.0),
    "min": ("time", 60.0), "mins": ("time", 60.0), "minute": ("time", 60.0),
    "minutes": ("time", 60.0),
    "h": ("time", 3600.0), "hr": ("time", 3600.0), "hrs": ("time", 3600.0),
    "hour": ("time", 3600.0), "hours": ("time", 3600.0),
    "day": ("time", 86400.0), "days": ("time", 86400.0),
    "week": ("time", 604800.0), "weeks": ("time", 604800.0),
    "kb": ("bytes", 1e3), "mb": ("bytes", 1e6), "gb": ("bytes", 1e9), "tb": ("bytes", 1e12),
    "x": ("ratio", 1.0),
    "usd": ("usd", 1.0), "dollar": ("usd", 1.0), "dollars": ("usd", 1.0),
    "eur": ("eur", 1.0), "euro": ("eur", 1.0), "euros": ("eur", 1.0),
}
_CURRENCY = {"$": "usd", "€": "eur", "£": "gbp"}

_NUMBER = re.compile(
    r"(?<![\w.])"
    r"(?P<cur>[$€£])?\s?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    # Single-letter multipliers must touch the number ("1.2k"); words may follow a space.
    r"(?:(?P<mult>k|mn|m|bn|b)(?![a-z0-9])|\s?(?P<multw>thousand|million|billion)\b)?"
    r"(?:\s?(?P<unit>%|percent|pct|milliseconds?|msec|ms|seconds?|secs?|s|minutes?|mins?|min"
    r"|hours?|hrs?|hr|h|days?|weeks?|kb|mb|gb|tb|x|usd|dollars?|euros?|eur)(?![a-z0-9%]))?"
    r"(?P<ord>st|nd|rd|th)?"
    r"(?![\w])"
)

_WORD_NUMBERS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "double": 2, "doubled": 2, "doubling": 2, "triple": 3, "tripled": 3, "half": 0.5,
}
_WORD_NUMBER = re.compile(r"\b(" + "|".join(sorted(_WORD_NUMBERS, key=len, reverse=True)) + r")\b")


@dataclass(frozen=True)
class Number:
    """One number found in text."""

    value: float  # in the dimension's base unit (seconds, bytes, percent points, ...)
    written: float  # as written, multiplier applied but no unit conversion ("200ms" -> 200)
    dimension: str  # "time", "percent", "bytes", "usd", "eur", "gbp", "ratio" or "" (none)
    precision: float  # half the step of the last written digit, for suffixed numbers; else 0
    text: str
    start: int
    end: int


def extract_numbers(text: str, *, words: bool = False) -> list[Number]:
    """Every number in ``text`` (lower-cased by the caller or not: matching ignores case).

    With ``words=True`` small number words ("twelve", "doubled") count too; facts are matched
    with digits only, answers with both, so "twelve" in an answer meets "12" in a fact.
    """
    low = text.lower()
    out: list[Number] = []
    for m in _NUMBER.finditer(low):
        raw = m.group("num")
        digits = raw.replace(",", "")
        try:
            base = float(digits)
        except ValueError:
            continue
        mult_word = m.group("mult") or m.group("multw")
        mult = _MULTIPLIERS.get(mult_word or "", 1.0)
        written = base * mult
        precision = 0.0
        if mult_word:
            decimals = len(digits.split(".", 1)[1]) if "." in digits else 0
            # "1.2k" is a rounded figure: it stands for anything from 1150 up to 1250.
            precision = 0.5 * (10.0 ** -decimals) * mult
        dimension, factor = "", 1.0
        unit = m.group("unit")
        if unit:
            dimension, factor = _UNITS[unit]
        cur = m.group("cur")
        if cur:
            dimension, factor = _CURRENCY[cur], 1.0
        out.append(Number(value=written * factor, written=written, dimension=dimension,
                          precision=precision * factor, text=m.group(0).strip(),
                          start=m.start(), end=m.end()))
    if words:
        for m in _WORD_NUMBER.finditer(low):
            v = float(_WORD_NUMBERS[m.group(1)])
            out.append(Number(value=v, written=v, dimension="", precision=0.0,
                              text=m.group(1), start=m.start(), end=m.end()))
    return out


def strip_numbers(text: str) -> str:
    """``text`` with every number (and its unit) blanked out, for word matching."""
    return _NUMBER.sub(" ", text.lower())


def numbers_match(fact: Number, answer: Number, rel_tol: float) -> bool:
    """Whether ``answer`` states the figure ``fact`` states, up to format, unit and tolerance."""
    if fact.dimension and answer.dimension:
        if fact.dimension != answer.dimension:
            return False
        a, b = fact.value, answer.value
        slack = max(fact.precision, answer.precision)
    else:
        # One side has no unit: compare the figures as written ("200" meets "200ms").
        a, b = fact.written, answer.written
        slack = max(fact.precision / _factor(fact), answer.precision / _factor(answer))
    tol = max(rel_tol * abs(a), slack, 1e-12)
    return math.isclose(a, b, abs_tol=tol)


def _factor(n: Number) -> float:
    return n.value / n.written if n.written else 1.0
