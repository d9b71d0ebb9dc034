"""Matching ground-truth key facts against a free-text answer, without a model.

The published LENS key facts range from short phrases ("connection pool exhaustion") to long
sentences ("geo-lookup latency degraded progressively over multiple reporting periods ...").
Exact substring matching fails on any paraphrase, so a fact counts as present when:

1. **Numbers**: every number in the fact appears in the answer, compared as values after
   normalising format ("1,200" = "1200" = "1.2k"), units ("800ms" = "0.8 s", "45%" =
   "45 percent") and a small relative tolerance (default 2%; a rounded "1.2k" covers 1150-1250).
2. **Words**: enough of the fact's content words appear within two consecutive sentences of
   the answer: all of them for facts of up to four content words, otherwise at least
   ``coverage`` (default 0.5) of them and never fewer than four. Words are compared after
   lower-casing, dropping punctuation and function words, splitting hyphenated compounds
   ("geo-lookup" -> "geo", "lookup"), crude suffix stripping ("exhaustion", "exhausted" ->
   "exhaust"; a stem of four letters or more also meets its extensions, "elev" of elevation
   meets "elevat" of elevated) and a few trend synonyms ("rising" = "increasing").
   Identifiers ("service-B", "p99") must all appear, so service-B never meets service-C.
3. **Polarity**: a fact that is a denial ("... is not the root cause") needs a denial ("not",
   "no", "ruled out", "red herring", ...) in the answer, in a sentence that shares a word with
   the fact or just before one ("No. The deploy was unrelated.").

It cannot see contradiction beyond that, nor meaning-preserving rewording with other words: the
optional judge check (tier 2) catches those.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import unicodedata
from dataclasses import dataclass, field

from lens.scoring.numbers import Number, extract_numbers, numbers_match, strip_numbers

STOPWORDS = frozenset("""
a an and are as at be been being but by can could did do does done for from had has have how
i if in into is it its itself may might more most much of on onto or our over per so some such
than that the their them then there these they this those through to too up upon us was we
were what when where which while who whom why will with within would yet you your also all any
each other only very just about across after against along among around before behind below
beneath beyond during until via whether both either own same s t
""".split())

# Words that make a statement a denial. Multi-word cues are matched on the normalised text.
_NEGATION_WORDS = frozenset(
    "not no never none neither nor without isn't wasn't aren't weren't doesn't didn't don't "
    "cannot can't nothing unrelated unlikely excluded".split()
)
_NEGATION_PHRASES = ("ruled out", "rule out", "ruling out", "rules out", "red herring",
                     "coincidence", "coincidental", "not the cause", "not responsible")

# Trend words that paraphrase each other in the LENS scopes; each maps to one canonical stem.
_SYNONYMS = {
    **dict.fromkeys("increase increases increased increasing rise rises rising rose risen grow "
                    "grows growing grew grown climb climbs climbing climbed escalate escalates "
                    "escalated escalating".split(), "increas"),
    **dict.fromkeys("decrease decreases decreased decreasing decline declines declined declining "
                    "drop drops dropped dropping fall falls falling fell fallen".split(),
                    "decreas"),
    **dict.fromkeys("degrade degrades degraded degrading degradation worsen worsens worsened "
                    "worsening deteriorate deteriorates deteriorated deteriorating "
                    "deterioration".split(), "degrad"),
}

_SUFFIXES = ("ically", "ations", "ation", "ities", "ingly", "ments", "ment", "ness", "ings",
             "ing", "edly", "ions", "ion", "ives", "ive", "ers", "er", "ed", "es", "ly", "al",
             "s", "e")
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def normalise(text: str) -> str:
    """Lower-case, Unicode-fold and turn joining punctuation into spaces."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = t.replace("\u2019", "'").replace("\u2018", "'")
    t = re.sub(r"(?<=[a-z0-9])'s\b", "", t)
    # Hyphens, slashes and underscores join words ("geo-lookup", "read/write"): split them.
    return re.sub(r"(?<=[a-z0-9])[-_/](?=[a-z0-9])", " ", t)


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A deliberately crude suffix stripper: enough to meet inflected forms of one word."""
    if word in _SYNONYMS:
        return _SYNONYMS[word]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("ied") and len(word) > 4:
        return word[:-3] + "y"
    w = word
    for _ in range(2):
        for suffix in _SUFFIXES:
            if w.endswith(suffix) and len(w) - len(suffix) >= 3:
                w = w[: -len(suffix)]
                break
        else:
            break
    # "stopped" -> "stopp" -> "stop"
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    return w


def content_stems(text: str) -> list[str]:
    """The content words of ``text`` as stems, in order, without numbers or function words."""
    out: list[str] = []
    for tok in _TOKEN.findall(strip_numbers(normalise(text))):
        if tok in STOPWORDS or tok in _NEGATION_WORDS:
            continue
        if tok.replace(".", "").isdigit():
            continue
        out.append(stem(tok))
    return out


_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
# Only tokens with a separator or a digit can be identifiers: the lookahead skips plain words.
_COMPOUND = re.compile(
    r"(?<![a-z0-9])(?=[a-z0-9]*[-_/0-9])[a-z0-9]+(?:[-_/][a-z0-9]+)*(?![a-z0-9])"
)


def identifier_parts(text: str) -> list[list[str]]:
    """Name-like tokens that tell things apart ("service-B", "p99", "node_2"), as their parts.

    Matching these loosely would confuse service-B with service-C, so a fact's identifiers must
    all appear in the answer (joined: "serviceb", however the answer spaces or hyphenates it)."""
    t = strip_numbers(unicodedata.normalize("NFKC", text).lower())
    out: list[list[str]] = []
    for m in _COMPOUND.finditer(t):
        token = m.group(0)
        parts = re.split(r"[-_/]", token)
        mixed = any(any(c.isdigit() for c in p) and any(c.isalpha() for c in p) for p in parts)
        short = len(parts) > 1 and any(len(p) <= 2 for p in parts)
        if any(c.isalpha() for c in token) and (mixed or short):
            out.append(parts)
    return out


def identifiers(text: str) -> list[str]:
    return ["".join(parts) for parts in identifier_parts(text)]


def _joined_pairs(text: str) -> set[str]:
    """Adjacent tokens written together ("service b" -> "serviceb"), so that an answer writing
    an identifier with a space still meets it."""
    toks = _TOKEN.findall(normalise(text))
    return {a + b for a, b in itertools.pairwise(toks)}


def _inflected_in(word: str, by_prefix: dict[str, list[str]]) -> bool:
    """Whether the window holds another inflection of ``word``: one stem a prefix of the other,
    both of at least four letters ("elev" of elevation, "elevat" of elevated). Such stems share
    their first four letters, so only the window's words under that prefix are compared."""
    if len(word) < 4:
        return False
    return any(x.startswith(word) or word.startswith(x) for x in by_prefix.get(word[:4], ()))


