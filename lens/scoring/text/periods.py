"""Calendar periods in free text: a day, a range of days, a week, a month, a season, a year.

Short gold answers to "when" questions name a period, not always a day: "March, 2023",
"2022", "the summer of 2022", "The week of April 3rd to 9th", and, as LoCoMo's golds do, a
period given relative to another date ("The Saturday before 7 November, 2022", "The week
before 9 June 2023", "two weekends before 17 July 2023"). An answer states such a gold when it
names a period inside it: "during the week of 9 March to 15 March, 2023" is inside "March,
2023", "on Saturday, 5 November 2022" is "The Saturday before 7 November, 2022". This module
reads both sides into :class:`Period` values (first and last day); lens.scoring.text.narrower
decides what counts as stating one.

Relative periods are read strictly: "the <weekday> before X" is the last such weekday before X;
"the week before X" the days from the Monday of the week before X's week up to the day before
X (both readings a writer may mean: the calendar week before, and the seven days before);
"the weekend before X" the last Saturday and Sunday before X that do not contain X; "N weeks
before X" the week around X - 7N; "a few days before X" the six days before X. A month name
misspelt by one letter ("Janury", "Januarty" in LoCoMo's golds) is read as the month.
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
                "september", "october", "november", "december")
_ABBREVIATIONS = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8,
                  "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_COUNTS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "a": 1, "an": 1}
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11)}


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` is ``b`` with one letter added, dropped or changed."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long_ = sorted((a, b), key=len)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


@functools.lru_cache(maxsize=4096)
def month_number(word: str) -> int | None:
    """The month a word names: a full name, an abbreviation, or a long name (six letters or
    more) misspelt by one letter."""
    w = word.rstrip(".").lower()
    if w in _MONTH_NAMES:
        return _MONTH_NAMES.index(w) + 1
    if w in _ABBREVIATIONS:
        return _ABBREVIATIONS[w]
    if len(w) >= 5:
        for n, name in enumerate(_MONTH_NAMES, 1):
            if len(name) >= 6 and _one_edit(w, name):
                return n
    return None


@dataclass(frozen=True)
class Period:
    """Every day from ``first`` to ``last``; ``yearless`` when the text gave no year (the year
    of ``first`` is then a placeholder, and comparisons ignore it)."""

    first: date
    last: date
    yearless: bool = False

    def within(self, other: Period) -> bool:
        """Whether every day of this period lies in ``other``."""
        if self.yearless == other.yearless:
            return other.first <= self.first and self.last <= other.last
        # One side gave no year: compare it in each year the other covers.
        fixed, loose = (other, self) if self.yearless else (self, other)
        for year in range(fixed.first.year - 1, fixed.last.year + 1):
            moved = loose.in_year(year)
            if moved is None:
                continue
            inner, outer = (moved, fixed) if self.yearless else (fixed, moved)
            if outer.first <= inner.first and inner.last <= outer.last:
                return True
        return False

    def overlaps(self, other: Period) -> bool:
        return self.within(other) or other.within(self) or (
            not self.yearless and not other.yearless
            and self.first <= other.last and other.first <= self.last)

    def in_year(self, year: int) -> Period | None:
        try:
            span = self.last - self.first
            first = self.first.replace(year=year)
        except ValueError:  # 29 February
            return None
        return Period(first, first + span)

    @property
    def single_day(self) -> bool:
        return self.first == self.last


@dataclass(frozen=True)
class Found:
    period: Period
    start: int
    end: int
    relative: bool = False


_MONTH_WORD = r"[a-z]{3,10}\.?"
_DAY = r"(?:[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d\d"
_SEP = r"\s*(?P<sep>-|–|—|to|until|till|through|thru|and)\s*"
# "and" joins a range only after "between": "5 November and 12 November" is two days.
_BETWEEN = r"(?P<btw>between\s+)?"


def _day(text: str) -> int:
    """The day of a day group ("5th" -> 5); the patterns only give groups that start with one."""
    m = re.match(r"\d+", text)
    if m is None:
        raise ValueError(f"no day in {text!r}")
    return int(m.group(0))


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _safe(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


# An absolute day: "7 November, 2022", "7November 2022", "the 7th of November", "November 7th,
# 2022", "Nov. 7", "2022-11-07".
_ISO = re.compile(rf"(?<![\w.-])(?P<y>{_YEAR})-(?P<m>[01]?\d)-(?P<d>[0-3]?\d)(?![\w])")
_DAY_MONTH = re.compile(
    rf"(?<![\w.])(?:the\s+)?(?P<d>{_DAY})\s*(?:of\s+)?(?P<m>{_MONTH_WORD})"
    rf"(?:,?\s*(?P<y>{_YEAR}))?(?![\w])")
_MONTH_DAY = re.compile(
    rf"(?<![\w])(?P<m>{_MONTH_WORD})\s+(?:the\s+)?(?P<d>{_DAY})(?![\w:])"
    rf"(?:,?\s*(?P<y>{_YEAR}))?(?![\w])")
# A range of days: "9 March to 15 March, 2023", "3-5 November 2023", "between October 9 and
# 11, 2023", "April 3rd to 9th", "between 21 March and 3 April 2023".
_RANGE_DAY_FIRST = re.compile(
    rf"(?<![\w.]){_BETWEEN}(?P<d1>{_DAY})(?:\s*(?:of\s+)?(?P<m1>{_MONTH_WORD}))?(?:,?\s*(?P<y1>{_YEAR}))?"
    rf"{_SEP}(?P<d2>{_DAY})\s*(?:of\s+)?(?P<m2>{_MONTH_WORD})(?:,?\s*(?P<y2>{_YEAR}))?(?![\w])")
_RANGE_MONTH_FIRST = re.compile(
    rf"(?<![\w]){_BETWEEN}(?P<m1>{_MONTH_WORD})\s+(?P<d1>{_DAY})(?:,?\s*(?P<y1>{_YEAR}))?{_SEP}"
    rf"(?:(?P<m2>{_MONTH_WORD})\s+)?(?P<d2>{_DAY})(?![\w:])(?:,?\s*(?P<y2>{_YEAR}))?(?![\w])")
_RANGE_MONTHS = re.compile(
    rf"(?<![\w]){_BETWEEN}(?P<m1>{_MONTH_WORD})(?:,?\s*(?P<y1>{_YEAR}))?{_SEP}(?P<m2>{_MONTH_WORD})"
    rf"[,.]?\s*(?P<y2>{_YEAR})(?![\w])")
# Part of a month: "early August, 2023", "the first week of April 2023", "last weekend of June".
_PART = re.compile(
    r"(?<![\w])(?:the\s+)?(?P<part>early|beginning\s+of|start\s+of|mid|middle\s+of|late"
    r"|end\s+of|(?:first|second|third|fourth|last)\s+(?:week|weekend)\s+of)[\s-]+(?:the\s+)?"
    rf"(?P<m>{_MONTH_WORD})(?:[,.]?\s*(?P<y>{_YEAR}))?(?![\w])")
_MONTH_YEAR = re.compile(
    rf"(?<![\w])(?P<m>{_MONTH_WORD})[,.]?\s*(?:of\s+)?(?P<y>{_YEAR})(?![\w])")
_SEASON = re.compile(
    rf"(?<![\w])(?:the\s+)?(?P<s>spring|summer|fall|autumn)(?:\s+of)?,?\s+(?P<y>{_YEAR})"
    rf"(?![\w])")
_YEAR_ALONE = re.compile(rf"(?<![\w$€£.,-])(?P<y>{_YEAR})(?![\w%-]|[.,]\d)")
# A month alone ("in March"); "may" only after a word that makes it a month ("in may").
# The words before a month sit in one optional group with their spaces: a bare ``\s*`` before the
# month was retried from every space of a long blank run, quadratic in its length.
_MONTH_ALONE = re.compile(rf"(?<![\w])(?:(?P<pre>in|of|early|late|mid|since|until|by|during)\s*)?"
                          rf"(?P<m>{_MONTH_WORD})(?![\w])")
# A period relative to a day: "the Saturday before 7 November, 2022", "two weekends before 17
# July 2023", "The week of 23 August 2023", "a few days before November 2023".
_RELATIVE = re.compile(
    r"(?<![\w])(?:(?:the|on|a|on\s+a|last)\s+)?(?:(?P<n>one|two|three|four|five|six|\d)\s+)?"
    r"(?P<few>(?:a\s+)?few\s+)?"
    r"(?P<unit>monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekends?|weeks?"
    r"|days?|night)\s+(?P<dir>before|after|of)\s+")


def _year_of(text: str | None) -> int | None:
    return int(text) if text else None


def _period(year: int | None, first: tuple[int, int], last: tuple[int, int]
            ) -> Period | None:
    y = year if year is not None else 2000
    a = _safe(y, *first)
    b = _safe(y if last >= first else y + 1, *last)
    if a is None or b is None:
        return None
    return Period(a, b, yearless=year is None)


def _day_period(m: re.Match[str]) -> Period | None:
    month = int(m.group("m")) if m.re is _ISO else month_number(m.group("m"))
    if month is None:
        return None
    day = _day(m.group("d"))
    year = _year_of(m.group("y"))
    if m.re is _DAY_MONTH and m.group("m").rstrip(".") == "may" and year is None:
        return None  # "4 may": a verb far more often than a month
    return _period(year, (month, day), (month, day))


def _range_period(m: re.Match[str]) -> Period | None:
    if m.group("sep") == "and" and not m.group("btw"):
        return None
    months = _range_months(m)
    if months is None:
        return None
    m1, m2 = months
    y2 = _year_of(m.group("y2"))
    y1 = _year_of(m.group("y1"))
    if m.re is _RANGE_MONTHS:
        return _months_range(y1, y2, m1, m2)
    return _days_range(y1, y2, (m1, _day(m.group("d1"))), (m2, _day(m.group("d2"))))


def _range_months(m: re.Match[str]) -> tuple[int, int] | None:
    """A range's first and last month (a range naming one month has it at both ends); None
    when a month is misspelt."""
    m2 = month_number(m.group("m2")) if m.group("m2") else None
    m1 = month_number(m.group("m1")) if m.group("m1") else m2
    if m.group("m1") and m1 is None:
        return None
    if m2 is None:
        m2 = m1
    if m1 is None or m2 is None:
        return None
    return m1, m2


def _months_range(y1: int | None, y2: int | None, m1: int, m2: int) -> Period | None:
    """From the first day of the first month to the last of the last ("March to May 2023");
    its year must be written, and a range crossing the new year starts the year before."""
    if y2 is None:
        return None
    year1 = y1 if y1 is not None else (y2 if m1 <= m2 else y2 - 1)
    return Period(date(year1, m1, 1), _month_end(y2, m2))


def _days_range(y1: int | None, y2: int | None, start: tuple[int, int], end: tuple[int, int]
                ) -> Period | None:
    """From one (month, day) to another, a year written at either end serving both (a range
    crossing the new year starts the year before); None for an impossible or reversed range."""
    if y2 is None and y1 is None:
        return _period(None, start, end)
    year2 = y2 if y2 is not None else y1
    assert year2 is not None
    year1 = y1 if y1 is not None else (year2 if start <= end else year2 - 1)
    a, b = _safe(year1, *start), _safe(year2, *end)
    if a is None or b is None or b < a:
        return None
    return Period(a, b)


def _nth_weekend(year: int, month: int, nth: int) -> tuple[date, date]:
    first = date(year, month, 1)
    saturday = first + timedelta(days=(5 - first.weekday()) % 7)
    if nth < 0:
        last = _month_end(year, month)
        saturday = last - timedelta(days=(last.weekday() - 5) % 7)
        if saturday + timedelta(days=1) > last:
            saturday -= timedelta(days=7)
    else:
        saturday += timedelta(days=7 * nth)
    return saturday, saturday + timedelta(days=1)


def _part_period(m: re.Match[str]) -> Period | None:
    month = month_number(m.group("m"))
    if month is None:
        return None
    year = _year_of(m.group("y"))
    y = year if year is not None else 2000
    end = calendar.monthrange(y, month)[1]
    part = " ".join(m.group("part").split())
    ordinals = {"first": 0, "second": 1, "third": 2, "fourth": 3, "last": -1}
    if part.endswith("weekend of"):
        sat, sun = _nth_weekend(y, month, ordinals[part.split()[0]])
        return Period(sat, sun, yearless=year is None)
    if part.endswith("week of"):
        nth = ordinals[part.split()[0]]
        first = end - 6 if nth < 0 else 1 + 7 * nth
        return _period(year, (month, first), (month, min(end, first + 6)))
    days = {"early": (1, 10), "beginning of": (1, 10), "start of": (1, 10), "mid": (11, 20),
            "middle of": (11, 20), "late": (21, end), "end of": (21, end)}[part]
    return _period(year, (month, days[0]), (month, days[1]))


def _month_year_period(m: re.Match[str]) -> Period | None:
    month = month_number(m.group("m"))
    if month is None:
        return None
    year = int(m.group("y"))
    return Period(date(year, month, 1), _month_end(year, month))


def _season_period(m: re.Match[str]) -> Period:
    year = int(m.group("y"))
    first, last = _SEASONS[m.group("s")]
    return Period(date(year, first, 1), _month_end(year, last))


def _year_period(m: re.Match[str]) -> Period:
    year = int(m.group("y"))
    return Period(date(year, 1, 1), date(year, 12, 31))


def _month_alone_period(m: re.Match[str]) -> Period | None:
    word = m.group("m").rstrip(".")
    month = month_number(word)
    if month is None or (word in ("may", "mar") and not m.group("pre")):
        return None
    if word not in _MONTH_NAMES and word not in _ABBREVIATIONS:
        return None  # a misspelt month stands only beside a day or a year
    return Period(date(2000, month, 1), _month_end(2000, month), yearless=True)


# Absolute periods, most specific first: a text span is read by the first pattern that takes it.
_ABSOLUTE: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], Period | None]], ...] = (
    (_ISO, _day_period),
    (_RANGE_DAY_FIRST, _range_period),
    (_RANGE_MONTH_FIRST, _range_period),
    (_RANGE_MONTHS, _range_period),
    (_PART, _part_period),
    (_DAY_MONTH, _day_period),
    (_MONTH_DAY, _day_period),
    (_SEASON, _season_period),
    (_MONTH_YEAR, _month_year_period),
    (_YEAR_ALONE, _year_period),
    (_MONTH_ALONE, _month_alone_period),
)


def _absolute(text: str) -> list[Found]:
    found: list[Found] = []
    taken = bytearray(len(text))
    for pattern, read in _ABSOLUTE:
        for m in pattern.finditer(text):
            s, e = m.span()
            if m.re is _MONTH_ALONE:
                s = m.start("m")
            if any(taken[s:e]):
                continue
            period = read(m)
            if period is None:
                continue
            found.append(Found(period, s, e))
            taken[s:e] = b"\x01" * (e - s)
    return sorted(found, key=lambda f: f.start)


def _weekday_before(anchor: date, weekday: int, after: bool) -> date:
    if after:
        return anchor + timedelta(days=(weekday - anchor.weekday() - 1) % 7 + 1)
    return anchor - timedelta(days=(anchor.weekday() - weekday - 1) % 7 + 1)


def _relative_period(unit: str, direction: str, count: int, few: bool, anchor: Period
                     ) -> Period | None:
    """The period ``count`` units before or after the anchor ("two days before 9 March"), or
    the unit holding it ("the week of 9 March"); None for what names no period."""
    x = anchor.first if direction != "after" else anchor.last
    loose = anchor.yearless
    after = direction == "after"
    unit = unit[:-1] if unit in ("days", "weeks", "weekends") else unit
    if unit == "night":
        return anchor if direction == "of" else None
    if direction == "of":
        return _period_of(unit, x, anchor)
    if unit in _WEEKDAYS:
        day = x
        for _ in range(count):
            day = _weekday_before(day, _WEEKDAYS.index(unit), after)
        return Period(day, day, loose)
    if unit == "day":
        return _days_away(x, count, few, after, loose)
    if unit == "week":
        return _weeks_away(x, count, after, loose)
    return _weekends_away(x, count, after, loose)


def _period_of(unit: str, x: date, anchor: Period) -> Period | None:
    """The week or the weekend holding x; a range anchor is its own ("the week of 9 March to
    15 March"). A day or a weekday "of" a date names no period."""
    if unit not in ("week", "weekend"):
        return None
    if not anchor.single_day:
        return anchor
    if unit == "week":
        monday = x - timedelta(days=x.weekday())
        return Period(monday, x + timedelta(days=6), anchor.yearless)
    # The weekend nearest x (a Monday's is the one just gone), x included.
    saturday = x + timedelta(days=_NEAREST_SATURDAY[x.weekday()])
    return Period(min(x, saturday), max(x, saturday + timedelta(days=1)), anchor.yearless)


def _days_away(x: date, count: int, few: bool, after: bool, loose: bool) -> Period:
    """``count`` days after or before x; "a few days" is the week's other six days."""
    if few:
        return (Period(x + timedelta(days=1), x + timedelta(days=6), loose) if after
                else Period(x - timedelta(days=6), x - timedelta(days=1), loose))
    day = x + timedelta(days=count if after else -count)
    return Period(day, day, loose)


def _weeks_away(x: date, count: int, after: bool, loose: bool) -> Period:
    """A week after or before x: the days from x to the end of the next week (or from the
    start of the last one); several weeks: the week centred that many weeks away."""
    monday = x - timedelta(days=x.weekday())
    if count > 1:
        centre = x + timedelta(days=7 * count if after else -7 * count)
        return Period(centre - timedelta(days=3), centre + timedelta(days=3), loose)
    if after:
        return Period(x + timedelta(days=1), monday + timedelta(days=13), loose)
    return Period(monday - timedelta(days=7), x - timedelta(days=1), loose)


def _weekends_away(x: date, count: int, after: bool, loose: bool) -> Period:
    """The Saturday and Sunday ``count`` weekends after or before x."""
    day = x
    for _ in range(count):
        # The next Saturday after, or the last Sunday before (never the weekend holding x),
        # then back to its Saturday for the next step.
        day = _weekday_before(day, 5 if after else 6, after)
        if not after:
            day -= timedelta(days=1)
    return Period(day, day + timedelta(days=1), loose)


# Days from each weekday (Monday first) to the Saturday of the weekend nearest it.
_NEAREST_SATURDAY = (-2, -3, 3, 2, 1, 0, -1)


def find_periods(text: str) -> list[Found]:
    """Every period in ``text`` (folded, lower-case), in order, without overlaps: a relative
    period takes its anchor with it."""
    absolute = _absolute(text)
    out: list[Found] = []
    used: set[int] = set()
    for m in _RELATIVE.finditer(text):
        anchor = next((f for f in absolute if f.start == m.end()), None)
        if anchor is None or id(anchor) in used:
            continue
        period = _relative_period(m.group("unit"), m.group("dir"), _count(m.group("n")),
                                  bool(m.group("few")), anchor.period)
        if period is None:
            continue
        used.add(id(anchor))
        out.append(Found(period, m.start(), anchor.end, relative=True))
    out += [f for f in absolute if id(f) not in used and not _inside(f, out)]
    return sorted(out, key=lambda f: f.start)


def _count(written: str | None) -> int:
    """How many units a relative period counts: a digit, a number word, else one."""
    written = written or ""
    return int(written) if written.isdigit() else _COUNTS.get(written, 1)


def _inside(f: Found, relative: list[Found]) -> bool:
    """Whether ``f`` starts inside one of the relative periods."""
    return any(r.start <= f.start < r.end for r in relative)


_LEAD = re.compile(r"^(?:in|on|at|around|approximately|about|during|by|sometime\s+in|circa"
                   r"|from)\s+")


def gold_period(fact: str) -> Found | None:
    """The period a gold answer is, when the whole of it is one period and more than a plain
    day ("March, 2023", "2022", "The Saturday before 7 November, 2022"); None otherwise (a plain
    day is the fact matcher's own date rule)."""
    text = re.sub(r"[\s.,;:!]+$", "", fold_text(fact)).strip()
    text = _LEAD.sub("", text)
    found = find_periods(text)
    if len(found) != 1:
        return None
    f = found[0]
    rest = (text[:f.start] + text[f.end:]).strip(" ,.`'\"")
    if rest or (f.period.single_day and not f.relative):
        return None
    return f


def fold_text(text: str) -> str:
    # Backticks and stray quotes in golds ("7` July") are no part of a date.
    return re.sub(r"[`\u2019']", " ", text.lower()).replace("\u2013", "-")
