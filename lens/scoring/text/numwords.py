"""English number words rewritten as digits ("forty-three" -> "43").

Answers spell figures out ("forty-three tickets", "fourteen thousand six hundred eighty-five
dollars", "two hundred and fifty-two ms"); rewriting them as digits lets the quantity parser
treat them like any written figure, unit and all. A lone "one" is left alone: it is far more
often a pronoun ("the one in the summary") than a figure.
"""

from __future__ import annotations

import re

_SMALL = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
         "eighty": 80, "ninety": 90}
_SCALES = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_WORDS = {**_SMALL, **_TENS, "hundred": 100, **_SCALES}

_WORD = "|".join(sorted(_WORDS, key=len, reverse=True))
# A run of number words joined by spaces, hyphens or "and" ("two hundred and fifty-two").
_RUN = re.compile(rf"\b(?:{_WORD})(?:(?:\s+and\s+|[\s-]+)(?:{_WORD}))*\b")


def _value(words: list[str]) -> int | None:
    """The value of a run of number words, or None when the run is not one number
    ("three four" is two numbers, "hundred" alone is not a figure anyone writes)."""
    total, current, last = 0, 0, None
    for w in words:
        if w in _SMALL or w in _TENS:
            v = _WORDS[w]
            # "twenty three" is fine, "three twenty" and "three four" are not one number.
            if last in ("small", "tens") and not (last == "tens" and w in _SMALL and v < 10):
                return None
            current += v
            last = "tens" if w in _TENS else "small"
        elif w == "hundred":
            if last not in ("small", "tens") or current == 0 or current >= 100:
                return None
            current *= 100
            last = "hundred"
        else:  # thousand, million, billion
            if current == 0:
                return None
            total += current * _SCALES[w]
            current, last = 0, "scale"
    return total + current


def words_to_digits(text: str) -> str:
    """``text`` (lower-case) with every spelled-out number replaced by its digits."""

    def repl(m: re.Match[str]) -> str:
        words = [w for w in re.split(r"[\s-]+", m.group(0)) if w and w != "and"]
        if words == ["one"]:
            return m.group(0)
        v = _value(words)
        if v is None:
            # Not one number: rewrite each word that is a number on its own.
            return " ".join(str(_WORDS[w]) if w in _SMALL or w in _TENS else w for w in words)
        return str(v)

    return _RUN.sub(repl, text)