def _prefix_index(window: set[str]) -> dict[str, list[str]]:
    index: dict[str, list[str]] = {}
    for x in window:
        if len(x) >= 4:
            index.setdefault(x[:4], []).append(x)
    return index


def fact_words(fact: str) -> tuple[list[str], list[str]]:
    """(content words as stems, identifiers) of a fact; an identifier's parts ("service", "b"
    of "service-B") are not counted again as words."""
    id_parts = identifier_parts(fact)
    ids = list(dict.fromkeys("".join(p) for p in id_parts))
    part_stems = {stem(x) for parts in id_parts for x in parts}
    words = [w for w in dict.fromkeys(content_stems(fact)) if w not in part_stems]
    return [*words, *ids], ids


def has_negation(text: str) -> bool:
    t = normalise(text)
    if any(p in t for p in _NEGATION_PHRASES):
        return True
    return any(tok in _NEGATION_WORDS for tok in _TOKEN.findall(t))


@dataclass(frozen=True)
class FactMatcherSettings:
    coverage: float = 0.5
    short_fact_words: int = 4
    rel_tol: float = 0.02
    # A fact's words must meet within this many consecutive sentences of the answer.
    window_sentences: int = 2


@dataclass
class FactMatch:
    fact: str
    matched: bool
    coverage: float
    words_missing: list[str] = field(default_factory=list)
    numbers_missing: list[str] = field(default_factory=list)
    negation_missing: bool = False

    def as_detail(self) -> dict[str, object]:
        return {
            "fact": self.fact,
            "matched": self.matched,
            "coverage": round(self.coverage, 4),
            "words_missing": self.words_missing,
            "numbers_missing": self.numbers_missing,
            "negation_missing": self.negation_missing,
        }


