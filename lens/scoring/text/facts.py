"""Matching ground-truth key facts against a free-text answer, without a model.

A key fact is a short statement: a figure ("43 tickets", "531 ms", "$60,217"), a date
("2024-07-19"), an identifier ("CHG-5382") or a finding in words ("notifications p99 latency
increasing", "ERP-1148 is not the cause of the rise"). It counts as stated when:

1. **Anchors match exactly as whole tokens.** Identifiers meet only themselves, however the
   answer spaces or hyphenates them (CHG-5382 never meets CHG-5383 or CHG-53821); dates meet
   dates with the same day and month, and the same year when the answer gives one ("19 July
   2024", "July 19th", "Jul 19" meet 2024-07-19); the digits inside dates and identifiers are
   never figures of their own.
2. **Figures match with their unit** (:mod:`lens.scoring.text.numbers`): counts, money and bare
   figures exactly (a rounding the answer declares with a multiplier, "181k", is allowed
   within its last digit); measured values with a unit after unit conversion and within a
   rounding the answer declares ("about 250 ms"), at most ``rel_tol``; a count meets only a
   count of the same thing ("252 requests" is not "252 ms", "3 reviewers" not "3 invoices").
   Number words, compound durations and unit spellings are read ("forty-three", "2 h 8 min",
   "units per litre").
3. **Words and figures occur together.** Everything the fact says must be found within one
   sentence of the answer (two consecutive sentences for facts of ``long_fact_words`` words
   or more): all the words of a fact of up to ``short_fact_words`` words, at least
   ``coverage`` of a longer one's and never fewer than ``short_fact_words``. The fact's
   identifiers, names ("F. Rossi", "Brightline Facilities") and direction of change are
   always required; a change must be stated in one clause with what changed, and that clause
   may not name someone else. A clause about another entity of the same kind (CHG-5383 when
   the fact names CHG-5382, another student's handle) lends the fact nothing.
4. **Polarity and direction.** "Rose", "climbing" and "elevated" meet "increasing";
   "decreasing" or "stayed flat" never do. A finding stated in a denied clause ("did not
   increase", "is no longer elevated") does not count, nor anything under "It is not true
   that ..."; a fact that is itself a denial ("ERP-1148 is not the cause") needs a denial in
   the answer ("ruled out", "did not cause", or a bare "No." before the sentence).
5. **A value is a claim about its subject.** A fact in subject form ("auth p99 latency: 224 ms",
   :func:`lens.data.ground_truth_text.fact_subject`) is the short fact "auth p99 latency 224
   ms": its value counts only in a sentence naming the subject, and only when the clause nearest
   the value that names a subject (looking back, then forward) names it: with its words together
   in that clause, and not another key fact's subject ("rivals") nor another name sharing one of
   its words ("Orwell Print Services" for "Marlow IT Services"). Two values or more with no word
   around them are a bare list and state nothing; a figure offered with an alternative ("211 ms
   (or possibly 252 ms)") states neither; a figure in a clause that denies it ("never reached
   531 ms"), or in a sentence under doubt or a condition ("I doubt that", "only if", "if …
   were") counts for nothing.

Words are compared as crude stems (see :mod:`lens.scoring.text.lexicon`). The matcher cannot follow
a paraphrase that uses other words for the finding ("tail latency got worse" for "p99 latency
increasing" only partly): it is a lower bound on a paraphrasing answer, and the judge grader is
the better measure when a judge is configured.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from lens.data.ground_truth_text import fact_subject
from lens.scoring.text.answer_lines import with_context
from lens.scoring.text.dates import Date, find_dates
from lens.scoring.text.lexicon import (
    DIRECTIONS,
    NEGATION_PHRASES,
    NEGATION_WORDS,
    SENTENCE_DOUBT,
    SENTENTIAL_NEGATION,
    TOKEN,
    content_stems,
    fold,
    has_negation,
    may_hold_stem,
    normalise,
    stem,
)
from lens.scoring.text.narrower import SentenceView, general_kind, narrower_match
from lens.scoring.text.numbers import Number, extract_numbers, numbers_match
from lens.scoring.text.numwords import words_to_digits
from lens.scoring.text.periods import gold_period

__all__ = ["MATCHER_VERSION", "AnswerText", "FactMatch", "FactMatcherSettings", "fact_subjects",
           "has_negation", "match_fact", "match_facts", "normalise", "stem"]

# Identifiers: a letter-led token with a digit or joined parts ("chg-5382", "p99",
# "mchen_2026", "service-b", "v5.5.0"); "x10^9" is part of a unit, not a name.
_ID = re.compile(r"(?<![\w$€£.^/-])([a-z][a-z0-9]*(?:[-_][a-z0-9]+)+|[a-z]+\d[a-z0-9]*(?:\.\d+)*)"
                 r"(?![\w^-])")
# Sentences end at . ! ? (not after an initial such as "F.") or a line break.
_SENTENCE = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)\s+|\n+")
# Clauses end at ; : ( ) dashes, contrastive conjunctions, and a comma before a conjunction or
# a denial (", and", ", which", ", not"); a parenthetical comma ("X, by contrast, rose") or one
# before a year ("July 19, 2024") does not end one.
_CLAUSE = re.compile(r"[;:()\[\]]|\s[-–—]\s|—"
                     r"|,(?=\s*(?:and|or|so|which|who|with|as|because|since|after|before|when"
                     r"|then|not|no|rather|instead|but|while|whereas|although|though|yet)\b)"
                     r"|\b(?=(?:but|while|whereas|although|though|however|yet)\b)")
# Proper names: runs of capitalised words ("Rossi", "Brightline Facilities", "Sarah Jiang");
# all-capital acronyms (API, ALT, DNS) are ordinary words.
# What starts a statement of its own inside a sentence.
_NEW_STATEMENT = re.compile(r"\s*(?:[;:]|(?:but|while|whereas|although|though|however|yet)\b)",
                            re.I)
_NAME = re.compile(r"(?<![\w.'-])[A-Z][a-z][A-Za-z]*(?:\s+[A-Z][a-z][A-Za-z]*)*(?![\w-])")
# A name as written whole, acronyms inside it included ("Marlow IT Services"), and the titles
# that go before a name without being part of it.
_NAME_RUN = re.compile(r"(?<![\w.'-])[A-Z][a-z][A-Za-z]*"
                       r"(?:\s+(?:[A-Z]{2,}\s+)*[A-Z][a-z][A-Za-z]*)*(?![\w-])")
_TITLES = frozenset("dr mr mrs ms prof".split())
# Capitalised, yet no one's name.
_CALENDAR = frozenset("january february march april may june july august september october "
                      "november december monday tuesday wednesday thursday friday saturday "
                      "sunday".split())
_BARE_NO = re.compile(r"^\W*(?:no|nope)\W*$", re.I)
# A figure offered with an alternative ("211 ms (or possibly 252 ms)", "3 or 4 reports")
# commits to neither: both are blanked before matching.
_FIGURE = r"[$€£]?\d[\d,.]*(?:\s?%|(?:\s+(?!or\b)[A-Za-z/µ^]+){0,3}?)"
_ALTERNATIVE = re.compile(
    rf"{_FIGURE}\s*[(\[,]?\s*\bor\s+(?:(?:possibly|perhaps|maybe|else|rather|even|probably"
    rf"|alternatively|equally|just|as\s+much\s+as)\s+)*{_FIGURE}\s*[)\]]?", re.I)


# Words that join the items of a list without saying anything about them.
_LIST_WORDS = frozenset("and or also plus then etc vs versus".split())


def _ids(text: str) -> list[tuple[str, int, int]]:
    """(key, start, end) of the identifiers in folded ``text``; the key drops separators, so
    "CHG 5382", "chg-5382" and "CHG_5382" are one identifier."""
    out = []
    for m in _ID.finditer(text):
        token = m.group(1)
        parts = re.split(r"[-_]", token)
        has_digit = any(c.isdigit() for c in token)
        short_tail = len(parts) > 1 and len(parts[-1]) <= 2 and parts[-1].isalpha()
        if has_digit or short_tail:
            out.append((re.sub(r"[-_.]", "", token), m.start(), m.end()))
    return out


def _shape(token: str) -> str:
    """The kind of an identifier: change tickets keep their prefix ("chg-0"), handles and other
    names their pattern ("a_0", "a0"), so CHG-5383 is another change and jlee_2025 another
    student, while a p99 beside a CHG-5382 is neither."""
    if re.fullmatch(r"[a-z]{2,5}-\d+", token):
        return token.split("-")[0] + "-0"
    return re.sub(r"[a-z]+", "a", re.sub(r"\d+", "0", token))


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    chars = list(text)
    for s, e in spans:
        chars[s:e] = " " * (e - s)
    return "".join(chars)


@dataclass
class Clause:
    stems: set[str]
    ids: dict[str, str]  # key -> kind (see _shape)
    numbers: list[Number]
    dates: list[Date]
    negated: bool
    denied: bool = False  # under a sentential denial ("It is not true that ...")
    names: set[str] = field(default_factory=set)  # stems of the proper names it mentions
    # Identifier keys, and every two adjacent tokens joined ("chg 5382" -> "chg5382").
    ids_written: set[str] = field(default_factory=set)
    # Whether it has a word besides its values and list joiners: "CHG-5382, 224 ms and 307 ms"
    # has none, "It was 14/day before REL-9505" has.
    worded: bool = True
    # Every token in order, as stems: where a subject's words stand together.
    tokens: list[str] = field(default_factory=list)
    # Each proper name as written whole, as a set of stems (see _NAME_RUN).
    name_runs: list[frozenset[str]] = field(default_factory=list)
    # Each change between two figures it states, as (from, to): "rose from 10 to 40", "up to
    # 40 from 10" and "10 → 40" all give (10, 40).
    changes: list[tuple[Number, Number]] = field(default_factory=list)


_FROM_BEFORE = re.compile(r"\bfrom\s*$")
_TO_BEFORE = re.compile(r"\bto\s*$")
# Between the two figures of a change: "from 10 to 40", "from 10 units a day to 40", "10 → 40".
_TO_BETWEEN = re.compile(r"^(?:\s*[a-z/%]+){0,4}?\s+to\s+$|^\s*(?:→|->|⟶)\s*$")
_ARROW = ("→", "->", "⟶")
_FROM_BETWEEN = re.compile(r"^(?:\s*[a-z/%]+){0,4}?\s+from\s+$")


def changes_in(text: str, numbers: list[Number]) -> list[tuple[int, int]]:
    """The changes ``text`` states between two of its figures (in order of appearance), as
    (index of the figure changed from, index of the one changed to): "from 10 to 40 units",
    "to 40 from 10", "10 → 40". Two figures merely side by side ("10 and 40") state none."""
    out = []
    for i, (a, b) in enumerate(itertools.pairwise(numbers)):
        # Only the words right before the first figure matter; a bounded look keeps long
        # answers linear.
        before, between = text[max(0, a.start - 12):a.start], text[a.end:b.start]
        if _TO_BETWEEN.match(between) and (_FROM_BEFORE.search(before)
                                          or any(arrow in between for arrow in _ARROW)):
            out.append((i, i + 1))
        elif _TO_BEFORE.search(before) and _FROM_BETWEEN.match(between):
            out.append((i + 1, i))
    return out


def _clause(raw: str) -> Clause:
    t = fold(raw)
    dates = find_dates(t)
    t = _mask(t, [(d.start, d.end) for d in dates])
    ids = _ids(t)
    keys = {k: _shape(t[s:e]) for k, s, e in ids}
    t = _mask(t, [(s, e) for _, s, e in ids])
    t = words_to_digits(t)
    numbers = extract_numbers(t, words=False)
    words_text = _mask(t, [(n.start, n.end) for n in numbers])
    norm = normalise(words_text)
    stems = set(content_stems(norm))
    toks = TOKEN.findall(normalise(raw))
    # "CHG 5382" written with a space still names CHG-5382.
    pairs = {a + b for a, b in itertools.pairwise(toks)}
    negated = (any(p in norm for p in NEGATION_PHRASES)
               or any(tok in NEGATION_WORDS or tok.endswith("n't") for tok in TOKEN.findall(norm)))
    worded = any(w not in _LIST_WORDS for w in re.findall(r"[a-z]{2,}", norm))
    return Clause(stems | set(keys), keys, numbers, dates, negated, ids_written=set(keys) | pairs,
                  worded=worded, tokens=[stem(tok) for tok in toks],
                  changes=[(numbers[i], numbers[j]) for i, j in changes_in(t, numbers)])


def _clauses(sentence: str) -> list[tuple[str, str]]:
    """(separator before, text) of each clause of a sentence."""
    out: list[tuple[str, str]] = []
    last, sep = 0, ""
    for m in _CLAUSE.finditer(sentence):
        if m.start() > last or m.group(0):
            out.append((sep, sentence[last:m.start()]))
            sep, last = m.group(0), m.end()
    out.append((sep, sentence[last:]))
    return [(b, p) for b, p in out if p.strip()]


def _name_groups(text: str, sentence_start: bool) -> list[list[str]]:
    """Proper names in ``text`` as groups of stems; a capitalised first word of a sentence
    alone is no name ("Notifications p99 ...", but "Brightline Facilities ...")."""
    groups = []
    lead = len(text) - len(text.lstrip())
    for m in _NAME.finditer(text):
        if sentence_start and m.start() == lead and " " not in m.group(0):
            continue
        words = [w for w in m.group(0).split() if w.lower() not in _CALENDAR]
        group = [w for w in content_stems(normalise(" ".join(words))) if w not in DIRECTIONS]
        if group:
            groups.append(group)
    return groups


def _name_runs(text: str) -> list[frozenset[str]]:
    runs = (content_stems(normalise(m.group(0))) for m in _NAME_RUN.finditer(text))
    return [frozenset(w for w in r if w not in _TITLES) for r in runs]


def _names(text: str, sentence_start: bool) -> set[str]:
    return {w for g in _name_groups(text, sentence_start) for w in g}


@dataclass
class Sentence:
    clauses: list[Clause]
    after_bare_no: bool  # follows a sentence that is just "No."
    # Its text and each clause's span in it, for the readings of lens.scoring.text.narrower.
    view: SentenceView | None = None


# A hedge that names several answers states none of them: "either X, Y or Z" (to the end of
# its clause), and a list of short items closed by "or" ("3, 4 or 5", "Paris, Rome or Oslo").
# Both are bounded in length so that a long answer is read in linear time.
_EITHER = re.compile(r"\beither\b[^;:]{0,300}?\bor\b[^;:,.]{0,80}", re.I)
_OR = re.compile(r"\bor\b", re.I)
# "or so", "or something", "or not": no alternative named.
_OR_IDIOM = re.compile(r"\s+(?:so|something|not|else|other)\b", re.I)
_LIST_ITEM_WORDS = 4
_LIST_REACH = 200


def _or_lists(text: str) -> list[tuple[int, int]]:
    """Spans of the lists of short items closed by "or": at least two items before it, each
    of at most four words, separated by commas."""
    spans = []
    for m in _OR.finditer(text):
        if _OR_IDIOM.match(text, m.end()):
            continue
        left_start = max(0, m.start() - _LIST_REACH)
        left = re.split(r"[;:!?\n]", text[left_start:m.start()])[-1]
        pieces = left.split(",")
        if len(pieces) < 2 or len(pieces[-1].split()) > _LIST_ITEM_WORDS:
            continue
        items = 1
        for piece in reversed(pieces[:-1]):
            if not piece.strip() or len(piece.split()) > _LIST_ITEM_WORDS:
                break
            items += 1
        if items < 2:
            continue
        start = m.start() - len(",".join(pieces[-items:]))
        right = re.match(r"[^,;:.!?\n]{0,60}", text[m.end():])
        end = m.end() + (right.end() if right else 0)
        if len(text[m.end():end].split()) <= _LIST_ITEM_WORDS:
            spans.append((start, end))
    return spans


def _blank_alternatives(text: str) -> str:
    def blank(m: re.Match[str]) -> str:
        return " " * len(m.group(0))

    text = _EITHER.sub(blank, text)
    text = _mask(text, _or_lists(text))
    return _ALTERNATIVE.sub(blank, text)


def _sentences(text: str) -> list[Sentence]:
    out: list[Sentence] = []
    previous_no = False
    for raw in _SENTENCE.split(text):
        if not raw or not any(ch.isalnum() for ch in raw):
            continue  # punctuation or whitespace alone states nothing
        if _BARE_NO.match(raw):
            previous_no = True
            continue
        raw = _blank_alternatives(raw)
        parts = _clauses(raw)
        clauses = [_clause(p) for _, p in parts]
        _read_names_and_denials(parts, clauses)
        out.append(Sentence(clauses, previous_no, _view(raw, parts, clauses)))
        previous_no = False
    return out


def _read_names_and_denials(parts: list[tuple[str, str]], clauses: list[Clause]) -> None:
    """Set each clause's names, and whether a denial or a doubt earlier in the sentence
    governs it."""
    denied = False
    # Doubt and condition ("I doubt that", "only if", "if … were") govern the whole
    # sentence after them: "I doubt that 258 ms: the report gives 258 ms" asserts nothing.
    doubted = False
    for i, ((before, part), clause) in enumerate(zip(parts, clauses, strict=True)):
        clause.names = _names(part, sentence_start=i == 0)
        clause.name_runs = _name_runs(part)
        # A sentential denial covers its clause and the clauses that continue it ("It is
        # not true that X, which ..."), up to a new statement ("; it was corrected to").
        if _NEW_STATEMENT.match(before) or _NEW_STATEMENT.match(part):
            denied = False
        folded = fold(part)
        doubted = doubted or bool(SENTENCE_DOUBT.search(normalise(part)))
        denied = denied or bool(SENTENTIAL_NEGATION.search(folded))
        clause.denied = denied or doubted


def _view(raw: str, parts: list[tuple[str, str]], clauses: list[Clause]) -> SentenceView:
    """The sentence with the span of each clause and whether the clause is asserted."""
    spans, pos = [], 0
    for (_, part), clause in zip(parts, clauses, strict=True):
        start = raw.find(part, pos)
        pos = start + len(part)
        spans.append((start, pos, not (clause.negated or clause.denied)))
    return SentenceView(raw, tuple(spans))


# Bumped whenever a rule changes what matches, so that scores of two matcher versions are not
# compared as one condition.
MATCHER_VERSION = 7


@dataclass(frozen=True)
class FactMatcherSettings:
    coverage: float = 0.5
    short_fact_words: int = 4
    # The most a measured value may differ by a rounding the answer declares ("about 250 ms"
    # for 252 ms) or a unit conversion implies, relative to the fact's value; counts, money,
    # dates and ids are exact.
    rel_tol: float = 0.02
    # Facts of this many words or more may spread over ``window_sentences`` sentences; shorter
    # ones must be stated within one sentence.
    window_sentences: int = 2
    long_fact_words: int = 8

    def as_condition(self) -> dict[str, float | int]:
        """Everything that decides a match, for the scoring condition of a run."""
        return {"matcher_version": MATCHER_VERSION, **dataclasses.asdict(self)}


@dataclass
class FactMatch:
    fact: str
    matched: bool
    coverage: float
    words_missing: list[str] = field(default_factory=list)
    numbers_missing: list[str] = field(default_factory=list)
    negation_missing: bool = False
    reason: str = ""

    def as_detail(self) -> dict[str, object]:
        detail: dict[str, object] = {
            "fact": self.fact,
            "matched": self.matched,
            "coverage": round(self.coverage, 4),
            "words_missing": self.words_missing,
            "numbers_missing": self.numbers_missing,
            "negation_missing": self.negation_missing,
        }
        if self.reason:
            detail["reason"] = self.reason
        return detail


class AnswerText:
    """An answer prepared once for matching many facts."""

    def __init__(self, answer: str) -> None:
        self.raw = answer
        self.sentences = _sentences(with_context(answer))
        self._windows: dict[int, list[tuple[list[Clause], bool]]] = {}

    @functools.cached_property
    def views(self) -> list[SentenceView]:
        return [s.view for s in self.sentences if s.view is not None]

    def windows(self, size: int) -> list[tuple[list[Clause], bool]]:
        """The clauses of every run of ``size`` consecutive sentences (all if fewer), each
        with whether the run follows a bare "No."."""
        if size not in self._windows:
            sents = self.sentences
            n = max(1, len(sents) - size + 1)
            self._windows[size] = [
                ([c for s in sents[i:i + size] for c in s.clauses],
                 bool(sents[i:i + 1]) and sents[i].after_bare_no)
                for i in range(n)
            ]
        return self._windows[size]


@dataclass
class _Fact:
    text: str
    numbers: list[Number]
    noun_stems: list[set[str]]
    dates: list[Date]
    ids: list[str]
    names: list[list[str]]  # each name's words; any one of them names it ("Jiang")
    words: list[str]  # plain content stems, direction tokens included
    directions: list[str]  # required: the directions of the fact's undenied clauses
    subject: list[str]  # the words naming what changed, when the fact states a change
    id_shapes: dict[str, str]
    main_denied: bool  # its main (first) statement is a denial
    about: _Subject | None = None  # what a fact in subject form is about
    # The changes it states between its figures, as (from, to) indexes into ``numbers``.
    changes: list[tuple[int, int]] = field(default_factory=list)

    @property
    def items(self) -> list[str]:
        return list(dict.fromkeys([*self.words, *self.name_words, *self.ids]))

    @property
    def plain(self) -> list[str]:
        return list(dict.fromkeys([*self.words, *self.name_words]))

    @property
    def name_words(self) -> list[str]:
        return [w for g in self.names for w in g]


def _name_met(name: tuple[str, ...], stems: set[str], runs: list[frozenset[str]]) -> bool:
    """Whether ``stems`` name ``name`` by one of its words ("Jiang" for "Sarah Jiang",
    "Brightline" for "Brightline Facilities"), not as part of another name that shares it
    ("Orwell Print Services" is not "Marlow IT Services")."""
    mine = set(name)
    for w in mine & stems:
        around = [r for r in runs if w in r]
        if not around or any(not (r - mine) or not (mine - r) for r in around):
            return True
    return False


# How many words beyond its own a subject's mention may spread over ("auth service's p99
# latency", "the 30-day invoice count of Brightline Facilities").
SUBJECT_SLACK = 3


@dataclass(frozen=True)
class _Subject:
    """What a fact in subject form is about ("auth p99 latency", "Marlow IT Services
    month-to-date billing"): its names, identifiers and other words."""

    names: tuple[tuple[str, ...], ...]
    ids: tuple[str, ...]
    words: tuple[str, ...]

    @property
    def size(self) -> int:
        return sum(map(len, self.names)) + len(self.ids) + len(self.words)

    def _named(self, stems: set[str], runs: list[frozenset[str]]) -> bool:
        if not all(_name_met(g, stems, runs) for g in self.names):
            return False
        if not all(k in stems for k in self.ids):
            return False
        if not self.words:
            return True
        head, rest = self.words[0], self.words[1:]
        return _has(head, stems) and sum(_has(w, stems) for w in rest) >= math.ceil(len(rest) / 2)

    def stated_in(self, clause: Clause) -> bool:
        """Whether one clause names the subject: all its names and identifiers, its first word
        ("auth" of "auth p99 latency": what is measured) and half of its other words, standing
        together (within the subject's length and three more words: "login-loop tickets of
        the Android app", not "the Android app v5.5.0 and a login-loop macro")."""
        runs = clause.name_runs
        if not self._named(clause.stems | clause.ids_written, runs):
            return False
        toks, span = clause.tokens, self.size + SUBJECT_SLACK
        for i in range(len(toks)):
            window = toks[i:i + span]
            if self._named({*window, *(a + b for a, b in itertools.pairwise(window))}, runs):
                return True
        return False


    def within(self, other: _Subject) -> bool:
        """Whether every part of this subject is part of ``other`` ("monthly summary" of
        "monthly summary snapshot"): naming the other names this one too."""
        mine = {w for g in self.names for w in g} | set(self.ids) | set(self.words)
        theirs = {w for g in other.names for w in g} | set(other.ids) | set(other.words)
        return mine <= theirs


@functools.lru_cache(maxsize=4096)
def _subject(text: str) -> _Subject | None:
    """The subject of a fact in subject form; None when it is an identifier alone ("CHG-5382:
    2024-03-18" dates an event, it measures nothing)."""
    t = fold(text)
    found = _ids(t)
    ids = tuple(dict.fromkeys(k for k, _, _ in found))
    id_parts = {stem(p) for _, s, e in found for p in re.split(r"[-_]", t[s:e])}
    # Written first in a key fact, a name is still a name ("Marlow IT Services billing").
    names = tuple(tuple(w for w in g if w not in id_parts)
                  for g in _name_groups(text, sentence_start=False))
    names = tuple(g for g in names if g)
    name_words = {w for g in names for w in g}
    words = tuple(w for w in dict.fromkeys(content_stems(normalise(_mask(t, [(s, e) for _, s, e
                                                                            in found]))))
                  if w not in id_parts and w not in name_words)
    if not names and not words:
        return None
    return _Subject(names, ids, words)


def _noun_stems(n: Number) -> set[str]:
    return {stem(w) for noun in n.nouns for w in re.split(r"[-\s]+", noun) if w}


@functools.lru_cache(maxsize=4096)
def _parse_fact(fact: str) -> _Fact:
    subject, value = fact_subject(fact)
    if subject is not None:
        # "auth p99 latency: 224 ms" is the claim "auth p99 latency 224 ms": the colon would
        # otherwise end a clause between the value and what it is about.
        return dataclasses.replace(_parse_fact(f"{subject} {value}"), about=_subject(subject))
    return _parse_statement(fact)


@dataclass(frozen=True)
class _FactValues:
    """The figures, dates and identifiers of a fact, and its text with the dates and
    identifiers masked and number words written as digits."""

    dates: list[Date]
    ids: list[str]
    id_shapes: dict[str, str]
    id_parts: set[str]  # the stems of the identifiers' parts, which are no words of the fact
    digits: str
    numbers: list[Number]


def _fact_values(fact: str) -> _FactValues:
    t = fold(fact)
    dates = find_dates(t)
    masked = _mask(t, [(d.start, d.end) for d in dates])
    found = _ids(masked)
    ids = list(dict.fromkeys(k for k, _, _ in found))
    id_shapes = {k: _shape(masked[s:e]) for k, s, e in found}
    id_parts = {stem(p) for _, s, e in found for p in re.split(r"[-_]", masked[s:e])}
    digits = words_to_digits(_mask(masked, [(s, e) for _, s, e in found]))
    return _FactValues(dates, ids, id_shapes, id_parts, digits,
                       extract_numbers(digits, words=False))


def _changed_subject(ordered: list[str], directions: list[str], name_words: set[str]
                     ) -> list[str]:
    """The words before the first direction name what changed ("auth p99 latency" of "auth
    p99 latency above the SLO")."""
    if not directions:
        return []
    first = next((i for i, w in enumerate(ordered) if w in directions), 0)
    return list(dict.fromkeys(w for w in ordered[:first]
                              if w not in DIRECTIONS and w not in name_words))


def _fact_names(fact: str, id_parts: set[str]) -> list[list[str]]:
    names = [[w for w in g if w not in id_parts] for g in _name_groups(fact, True)]
    return [g for g in names if g]


def _ordered_words(v: _FactValues) -> list[str]:
    """The fact's content stems in order, its figures and identifiers left out."""
    masked = _mask(v.digits, [(n.start, n.end) for n in v.numbers])
    return [w for w in content_stems(normalise(masked)) if w not in v.id_parts]


def _parse_statement(fact: str) -> _Fact:
    clauses = [_clause(p) for _, p in _clauses(fact)] or [_clause(fact)]
    v = _fact_values(fact)
    noun_stems = [_noun_stems(n) for n in v.numbers]
    names = _fact_names(fact, v.id_parts)
    name_words = {w for g in names for w in g}
    ordered = _ordered_words(v)
    words = [w for w in dict.fromkeys(ordered)
             if w not in name_words and not any(w in s for s in noun_stems)]
    directions = list(dict.fromkeys(w for c in clauses if not c.negated
                                    for w in sorted(c.stems & DIRECTIONS)))
    return _Fact(fact, v.numbers, noun_stems, v.dates, v.ids, names, words, directions,
                 _changed_subject(ordered, directions, name_words), v.id_shapes,
                 main_denied=clauses[0].negated, changes=changes_in(v.digits, v.numbers))


def _has(word: str, stems: set[str]) -> bool:
    """Whether ``stems`` hold ``word`` or another inflection of it: one stem a prefix of the
    other, both of at least four letters ("elev" of elevation, "elevat" of elevated)."""
    if word in stems:
        return True
    if len(word) < 4 or word in DIRECTIONS:
        return False
    return any(len(x) >= 4 and x[:4] == word[:4] and (x.startswith(word) or word.startswith(x))
               for x in stems)


def _number_in(fact: _Fact, i: int, clauses: list[Clause], stems: set[str], rel_tol: float
               ) -> list[int]:
    """Indexes of the clauses that state the fact's i-th figure."""
    f = fact.numbers[i]
    nouns = fact.noun_stems[i]
    hits = []
    for ci, clause in enumerate(clauses):
        for a in clause.numbers:
            if nouns and f.dimension == "" and a.dimension == "rate" and not a.declared:
                # "14 of these tickets a day" states a daily count of 14 tickets.
                ok = math.isclose(a.written, f.written)
            else:
                ok = numbers_match(f, a, rel_tol)
            if not ok:
                continue
            if nouns and not f.dimension:
                a_nouns = _noun_stems(a)
                # A bare figure may name what it counts elsewhere in the sentence.
                if not (a_nouns & nouns or (not a_nouns and nouns & stems)):
                    continue
            hits.append(ci)
            break
    return hits


def _states_change(fact: _Fact, clause: Clause) -> bool:
    """Whether one clause states the fact's change of its subject: the direction, the subject's
    first word (what changed: "auth", "notifications") and at least half of its other words
    ("geo-lookup latency increasing" states "geo-lookup API latency increasing"), and, if the
    clause names anyone, the fact's names ("ALT is elevated in G. Byrne" is not about Rossi)."""
    if not all(d in clause.stems for d in fact.directions):
        return False
    if clause.names and not all(set(g) & clause.stems for g in fact.names):
        return False
    if not fact.subject:
        return True
    head, rest = fact.subject[0], fact.subject[1:]
    found = sum(_has(w, clause.stems) for w in rest)
    return _has(head, clause.stems) and found >= math.ceil(len(rest) / 2)


def _may_hold(fact: _Fact, clauses: list[Clause]) -> bool:
    """A cheap first look: a window without the fact's identifiers, or without any figure or
    date when the fact has one, cannot state it (long pasted answers have thousands)."""
    if fact.numbers and not any(c.numbers for c in clauses):
        return False
    if fact.dates and not any(c.dates for c in clauses):
        return False
    return all(any(k in c.ids_written for c in clauses) for k in fact.ids)


def _attributed(about: _Subject, rivals: list[_Subject], clauses: list[Clause], at: int
                ) -> bool:
    """Whether the value in ``clauses[at]`` is said of ``about``: the nearest clause that names
    a subject, looking back from the value's own clause to the start of the sentence, then
    forward, names it. A clause naming a rival (the subject of another key fact) first takes
    the value: "auth p99 latency spiked to 235 ms; inventory-sync p99 kept climbing, to 531
    ms" says nothing of auth p99 latency's 531 ms."""
    for j in [*range(at, -1, -1), *range(at + 1, len(clauses))]:
        if about.stated_in(clauses[j]):
            return True
        if any(r.stated_in(clauses[j]) for r in rivals):
            return False
    return False


def _usable(fact: _Fact, clauses: list[Clause]) -> list[Clause]:
    """The clauses that may speak of the fact: a clause naming another entity of the kind the
    fact names, and not the fact's own (CHG-5383 beside a fact about CHG-5382), is about
    something else."""
    own = set(fact.ids)
    kinds = set(fact.id_shapes.values())
    usable = []
    for c in clauses:
        other_kinds = {kind for k, kind in c.ids.items() if k not in own} & kinds
        own_kinds = {kind for k, kind in c.ids.items() if k in own}
        if not other_kinds - own_kinds:
            usable.append(c)
    return usable


@dataclass
class _Scope:
    """What the matcher's rules look at: one fact and the usable clauses of one scope."""

    fact: _Fact
    clauses: list[Clause]  # every clause of the scope, in order
    usable: list[Clause]
    after_no: bool
    settings: FactMatcherSettings
    rivals: list[_Subject]
    stems: set[str]
    figure_hits: list[list[int]]  # per figure of the fact, the usable clauses stating it
    date_hits: list[list[int]]
    id_hits: list[list[int]]
    present: set[str]  # the fact's items the scope holds

    @classmethod
    def of(cls, fact: _Fact, clauses: list[Clause], usable: list[Clause], after_no: bool,
           s: FactMatcherSettings, rivals: list[_Subject]) -> _Scope:
        stems = set().union(*(c.stems for c in usable))
        figures = [_number_in(fact, i, usable, stems, s.rel_tol) for i in range(len(fact.numbers))]
        dates = [_clauses_stating(d, usable) for d in fact.dates]
        ids = [[ci for ci, c in enumerate(usable) if k in c.ids_written] for k in fact.ids]
        return cls(fact, clauses, usable, after_no, s, rivals or [], stems, figures, dates, ids,
                   _items_present(fact, usable, stems))

    @property
    def anchors(self) -> set[int]:
        """The usable clauses stating any of the fact's figures, dates or identifiers."""
        return {ci for hits in [*self.figure_hits, *self.date_hits, *self.id_hits]
                for ci in hits}

    @property
    def value_hits(self) -> list[tuple[list[int], bool]]:
        """The clauses stating each of the fact's values (figures, dates, identifiers that are
        not part of its subject), each with whether it is a measurement (figure or date)."""
        about = self.fact.about
        ids = [hits for k, hits in zip(self.fact.ids, self.id_hits, strict=True)
               if about is None or k not in about.ids]
        return ([(h, True) for h in [*self.figure_hits, *self.date_hits]]
                + [(h, False) for h in ids])

    @functools.cached_property
    def finding(self) -> tuple[list[Clause], list[Clause]]:
        """(the clauses holding any of the fact's words, the ones among them that carry the
        finding: those with its direction, else those with the most of its words)."""
        fact = self.fact
        plain_present = [w for w in fact.plain if w in self.present]
        holding = [c for c in self.usable if any(_has(w, c.stems) for w in plain_present)]
        if fact.directions:
            return holding, [c for c in holding if any(d in c.stems for d in fact.directions)]
        return holding, _most_words(holding, plain_present)


def _clauses_stating(d: Date, clauses: list[Clause]) -> list[int]:
    """The clauses (by index) stating date ``d``."""
    return [ci for ci, c in enumerate(clauses) if any(a.meets(d) for a in c.dates)]


def _items_present(fact: _Fact, usable: list[Clause], stems: set[str]) -> set[str]:
    """The fact's items the clauses hold. Identifiers are whole tokens: CHG-5382 is not in
    CHG-53821 or POL-7713 in POL-7713a."""
    written = set().union(*(c.ids_written for c in usable))
    return {w for w in fact.items if (w in written if w in fact.ids else _has(w, stems))}


def _most_words(clauses: list[Clause], words: list[str]) -> list[Clause]:
    """The clauses holding the most of ``words``."""
    held = [sum(_has(w, c.stems) for w in words) for c in clauses]
    best = max(held)
    return [c for c, n in zip(clauses, held, strict=True) if n == best]


# The matcher's rules. Each takes a scope and says whether it rejects the fact there; a rule's
# reason is the one a FactMatch gives. They run in the order of the tables below.

def _figure_missing(sc: _Scope) -> bool:
    """Rejects a scope that lacks one of the fact's figures (with its unit and, for a count,
    what it counts): "252 ms" or "252 requests" for "252 tickets"."""
    return not all(sc.figure_hits)


def _date_missing(sc: _Scope) -> bool:
    """Rejects a scope that lacks one of the fact's dates (another day, or another year when
    the answer gives one)."""
    return not all(sc.date_hits)


def _identifier_missing(sc: _Scope) -> bool:
    """Rejects a scope without each of the fact's identifiers as a whole token: CHG-53821 or
    CHG-5383 is not CHG-5382."""
    return not all(k in sc.present for k in sc.fact.ids)


def _bare_list(sc: _Scope) -> bool:
    """Rejects values with no word around them ("CHG-5382, 224 ms, 2024-03-22"): a list, not
    a claim about anything; a single value ("4") may be the whole answer to a question."""
    values = sum(len(c.numbers) + len(c.dates) + len(c.ids) for c in sc.usable)
    return bool(sc.anchors) and values > 1 and not any(c.worded for c in sc.usable)


def _change_reversed(sc: _Scope) -> bool:
    """Rejects a change between two figures stated the other way round: "fell from 40 to 10
    units a day" for "from 10 to 40 units a day". It rejects only where every clause holding
    both figures as a change states it reversed; both figures stated otherwise ("10 a day
    before, 40 after") are left to the other rules."""
    fact, tol = sc.fact, sc.settings.rel_tol
    for i, j in fact.changes:
        f_from, f_to = fact.numbers[i], fact.numbers[j]
        both = set(sc.figure_hits[i]) & set(sc.figure_hits[j])
        stated = [c for ci in sorted(both) for c in sc.usable[ci].changes]
        forward = any(numbers_match(f_from, a, tol) and numbers_match(f_to, b, tol)
                      for a, b in stated)
        backward = any(numbers_match(f_to, a, tol) and numbers_match(f_from, b, tol)
                       for a, b in stated)
        if backward and not forward:
            return True
    return False


def _value_denied(sc: _Scope) -> bool:
    """For a fact that is a figure, date or identifier alone: rejects it when every clause
    stating it is under a denial of the whole statement ("It is not true that ...")."""
    anchors = sc.anchors
    return bool(anchors) and all(sc.usable[ci].denied for ci in anchors)


def _figure_denied(sc: _Scope) -> bool:
    """Rejects a figure or date of an affirmed fact when every clause stating it denies it:
    "auth p99 latency never reached 531 ms" denies the figure, whatever else is said."""
    fact, anchors = sc.fact, sc.anchors
    return (not fact.main_denied and bool(fact.numbers or fact.dates) and bool(anchors)
            and all(sc.usable[ci].negated or sc.usable[ci].denied for ci in anchors))


def _subject_or_direction_missing(sc: _Scope) -> bool:
    """Rejects a scope missing one of the fact's names ("Rossi") or its direction of change
    ("increasing" is not met by "decreasing" or "stayed flat")."""
    fact, present = sc.fact, sc.present
    return (not all(any(n in present for n in g) for g in fact.names)
            or not all(d in present for d in fact.directions))


def _words_needed(items: int, s: FactMatcherSettings) -> int:
    """How many of a fact's items a scope must hold: all of a short fact's, ``coverage`` of a
    longer one's and never fewer than ``short_fact_words``."""
    return items if items <= s.short_fact_words else max(
        s.short_fact_words, math.ceil(s.coverage * items - 1e-9))


def _words_missing(sc: _Scope) -> bool:
    """Rejects a scope with too few of the fact's words (:func:`_words_needed`)."""
    return len(sc.present) < _words_needed(len(sc.fact.items), sc.settings)


def _subject_apart_from_change(sc: _Scope) -> bool:
    """Rejects a change not stated in one clause with what changed: "Auth request volume
    stayed flat, while notifications latency rose" says nothing about notifications request
    volume."""
    return bool(sc.fact.directions) and not any(_states_change(sc.fact, c) for c in sc.usable)


def _denial_missing(sc: _Scope) -> bool:
    """Rejects a fact that is itself a denial ("ERP-1148 is not the cause") when the answer
    affirms it: no denied clause holding its words and no bare "No." before it."""
    holding, _ = sc.finding
    return sc.fact.main_denied and not (sc.after_no or any(c.negated for c in holding))


def _finding_denied(sc: _Scope) -> bool:
    """Rejects an affirmed finding when every clause carrying it is denied ("did not
    increase", "is no longer elevated", "It is not true that ...")."""
    _, core = sc.finding
    return not sc.fact.main_denied and bool(core) and all(c.negated or c.denied for c in core)


def _about_another_subject(sc: _Scope) -> bool:
    """For a fact in subject form: rejects a value not said of the fact's subject. A value is a
    claim about the subject named nearest to it, in one clause: subject words scattered over
    the sentence, or another key fact's subject in between, do not make "feature-request
    reaches the threshold: it has risen to 43 tickets" a claim about the Android app's
    login-loop tickets."""
    about = sc.fact.about
    if about is None:
        return False
    others = [r for r in sc.rivals if r != about and not r.within(about)]
    where = {id(c): j for j, c in enumerate(sc.clauses)}
    for hits, measured in sc.value_hits:
        # An identifier names an event ("order-router retries at 724 per hour against 47
        # before CHG-5382"), not a measurement of the clause's subject: only figures and
        # dates are taken by a rival named nearer.
        near = others if measured else []
        if not any(_attributed(about, near, sc.clauses, where[id(sc.usable[ci])])
                   for ci in hits):
            return True
    return False


_Rule = tuple[str, Callable[[_Scope], bool]]

# Rules on the fact's values; a rejection here reports none of the fact's words as present.
VALUE_RULES: tuple[_Rule, ...] = (
    ("figure missing", _figure_missing),
    ("date missing", _date_missing),
)
ANCHOR_RULES: tuple[_Rule, ...] = (
    ("identifier missing", _identifier_missing),
    ("bare list", _bare_list),
    ("change reversed", _change_reversed),
)
# For a fact that is a figure, date or identifier alone (no words to find).
VALUE_ALONE_RULES: tuple[_Rule, ...] = (
    ("denied", _value_denied),
)
# For a fact with words.
FINDING_RULES: tuple[_Rule, ...] = (
    ("denied", _figure_denied),
    ("subject or direction missing", _subject_or_direction_missing),
    ("words missing", _words_missing),
    ("subject apart from the change", _subject_apart_from_change),
    ("denial missing", _denial_missing),
    ("denied", _finding_denied),
    ("about another subject", _about_another_subject),
)
ANOTHER_ENTITY = "about another entity"


def _first_rejection(rules: tuple[_Rule, ...], sc: _Scope) -> str:
    return next((reason for reason, rule in rules if rule(sc)), "")


def _check(fact: _Fact, clauses: list[Clause], after_no: bool, s: FactMatcherSettings,
           rivals: list[_Subject] | None = None) -> tuple[bool, set[str], str]:
    """Whether the clauses of one scope state the fact: (ok, items present, reason)."""
    usable = _usable(fact, clauses)
    if not usable:
        return False, set(), ANOTHER_ENTITY
    sc = _Scope.of(fact, clauses, usable, after_no, s, rivals or [])
    if why := _first_rejection(VALUE_RULES, sc):
        return False, set(), why
    rules = ANCHOR_RULES + (FINDING_RULES if fact.plain else VALUE_ALONE_RULES)
    why = _first_rejection(rules, sc)
    return not why, sc.present, why


def _values_missing(fact: str, f: _Fact, answer: AnswerText, s: FactMatcherSettings
                    ) -> list[str]:
    """The fact's figures and dates the whole answer lacks, for the detail."""
    clauses = [c for sent in answer.sentences for c in sent.clauses]
    stems = set().union(*(c.stems for c in clauses)) if clauses else set()
    missing = [n.text for i, n in enumerate(f.numbers)
               if not _number_in(f, i, clauses, stems, s.rel_tol)]
    return missing + _dates_missing(fact, f, clauses)


def _dates_missing(fact: str, f: _Fact, clauses: list[Clause]) -> list[str]:
    """The fact's dates no clause states, as the fact writes them."""
    return [fact_date_text(fact, d) for d in f.dates if not _clauses_stating(d, clauses)]


def _scan(f: _Fact, answer: AnswerText, s: FactMatcherSettings, rivals: list[_Subject]
          ) -> tuple[bool, set[str], str]:
    """(matched, items present, reason) over the answer's windows: the first window stating
    the fact, else the one holding the most of its items and why it fell short."""
    size = s.window_sentences if len(f.items) >= s.long_fact_words else 1
    best: set[str] = set()
    reason = "empty answer" if not answer.raw.strip() else "not stated"
    for clauses, after_no in answer.windows(size):
        if not clauses or not _may_hold(f, clauses):
            continue
        ok, present, why = _check(f, clauses, after_no, s, rivals)
        if ok:
            return True, present, ""
        if len(present) > len(best) or not best:
            best, reason = present, why or reason
    return False, best, reason


def _narrower(fact: str, answer: AnswerText, items: list[str]) -> FactMatch | None:
    """The verdict of the narrower reading, where it settles the fact: a period gold is the
    period reading's alone; a kind the answer names a case of is matched, else the matcher's
    words decide (None)."""
    narrow = narrower_match(fact, answer.views)
    if narrow is None or not (narrow.matched or gold_period(fact) is not None):
        return None
    return FactMatch(fact, narrow.matched, 1.0 if narrow.matched else 0.0,
                     words_missing=[] if narrow.matched else items, reason=narrow.reason)


def match_fact(fact: str, answer: AnswerText,
               settings: FactMatcherSettings | None = None,
               rivals: Iterable[str] = ()) -> FactMatch:
    """Whether ``answer`` states ``fact``. ``rivals`` are the other subjects the question's
    key facts are about ("inventory-sync p99" beside "auth p99 latency: 531 ms"): a value the
    answer gives one of them is not a value of the fact's subject."""
    s = settings or FactMatcherSettings()
    f = _parse_fact(fact)
    others = [r for r in map(_subject, dict.fromkeys(rivals)) if r is not None]
    items = f.items
    if not items and not f.numbers and not f.dates:
        # A fact with no content words and no figures cannot be checked mechanically.
        return FactMatch(fact, False, 0.0, reason="nothing to check")
    narrow = _narrower(fact, answer, items)
    if narrow is not None:
        return narrow
    return _scanned(fact, f, answer, s, others)


def _scanned(fact: str, f: _Fact, answer: AnswerText, s: FactMatcherSettings,
             others: list[_Subject]) -> FactMatch:
    """The matcher's own reading of the fact over the answer's windows, with what it lacks."""
    items = f.items
    numbers_missing = _values_missing(fact, f, answer, s)
    matched, best, reason = _scan(f, answer, s, others)
    if reason == "not stated" and numbers_missing:
        # No sentence even holds the fact's figures and dates: say which the whole answer lacks
        # (a judge's grade cannot credit a value the answer never gives, see
        # fact_grader.VETO_REASONS). An identifier the answer leaves out stays "not stated": a
        # judge may read "the student" for mchen_2026.
        reason = ("figure missing" if any(n.text in numbers_missing for n in f.numbers)
                  else "date missing")
    coverage = len(best) / len(items) if items else (1.0 if matched else 0.0)
    return FactMatch(
        fact=fact,
        matched=matched,
        coverage=coverage,
        words_missing=[w for w in items if w not in best],
        numbers_missing=numbers_missing,
        negation_missing=reason == "denial missing",
        reason=reason,
    )


def screen_text(answer: str) -> str:
    """What :func:`may_state` reads of an answer: its folded characters and its identifiers'
    keys (written without their separators)."""
    folded = fold(answer)
    return folded + "\n" + " ".join(k for k, _, _ in _ids(folded))


def may_state(fact: str, screened: str, settings: FactMatcherSettings | None = None) -> bool:
    """Whether an answer could state ``fact``, read from its :func:`screen_text` without
    parsing it: False only where :func:`match_fact` cannot match, because fewer of the fact's
    words than :func:`_words_needed` are written in it (:func:`may_hold_stem`). A fact matched
    by a narrower reading (a period, a kind) or by its values alone is always possible here:
    its figures are another screen's (write_side's digits)."""
    words, needed = _screen_words(fact, settings or FactMatcherSettings())
    return needed == 0 or sum(1 for w in words if may_hold_stem(w, screened)) >= needed


@functools.lru_cache(maxsize=4096)
def _screen_words(fact: str, s: FactMatcherSettings) -> tuple[tuple[str, ...], int]:
    """(the fact's words the screen looks for, how many it needs); 0 needed where the screen
    cannot tell. An identifier counts as found: its key is matched whole, not by letters."""
    if gold_period(fact) is not None or general_kind(fact) is not None:
        return (), 0
    f = _parse_fact(fact)
    if not f.plain:
        return (), 0
    words = tuple(w for w in f.items if w not in f.ids)
    return words, max(0, _words_needed(len(f.items), s) - (len(f.items) - len(words)))


def fact_date_text(fact: str, d: Date) -> str:
    return fold(fact)[d.start:d.end]


def fact_subjects(facts: Iterable[str]) -> list[str]:
    """The subjects the facts in subject form are about: each fact's rivals."""
    return list(dict.fromkeys(s for s, _ in map(fact_subject, facts) if s))


def match_facts(facts: list[str], answer: str,
                settings: FactMatcherSettings | None = None) -> list[FactMatch]:
    prepared = AnswerText(answer)
    rivals = fact_subjects(facts)
    return [match_fact(f, prepared, settings, rivals) for f in facts]
