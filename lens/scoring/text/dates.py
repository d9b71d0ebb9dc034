"""Calendar dates in free text: ISO ("2024-07-19") and written ("19 July 2024", "Jul 19").

A date is one token: its digits are never numbers of their own (the "03" of 2024-03-21 is not
"3 invoices"), and it meets another date only when day and month agree and, if the answer gives
a year, the year too ("Jul 19" meets 2024-07-19; "19 July 2023" does not).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY = r"(?P<d>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<y>(?:19|20)\d\d)"

_ISO = re.compile(r"(?<![\w.-])(?P<y>(?:19|20)\d\d)[-/.](?P<m>[01]?\d)[-/.](?P<d>[0-3]?\d)"
                  r"(?:t\d\d:\d\d(?::\d\d)?)?(?![\w])")
# "19 July 2024", "19th of July", "the 19th of Jul, 2024"
_DAY_MONTH = re.compile(rf"(?<![\w.]){_DAY}\s+(?:of\s+)?(?P<m>{_MONTH})\.?(?![a-z])"
                        rf"(?:,?\s+{_YEAR}(?![\w]))?")
# "July 19, 2024", "Jul 19", "July 19th"
_MONTH_DAY = re.compile(rf"(?<![a-z])(?P<m>{_MONTH})\.?\s+{_DAY}(?![\w:])(?:,?\s+{_YEAR}(?![\w]))?")


@dataclass(frozen=True)
class Date:
    year: int | None
    month: int
    day: int
    start: int
    end: int

    def meets(self, fact: Date) -> bool:
        """Whether this (answer) date states the fact's date."""
        if (self.month, self.day) != (fact.month, fact.day):
            return False
        return self.year is None or fact.year is None or self.year == fact.year


def _month(text: str) -> int:
    return _MONTHS[text.rstrip(".")]


def find_dates(text: str) -> list[Date]:
    """Every date in ``text`` (lower-case), in order, without overlaps."""
    found: list[Date] = []
    taken = bytearray(len(text))  # characters already inside a date
    for pattern in (_ISO, _DAY_MONTH, _MONTH_DAY):
        for m in pattern.finditer(text):
            if any(taken[m.start():m.end()]):
                continue
            date = _date_at(m)
            if date is None:
                continue
            found.append(date)
            taken[m.start():m.end()] = b"\x01" * (m.end() - m.start())
    return sorted(found, key=lambda d: d.start)


def _date_at(m: re.Match[str]) -> Date | None:
    """The date a pattern's match writes; None for an impossible month or day, or a "may"
    read as the verb."""
    month = int(m.group("m")) if m.re is _ISO else _month(m.group("m"))
    day = int(m.group("d"))
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    # "may" is a verb far more often than a month: only with a day after it.
    if m.re is _DAY_MONTH and m.group("m") == "may" and not m.group("y"):
        return None
    year = int(m.group("y")) if m.group("y") else None
    return Date(year, month, day, m.start(), m.end())