class AnswerText:
    """An answer prepared once for matching many facts."""

    def __init__(self, answer: str) -> None:
        self.raw = answer
        self.numbers = extract_numbers(normalise(answer), words=True)
        # Per sentence: its words and whether it denies something, so that a fact's denial is
        # only met by a denial about the same subject.
        self.sentences = [
            (set(content_stems(sent)) | set(identifiers(sent)) | _joined_pairs(sent),
             has_negation(sent))
            for sent in _SENTENCE.split(answer) if sent.strip()
        ]
        self._windows: dict[int, list[tuple[set[str], dict[str, list[str]]]]] = {}

    def windows(self, size: int) -> list[tuple[set[str], dict[str, list[str]]]]:
        """The words of every run of ``size`` consecutive sentences (all of them if fewer), each
        with its index by four-letter prefix; built once per answer, used for every fact."""
        if size not in self._windows:
            stems = [words for words, _ in self.sentences]
            n = max(1, len(stems) - size + 1)
            sets = [set().union(*stems[i:i + size]) for i in range(n)]
            self._windows[size] = [(w, _prefix_index(w)) for w in sets]
        return self._windows[size]

    def denies(self, words: set[str]) -> bool:
        # A denial covers its own sentence and the next: "No. The deploy was unrelated."
        for i, (stems, neg) in enumerate(self.sentences):
            if not neg:
                continue
            following = self.sentences[i + 1][0] if i + 1 < len(self.sentences) else set()
            if (stems | following) & words:
                return True
        return False


def match_fact(fact: str, answer: AnswerText,
               settings: FactMatcherSettings | None = None) -> FactMatch:
    s = settings or FactMatcherSettings()
    fact_numbers: list[Number] = extract_numbers(normalise(fact))
    numbers_missing = [
        n.text for n in fact_numbers
        if not any(numbers_match(n, a, s.rel_tol) for a in answer.numbers)
    ]
    words, ids = fact_words(fact)
    if not words and not fact_numbers:
        # A fact with no content words and no numbers cannot be checked mechanically.
        return FactMatch(fact, False, 0.0)
    # Short facts need every word; longer ones a share, but never fewer than four words.
    needed = min(len(words), max(s.short_fact_words, math.ceil(s.coverage * len(words) - 1e-9)))
    # The best run of consecutive sentences: words scattered over a long answer do not add up
    # to a fact.
    best: set[str] = set()
    words_ok = False
    for window, by_prefix in answer.windows(s.window_sentences):
        present = {w for w in words
                   if w in window or (w not in ids and _inflected_in(w, by_prefix))}
        ok = len(present) >= needed and all(i in window for i in ids)
        if (ok, len(present)) > (words_ok, len(best)):
            best, words_ok = present, ok
    coverage = len(best) / len(words) if words else 1.0
    negation_missing = has_negation(fact) and not answer.denies(set(words))
    matched = words_ok and not numbers_missing and not negation_missing and bool(answer.raw)
    return FactMatch(
        fact=fact,
        matched=matched,
        coverage=coverage,
        words_missing=[w for w in words if w not in best],
        numbers_missing=numbers_missing,
        negation_missing=negation_missing,
    )


def match_facts(facts: list[str], answer: str,
                settings: FactMatcherSettings | None = None) -> list[FactMatch]:
    prepared = AnswerText(answer)
    return [match_fact(f, prepared, settings) for f in facts]
