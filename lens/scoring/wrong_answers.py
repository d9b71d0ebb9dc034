"""Answers known to be wrong, and answers known to be right, for measuring a grader.

A grader that credits a right answer is only half tested: it must also refuse the wrong answers
a memory system gives. From real questions with a short gold answer (LoCoMo's, LongMemEval's),
this module builds, for each question, answers of several kinds:

wrong
  - ``vague``: on topic but commits to nothing the gold states ("It was sometime in 2023." for
    "7 May 2023"; "Something to do with what Caroline mentioned, but I can't say what." for a
    name).
  - ``specific``: as specific as the gold and wrong: another date (the gold's moved by weeks),
    another figure, or another answer of the same kind from the same conversation (a name for a
    name).
  - ``other_gold``: the gold answer of another question of the same conversation, as a sentence.
  - ``hedge``: the gold named among two wrong answers of its kind ("It was either X, GOLD or
    Y.").

right
  - ``gold``: the gold answer itself.
  - ``paraphrase``: the gold restated faithfully: a date in another format (or, for a period, a
    day inside it: "on Saturday, 5 November 2022" for "The Saturday before 7 November, 2022"),
    a short answer inside a sentence.

Every choice is seeded by a hash of the question's id, its gold and the kind (never by a name),
so the same data gives the same answers. The gold of another question is taken only when it
does not contain this question's gold (nor the reverse), and a wrong value only when it differs
from the gold as written. A gold may name its own accepted alternatives (LongMemEval's "17 days
ago. 18 days (including the last day) is also acceptable."): a wrong answer is built from the
gold's main answer alone and states none of the values the gold accepts (for a figure, no number
the gold names nor any inside a range it accepts).
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from lens.scoring.text.periods import find_periods, fold_text, gold_period

WRONG_KINDS = ("vague", "specific", "other_gold", "hedge")
RIGHT_KINDS = ("gold", "paraphrase")
KINDS = WRONG_KINDS + RIGHT_KINDS


@dataclass(frozen=True)
class GoldQuestion:
    """A question with a short gold answer; ``group`` is what it shares answers with (its
    conversation, or for LongMemEval its question type)."""

    id: str
    question: str
    gold: str
    group: str
    source: str = ""


@dataclass(frozen=True)
class BuiltAnswer:
    id: str
    question_id: str
    kind: str
    answer: str

    @property
    def right(self) -> bool:
        return self.kind in RIGHT_KINDS


def rng_for(*parts: str) -> random.Random:
    """A generator seeded by a hash of the data it is about."""
    digest = hashlib.sha256("\0".join(parts).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*\b")
_FIGURE = re.compile(r"\d+(?:\.\d+)?")
_WORD_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "twelve": 12}


def _day_text(d: date, style: int) -> str:
    if style == 0:
        return f"{d.day} {_MONTHS[d.month - 1]} {d.year}"
    if style == 1:
        return f"{_MONTHS[d.month - 1]} {d.day}, {d.year}"
    return f"{_WEEKDAYS[d.weekday()]}, {d.day} {_MONTHS[d.month - 1]} {d.year}"


_VERDICT = re.compile(r"^\W*(?:likely\s+)?(yes|no)\b", re.I)


@functools.lru_cache(maxsize=65536)
def shape(gold: str) -> str:
    """The kind of value a gold is: ``verdict`` (yes or no), ``date`` (a day or a period),
    ``figure``, ``name`` (it has a proper name, or is one capitalised word) or ``phrase``."""
    text = fold_text(gold)
    if _VERDICT.match(gold):
        return "verdict"
    if gold_period(gold) is not None or any(f.period.single_day for f in find_periods(text)):
        return "date"
    if _FIGURE.search(gold) or any(w in _WORD_NUMBERS for w in re.findall(r"[a-z]+", text)):
        return "figure"
    return "name" if _is_name(gold) else "phrase"


def _is_name(gold: str) -> bool:
    """Whether a gold has a proper name after its first word, or is one capitalised word."""
    words = gold.strip(" .").split()
    return bool(_NAME.search(gold.strip()[1:])) or (len(words) == 1
                                                    and gold.strip()[:1].isupper())


# The kinds of gold whose wrong values are told apart by the value alone: for these the
# ``specific`` and ``hedge`` answers are built (a phrase's "other value" is another question's
# gold, which ``other_gold`` already is).
VALUE_SHAPES = ("verdict", "date", "figure", "name")


def _as_said(value: str) -> str:
    """A value inside "It was …": a phrase loses its capital; a name, a date or a figure keeps
    it."""
    value = value.strip().rstrip(".")
    if shape(value) != "phrase" or value[1:2].isupper():
        return value
    return value[:1].lower() + value[1:]


def _gold_days(gold: str) -> tuple[date, date] | None:
    found = gold_period(gold)
    if found is not None and not found.period.yearless:
        return found.period.first, found.period.last
    days = [f.period for f in find_periods(fold_text(gold))
            if f.period.single_day and not f.period.yearless]
    return (days[0].first, days[0].last) if days else None


def _wrong_date(gold: str, rng: random.Random) -> str | None:
    span = _gold_days(gold)
    if span is None:
        yearless = [f.period for f in find_periods(fold_text(gold)) if f.period.single_day]
        if not yearless:
            return None
        moved = yearless[0].first + timedelta(days=rng.choice((-1, 1)) * rng.randint(9, 40))
        return f"{_MONTHS[moved.month - 1]} {moved.day}"
    first, last = span
    length = (last - first).days
    if length >= 300:  # a year: another year
        return str(first.year + rng.choice((-3, -2, -1, 1, 2)))
    if length >= 27:  # a month: another month, same year
        month = (first.month - 1 + rng.choice((-4, -3, -2, 2, 3, 4))) % 12 + 1
        return f"{_MONTHS[month - 1]} {first.year}"
    # A day or a week: a day at least three weeks away from it.
    shift = rng.choice((-1, 1)) * rng.randint(21, 75)
    return _day_text((first if shift < 0 else last) + timedelta(days=shift), rng.randrange(2))


_SENTENCE_END = re.compile(r"(?<=\.)\s+")
_ALSO_ACCEPTED = re.compile(r"\balso\s+(?:be\s+)?acceptable\b|\balso\s+accepted\b", re.I)
_RANGE = re.compile(r"\b(?:from|between)\s+(\d+(?:\.\d+)?)\D{0,12}?\s(?:to|and)\s+"
                    r"(\d+(?:\.\d+)?)", re.I)


def main_answer(gold: str) -> str:
    """The gold without the sentences that name its other accepted answers ("18 days
    (including the last day) is also acceptable."); the gold itself when it has none."""
    kept = [s for s in _SENTENCE_END.split(gold.strip()) if not _ALSO_ACCEPTED.search(s)]
    return " ".join(kept) if kept else gold.strip()


_AMOUNT = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


def _figures(text: str) -> set[float]:
    """The numbers a text names, in digits ("$3,850" is one) or as words; a number of weeks
    also as its days ("One week" names 7, which "7 days" accepts)."""
    found = [(float(m.group(0).replace(",", "")), m.end()) for m in _AMOUNT.finditer(text)]
    found += [(float(n), m.end()) for w, n in _WORD_NUMBERS.items()
              for m in re.finditer(rf"\b{w}\b", text, re.I)]
    weeks = {value * 7 for value, end in found if re.match(r"\s*weeks?\b", text[end:], re.I)}
    return {value for value, _ in found} | weeks


def _alternatives(gold: str) -> str:
    """The sentences of a gold that name its other accepted answers ("" when it has none)."""
    return " ".join(s for s in _SENTENCE_END.split(gold.strip()) if _ALSO_ACCEPTED.search(s))


def _accepts_figure(gold: str, value: float) -> bool:
    """Whether a number is the gold's main figure, or one its alternatives accept (named, or
    inside a range "from 7 days to 10 days")."""
    also = _alternatives(gold)
    ranges = [(min(float(a), float(b)), max(float(a), float(b))) for a, b in _RANGE.findall(also)]
    return (value in _figures(main_answer(gold)) and bool(also)) or value in _figures(also) \
        or any(lo <= value <= hi for lo, hi in ranges)


def _states_accepted_figure(text: str, gold: str) -> bool:
    """Whether a text names a number the gold's alternatives accept (a gold without any is
    told apart by ``_overlaps`` alone)."""
    return bool(_alternatives(gold)) and any(_accepts_figure(gold, v) for v in _figures(text))


def _wrong_figure(gold: str, rng: random.Random) -> str | None:
    """The gold's main answer with its figure changed to one the whole gold does not
    accept."""
    main = main_answer(gold)
    m = _FIGURE.search(main)
    if m is not None:
        value = float(m.group(0))
        delta = max(1.0, round(abs(value) * rng.uniform(0.3, 0.8)))
        new = value + delta * rng.choice((-1, 1)) if value > delta else value + delta
        if _accepts_figure(gold, new):
            # Past every number the gold names, so the wrong value is no alternative of it.
            new = max(_figures(gold)) + delta
        text = str(int(new)) if new == int(new) and "." not in m.group(0) else f"{new:g}"
        return main[:m.start()] + text + main[m.end():]
    for word, n in _WORD_NUMBERS.items():
        if re.search(rf"\b{word}\b", main, re.I):
            others = [w for w, k in _WORD_NUMBERS.items()
                      if abs(k - n) >= 2 and not _accepts_figure(gold, k)]
            if not others:
                return None
            return re.sub(rf"\b{word}\b", rng.choice(others), main, count=1, flags=re.I)
    return None


def _overlaps(a: str, b: str) -> bool:
    x, y = fold_text(a).strip(" ."), fold_text(b).strip(" .")
    return not x or not y or x in y or y in x


def _clashes(value: str, gold: str) -> bool:
    """Whether a value could be read as what the gold accepts: it contains the gold's main
    answer or is contained in the gold, or names a number the gold's alternatives accept."""
    return (_overlaps(value, gold) or _overlaps(value, main_answer(gold))
            or _states_accepted_figure(value, gold))


def _same_shape_values(q: GoldQuestion, pool: Sequence[GoldQuestion]) -> list[str]:
    """The golds of the other questions of ``q``'s group, of its kind, whose main answers state
    nothing ``q``'s gold accepts."""
    want = shape(q.gold)
    return sorted({p.gold for p in pool if p.group == q.group and p.id != q.id
                   and shape(p.gold) == want and not _clashes(main_answer(p.gold), q.gold)})


def wrong_value(q: GoldQuestion, pool: Sequence[GoldQuestion], salt: str) -> str | None:
    """A value of the gold's kind that is not the gold: another date or figure, else another
    answer of the same kind from the same conversation."""
    rng = rng_for(q.id, q.gold, salt)
    kind = shape(q.gold)
    if kind == "verdict":
        verdict = _VERDICT.match(q.gold)
        assert verdict is not None
        return "No" if verdict.group(1).lower() == "yes" else "Yes"
    made = (_wrong_date(q.gold, rng) if kind == "date"
            else _wrong_figure(q.gold, rng) if kind == "figure" else None)
    if made is not None and not _clashes(made, q.gold):
        return made
    values = _same_shape_values(q, pool)
    return main_answer(rng.choice(values)) if values else None


def _subject(q: GoldQuestion) -> str:
    """Who the question is about: its first name, or "you" for a question asked in the first
    person (LongMemEval's)."""
    if re.search(r"\b(?:I|my|me|I'm|I've)\b", q.question):
        return "you"
    names = [n for n in _NAME.findall(q.question)
             if n.split()[0] not in ("What", "When", "Where", "Who", "Which", "How", "Why", "Did",
                                     "Does", "Is", "Was", "Do", "In", "On", "The", "I")]
    return names[0] if names else "they"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def vague(q: GoldQuestion) -> str:
    """On topic, committing to nothing the gold states."""
    rng = rng_for(q.id, q.gold, "vague")
    if shape(q.gold) == "verdict":
        return rng.choice(("It's hard to say either way.", "It could go either way."))
    if shape(q.gold) == "date":
        span = _gold_days(q.gold)
        if span is not None and (span[1] - span[0]).days < 300:
            return rng.choice((f"It was sometime in {span[0].year}.",
                               f"Sometime in {span[0].year}, I believe, but not a specific day."))
        return rng.choice(("Sometime a while ago.", "It was a few years back."))
    who = _subject(q)
    return rng.choice((
        f"It had to do with something {who} mentioned, but the conversations do not make the "
        "details clear.",
        f"{_cap(who)} talked about this at some point; it was something personal.",
        f"Something related to what {who} was doing around that time."))


def paraphrase(q: GoldQuestion) -> str:
    """The gold restated faithfully."""
    rng = rng_for(q.id, q.gold, "paraphrase")
    found = gold_period(q.gold)
    if found is not None and not found.period.yearless:
        first, last = found.period.first, found.period.last
        if found.relative or (last - first).days < 27:
            day = first + timedelta(days=rng.randint(0, (last - first).days))
            return f"It was on {_day_text(day, 2)}."
        return f"That was in {q.gold.strip().rstrip('.')}."
    span = _gold_days(q.gold)
    if span is not None and span[0] == span[1]:
        return f"It was on {_day_text(span[0], rng.randrange(2))}."
    if shape(q.gold) == "verdict":
        return q.gold.strip()
    who = _subject(q)
    lead = _as_said(q.gold)
    return rng.choice((f"From what {who} said, it was {lead}.",
                       f"The answer is {lead}, as {who} mentioned."))


def build(q: GoldQuestion, pool: Sequence[GoldQuestion]) -> list[BuiltAnswer]:
    """The answers of every kind that can be built for ``q`` (a kind without a value of the
    gold's kind to use is left out)."""
    out: dict[str, str] = {"gold": q.gold.strip(), "paraphrase": paraphrase(q),
                           "vague": vague(q)}
    value_shaped = shape(q.gold) in VALUE_SHAPES
    specific = wrong_value(q, pool, "specific") if value_shaped else None
    if specific is not None:
        out["specific"] = f"It was {_as_said(specific)}."
    other = _other_gold(q, pool)
    if other is not None:
        out["other_gold"] = other
    hedge = _hedge(q, pool) if value_shaped else None
    if hedge is not None:
        out["hedge"] = hedge
    return [BuiltAnswer(f"{q.id}#{kind}", q.id, kind, text) for kind, text in out.items()]


def _other_gold(q: GoldQuestion, pool: Sequence[GoldQuestion]) -> str | None:
    """Another question's gold of the same group, said as the answer; None when there is
    none that differs from ``q``'s."""
    others = sorted(p.gold for p in pool if p.group == q.group and p.id != q.id
                    and not _clashes(main_answer(p.gold), q.gold))
    if not others:
        return None
    chosen = rng_for(q.id, q.gold, "other_gold").choice(others)
    return f"It was {_as_said(main_answer(chosen))}."


def _hedge(q: GoldQuestion, pool: Sequence[GoldQuestion]) -> str | None:
    """An answer that names the gold among two wrong values of its kind (both ways for a
    verdict); None without two distinct wrong values."""
    if shape(q.gold) == "verdict":
        return "It could be yes or no."
    first = wrong_value(q, pool, "hedge-1")
    second = wrong_value(q, pool, "hedge-2")
    if not (first and second) or _overlaps(first, second):
        return None
    # The gold's main answer: its accepted alternatives would read as more values.
    names = [_as_said(first), _as_said(main_answer(q.gold)), _as_said(second)]
    rng_for(q.id, q.gold, "hedge").shuffle(names)
    return f"It was either {names[0]}, {names[1]} or {names[2]}."


def build_all(questions: Iterable[GoldQuestion]) -> list[BuiltAnswer]:
    pool = list(questions)
    return [a for q in pool for a in build(q, pool)]
