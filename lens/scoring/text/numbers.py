"""Quantities in free text: a figure, its unit and the thing it counts.

"1,200", "1200" and "1.2k" are one value; "800ms" and "0.8 s" are one duration; "2 h 8 min",
"128 minutes" and "128m" are one duration; "45%", "45 percent" and "45 per cent" are one share;
"24 U/L" and "24 units per litre" are one concentration; "449 per hour", "449/h" and "449 an
hour" are one rate. A figure keeps the words that follow it ("43 login-loop tickets" counts
tickets), so that a count of tickets never meets a count of requests.

Two kinds of figure are told apart, because they earn different tolerance:

* **measured** values with a physical unit (time, percent, concentration, volume, rate, ...)
  may differ by a small relative tolerance, and a figure converted to another unit may differ by
  the rounding its written digits imply ("1.64 s" for 1,644 ms);
* **counts**, money and bare figures are exact; only a rounding the answer declares with a
  multiplier with at least three significant digits ("181k requests", "$25.5k") is accepted,
  within its last digit; "$83k" or "2k" declare too little to count.

Callers blank out dates and identifiers first (:mod:`lens.scoring.text.dates`, the identifier rule
in :mod:`lens.scoring.text.facts`), so the "03" of 2024-03-21 and the "5382" of CHG-5382 are never
figures.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from lens.scoring.text.lexicon import NEGATION_WORDS, STOPWORDS
from lens.scoring.text.numwords import words_to_digits

_LITRE = r"(?:l|litres?|liters?)\b"
# (pattern, dimension, factor to the dimension's base unit), tried in this order.
# Concentrations: (the amount's pattern, the dimension), each written per litre.
_PER_LITRE = [
    (r"(?:i?u|units?|international\s+units?)", "u/l"),
    (r"(?:mmol|millimoles?)", "mmol/l"),
    (r"(?:umol|µmol|μmol|micromoles?)", "umol/l"),
    (r"(?:mg|milligrams?)", "mg/l"),
    (r"(?:g|grams?)", "g/l"),
    (r"[x×*]\s?10\s?\^?\s?9", "e9/l"),
]
_UNIT_TABLE: list[tuple[str, str, float]] = [
    (r"%|percent|per\s?cent|pct", "percent", 1.0),
    *((rf"{amount}\s?(?:/|per\s)\s?{_LITRE}", dimension, 1.0)
      for amount, dimension in _PER_LITRE),
    (r"milliseconds?|msecs?|ms", "time", 1e-3),
    (r"minutes?|mins?", "time", 60.0),
    (r"millilitres?|milliliters?|ml", "volume", 1e-3),
    (r"milligrams?|mg", "mass", 1e-3),
    (r"seconds?|secs?|s", "time", 1.0),
    (r"hours?|hrs?|h", "time", 3600.0),
    (r"days?", "time", 86400.0),
    (r"weeks?", "time", 604800.0),
    (r"kb", "bytes", 1e3), (r"mb", "bytes", 1e6), (r"gb", "bytes", 1e9), (r"tb", "bytes", 1e12),
    (r"litres?|liters?|l", "volume", 1.0),
    (r"kilograms?|kg", "mass", 1e3),
    (r"x", "ratio", 1.0),
    (r"usd|dollars?", "usd", 1.0),
    (r"eur|euros?", "eur", 1.0),
    (r"gbp|pounds?", "gbp", 1.0),
]
# A rounding declared with a multiplier counts from this many significant digits: "181k" and
# "$25.5k" state a figure, "$83k" or "2k" only its size.
DECLARED_DIGITS = 3
# Values compared with a relative tolerance; all other dimensions (counts, money) are exact.
MEASURED = frozenset({"percent", "u/l", "mmol/l", "umol/l", "mg/l", "g/l", "e9/l", "time",
                      "volume", "mass", "bytes", "ratio", "rate"})
_CURRENCY = {"$": "usd", "us$": "usd", "usd": "usd", "€": "eur", "eur": "eur", "£": "gbp",
             "gbp": "gbp"}
_MULTIPLIERS = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "million": 1e6, "b": 1e9,
                "bn": 1e9, "billion": 1e9}
_RATE_UNITS = {"second": 3600.0, "sec": 3600.0, "s": 3600.0, "minute": 60.0, "min": 60.0,
               "hour": 1.0, "hr": 1.0, "h": 1.0, "day": 1 / 24, "d": 1 / 24,
               "week": 1 / 168}

_UNIT = re.compile(
    "(?:" + "|".join(f"(?P<u{i}>{p})" for i, (p, _, _) in enumerate(_UNIT_TABLE))
    + r")(?![a-z0-9%/])"
)
_NUMBER = re.compile(
    r"(?<![\w.^/$€£])(?<![a-z]-)"
    r"(?P<cur>us\$|usd\s|eur\s|gbp\s|[$€£])?\s?"
    r"(?P<num>\d{1,3}(?:(?:,|[\u00a0\u202f ])\d{3})+(?!\d|,\d)(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    # Single-letter multipliers touch the number ("1.2k"); words may follow a space. A bare
    # "m" is minutes or millions: both readings are kept.
    r"(?:(?P<mult>k|mn|bn|b)(?![a-z0-9])|(?P<amb>m)(?![a-z0-9/])"
    r"|\s(?P<multw>thousand|million|billion)\b)?"
)
# "2 h 8 min", "2 hours and 8 minutes", "2h08m", "2h 8m"
_COMPOUND = re.compile(
    r"(?<![\w.])(?P<h>\d+)\s?(?:hours?|hrs?|h)\s?(?:and\s)?(?P<m>\d{1,2})"
    r"(?:\s?(?:minutes?|mins?|m)(?![a-z0-9])|(?=\b)(?<=h\d\d))"
)
_DIGIT = re.compile(r"\d")
_RATE = re.compile(r"\s?(?:per|/|an?|each)\s?(?P<r>second|sec|s|minute|min|hour|hr|h|day|d|week)"
                   r"\b")
# Words that declare the figure after them rounded: "about 250 ms" may stand for 252 ms, a plain
# "250 ms" may not (it is as likely a changed figure as a rounded one).
_HEDGE = re.compile(r"(?:\babout|\baround|\broughly|\bapproximately|\bapprox\.?|\bnearly"
                    r"|\balmost|\bsome|\bclose to|\bcirca|\bca\.|~|≈|\bjust (?:over|under))\s*$")
_ORDINAL = re.compile(r"(?:st|nd|rd|th)\b")
_JOINER = re.compile(r"^\s*(?:,|to|and|or|through|-|–|—|->|→)\s*$")
# Words skipped between a figure and what it counts ("14 of these tickets"); any other
# function word ends the search ("3 to 19 invoices": "to" is no noun).
_SKIP_NOUN = frozenset("a an the of these those this such some more".split())
# Time words after a figure say when, not what: "17 the following day" counts nothing.
_WHEN = frozenset("day days week weeks month months year years following next previous prior "
                  "morning evening night later earlier today yesterday tomorrow".split())


@dataclass(frozen=True)
class Number:
    """One figure found in text."""

    value: float  # in the dimension's base unit (seconds, percent points, per hour, ...)
    written: float  # as written, multiplier applied, no unit conversion ("200ms" -> 200)
    dimension: str  # a key of MEASURED, a currency, or "" for counts and bare figures
    precision: float  # half the step of the last written digit, in base units
    text: str
    start: int
    end: int
    factor: float = 1.0  # of the written unit to the base unit
    significant: int = 0  # significant digits as written
    declared: bool = False  # rounded by a multiplier ("1.2k", "$25.5k")
    hedged: bool = False  # after a word that declares it rounded ("about 250 ms")
    nouns: tuple[str, ...] = field(default=())  # words right after the figure


def _significant(digits: str) -> int:
    return len(digits.replace(".", "").lstrip("0")) or 1


_NOUN_WORD = re.compile(r"[\s-]*([a-z][a-z'-]*)")


def _nouns(text: str, pos: int) -> tuple[tuple[str, ...], int]:
    """Up to three words right after ``pos`` (not crossing punctuation, another figure or a
    rate), function words skipped: "43 login-loop tickets" -> (login-loop, tickets)."""
    out: list[str] = []
    i = pos
    while len(out) < 3 and not _RATE.match(text, i):
        m = _NOUN_WORD.match(text, i)
        if not m:
            break
        word = m.group(1)
        if word in _SKIP_NOUN:
            i = m.end()
            continue
        if word in STOPWORDS or word in NEGATION_WORDS or word in _WHEN:
            break
        i = m.end()
        out.append(word)
    return tuple(out), i


def extract_numbers(text: str, *, words: bool = True) -> list[Number]:
    """Every figure in ``text`` (lower-cased by the caller), with its unit and counted nouns.

    With ``words=True`` (the default) spelled-out numbers count too ("forty-three"); offsets
    then refer to the rewritten text, so callers that need offsets rewrite first with
    :func:`lens.scoring.text.numwords.words_to_digits` and pass ``words=False``.
    """
    low = words_to_digits(text.lower()) if words else text.lower()
    if not _DIGIT.search(low):
        return []  # every figure is written with a digit (both patterns start with one)
    out, taken = _compound_durations(low)
    for m in _NUMBER.finditer(low):
        if not any(taken[m.start():m.end()]):
            out.extend(_figures_at(low, m))
    out.sort(key=lambda n: n.start)
    return _inherit_units(low, out)


def _compound_durations(low: str) -> tuple[list[Number], bytearray]:
    """Each "2 h 8 min" as one duration (written in minutes), and a mark on every character
    those durations take."""
    out: list[Number] = []
    taken = bytearray(len(low))
    for m in _COMPOUND.finditer(low):
        v = int(m.group("h")) * 3600 + int(m.group("m")) * 60
        out.append(Number(v, v / 60, "time", 0.0, m.group(0), m.start(), m.end(), factor=60.0,
                          significant=3))
        taken[m.start():m.end()] = b"\x01" * (m.end() - m.start())
    return out, taken


# One way to read a figure: its value as written (multiplier applied), its dimension, the
# factor of its unit to the dimension's base unit, and whether a multiplier declares it rounded.
_Reading = tuple[float, str, float, bool]


def _figures_at(low: str, m: re.Match[str]) -> list[Number]:
    """The figure a number match states, once per reading ("5m" is 5 million or 5 minutes);
    none for a rank ("5th") or digits that are no number."""
    digits = re.sub(r"[,\u00a0\u202f ]", "", m.group("num"))
    try:
        base = float(digits)
    except ValueError:
        return []
    if _ORDINAL.match(low, m.end()):
        return []  # "5th report": a rank, not a quantity
    readings, end = _readings(low, m, base)
    return [_figure(low, m, digits, reading, end) for reading in readings]


def _readings(low: str, m: re.Match[str], base: float) -> tuple[list[_Reading], int]:
    """The readings of a number match, and where the figure with its unit ends."""
    mult_word = m.group("mult") or m.group("multw")
    cur = (m.group("cur") or "").strip()
    end = m.end()
    if m.group("amb"):
        return _millions_or_minutes(base, cur), end
    written = base * _MULTIPLIERS.get(mult_word or "", 1.0)
    if cur:
        return [(written, _CURRENCY[cur], 1.0, bool(mult_word))], end
    # "128 min", "128min" and the adjectival "128-minute" all carry the unit.
    um = _UNIT.match(low, end + (1 if low[end:end + 1] in (" ", "-") else 0))
    if um is None:
        return [(written, "", 1.0, bool(mult_word))], end
    idx = next(int(k[1:]) for k, v in um.groupdict().items() if v is not None)
    _, dimension, factor = _UNIT_TABLE[idx]
    return [(written, dimension, factor, bool(mult_word))], um.end()


def _millions_or_minutes(base: float, cur: str) -> list[_Reading]:
    """A figure with a bare "m": millions, and also minutes unless it is money."""
    readings = [(base * 1e6, _CURRENCY.get(cur, ""), 1.0, True)]
    if not cur:
        readings.append((base, "time", 60.0, False))
    return readings


def _figure(low: str, m: re.Match[str], digits: str, reading: _Reading, end: int) -> Number:
    """One reading of a number match as a figure, with the nouns it counts; a count followed
    by "per hour" (or "an hour", "/h") is a rate, kept per hour."""
    written, dimension, factor, declared = reading
    nouns: tuple[str, ...] = ()
    r_end = n_end = end
    if dimension == "" or dimension in _CURRENCY.values():
        nouns, n_end = _nouns(low, end)
    value = written * factor
    rm = _RATE.match(low, n_end) if dimension == "" else None
    if rm:
        factor = _RATE_UNITS[rm.group("r")]
        dimension, value = "rate", written * factor
        if n_end == end:
            r_end = rm.end()  # "per hour" is the unit, not a word of the fact
    return Number(value=value, written=written, dimension=dimension,
                  precision=0.5 * _step(digits, written) * factor,
                  text=low[m.start():r_end].strip(), start=m.start(), end=r_end, factor=factor,
                  significant=_significant(digits), declared=declared,
                  hedged=bool(_HEDGE.search(low, max(0, m.start() - 24), m.start())),
                  nouns=nouns)


def _step(digits: str, written: float) -> float:
    """The step of the last written digit, scaled by the multiplier ("1.2k": 100)."""
    decimals = len(digits.split(".", 1)[1]) if "." in digits else 0
    base = float(digits)
    return (10.0 ** -decimals) * (written / base if base else 1.0)


def _inherit_units(text: str, numbers: list[Number]) -> list[Number]:
    """A bare figure in a range or list takes the unit of the figure that closes it:
    "from 224 to 531 ms", "between 14 and 43 tickets", "3, 8 and 10 invoices"."""
    result = list(numbers)
    for i in range(len(result) - 2, -1, -1):
        n, nxt = result[i], result[i + 1]
        if n.dimension or n.nouns or n.declared or n.start == nxt.start:
            continue
        if not _JOINER.match(text[n.end:nxt.start]):
            continue
        if not (nxt.dimension or nxt.nouns):
            continue
        factor = nxt.factor
        result[i] = Number(value=n.written * factor, written=n.written, dimension=nxt.dimension,
                           precision=n.precision * factor, text=n.text, start=n.start,
                           end=n.end, factor=factor, significant=n.significant,
                           declared=n.declared, nouns=nxt.nouns)
    return result


def strip_numbers(text: str) -> str:
    """``text`` with every figure (and its unit) blanked out, for word matching."""
    low = text.lower()
    chars = list(low)
    for n in extract_numbers(low, words=False):
        end = n.end
        for i in range(n.start, end):
            chars[i] = " "
    return "".join(chars)


def _rounding(n: Number) -> float:
    """Half the step a hedged whole figure implies: of its trailing zeros ("about 250" may stand
    for 245-255), or of a last digit 5 ("about 225" for 222.5-227.5)."""
    w = n.written
    if not n.hedged or n.declared or w != int(w) or w == 0:
        return 0.0
    digits = str(int(abs(w)))
    zeros = len(digits) - len(digits.rstrip("0"))
    if zeros:
        return 0.5 * 10.0 ** zeros * n.factor
    return 2.5 * n.factor if len(digits) >= 3 and digits.endswith("5") else 0.0


def _two_figures(n: Number) -> float:
    """The rounding of a hedged figure written with two significant figures ("about 740 ms",
    "about 120 ms", "about 1,100 per hour"): half its last significant step, which may exceed
    ``rel_tol`` (115 ms is honestly "about 120 ms"). "About 200" is not one: one significant
    figure, or three."""
    w = n.written
    if not n.hedged or n.declared or w != int(w) or w == 0:
        return 0.0
    digits = str(int(abs(w)))
    significant = digits.rstrip("0")
    if len(significant) != 2 or len(significant) == len(digits):
        return 0.0
    return 0.5 * 10.0 ** (len(digits) - 2) * n.factor


def numbers_match(fact: Number, answer: Number, rel_tol: float) -> bool:
    """Whether ``answer`` states the figure ``fact`` states, up to format, unit and the
    rounding its written digits declare. Counted nouns are the caller's business.

    Counts, money and bare figures are exact unless the answer declares a rounding with a
    multiplier ("181k"). A measured value may differ by the rounding its digits imply when the
    answer declares it ("about 250 ms") or converts the unit ("0.53 s"), never by more than
    ``rel_tol`` of the fact's value, except an honest two-figure rounding ("about 740 ms" for
    736 ms): "about 250 ms" meets 252 ms; "250 ms" does not, nor "225 ms" 224 ms."""
    if fact.dimension != answer.dimension:
        return False
    slack = 0.0
    if answer.declared and answer.significant >= DECLARED_DIGITS:
        slack = answer.precision
    if fact.declared and fact.significant >= DECLARED_DIGITS:
        slack = max(slack, fact.precision)
    tol = slack
    if fact.dimension in MEASURED:
        if not math.isclose(answer.factor, fact.factor) and answer.significant >= 2:
            slack = max(slack, answer.precision)  # the rounding of a converted figure
        tol = max(min(max(slack, _rounding(answer)), rel_tol * abs(fact.value)),
                  _two_figures(answer))
    return abs(fact.value - answer.value) <= tol + 1e-9 * max(1.0, abs(fact.value))
