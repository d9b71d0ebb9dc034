"""What an answer claims in its own words, as opposed to text pasted from the records.

Fact credit needs a fact stated as a claim. An answer that pastes records holds their figures
and words without stating anything, so sentences that are mostly copied from the scope's
records are set aside as quotes before facts are matched. A sentence of three words or more
is a quote when three quarters of its words lie in runs of ``SHINGLE`` or more consecutive
words that also occur, in that order, in some record of the scope (citations in square
brackets are ignored on both sides).

The figures an answer states (numbers, and dates as one figure each) are its claim atoms:
``stuffing_factor`` discounts credit when the answer states far more figures than the question
needs, and ``supported_share`` is the share of them that the records the agent received, the
question or the ground truth contain.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field

from lens.data.ground_truth_text import fact_subject
from lens.scoring.text.facts import AnswerText, FactMatcherSettings, match_fact
from lens.scoring.text.numbers import Number, extract_numbers, numbers_match

# Runs of this many consecutive words shared with a record mark copied text. Eight words of
# a record in the same order are not written independently by chance.
SHINGLE = 8
# A sentence with at least this share of its words in copied runs is a quote.
QUOTED_SHARE = 0.75
# Sentences shorter than this are too short to judge alone: a copied fragment right after a
# quote is part of it; otherwise ("F." after an own sentence) it is the answer's own.
MIN_QUOTE_WORDS = 3
# The figures an answer may state before fact credit is discounted: this many per figure of
# the ground truth, and never fewer than MIN_ALLOWANCE.
ALLOWANCE_PER_FIGURE = 3
MIN_ALLOWANCE = 15

# What stands in a quote's place in the claims text: a line without words.
QUOTE_MARK = "\u2014"
_WORD = re.compile(r"[a-z0-9]+")
_CITATION = re.compile(r"\[[^\[\]\n]{1,200}\]")
# Sentences end at . ! ? ; (not after an initial such as the "F." of "F. Rossi") or a line break.
_SENTENCE = re.compile(r"(?<=[.!?;])(?<!\b[A-Z]\.)\s+|\n+")
_DATE = re.compile(r"(?<![\w-])(\d{4})-(\d{2})-(\d{2})(?![\w-])")


def _words(text: str) -> list[str]:
    low = unicodedata.normalize("NFKC", text).lower()
    return _WORD.findall(_CITATION.sub(" ", low))


class ScopeText:
    """The records of one scope, indexed for quote detection and figure support when first
    needed. With a :class:`LiveScope` the index is held for one scope of a run at a time:
    indexing another scope drops this one's, so a run's scoring holds one scope's index (its
    8-word sequences alone take about thirty times the scope's text), not the dataset's."""

    def __init__(self, texts: Mapping[str, str] | Callable[[], Mapping[str, str]],
                 live: LiveScope | None = None) -> None:
        # Texts given as the function that reads them (a scope of an outline dataset, read
        # from disk) are read when first needed and dropped with the index.
        self._read = texts if callable(texts) else None
        self._texts: Mapping[str, str] | None = None if callable(texts) else texts
        self._live = live
        self._shingles: set[tuple[str, ...]] | None = None
        self._atoms: dict[str, Atoms] = {}
        self._states: dict[tuple[str, str, FactMatcherSettings | None], bool] = {}
        self._prepared: dict[str, AnswerText] = {}

    def _use(self) -> None:
        if self._live is not None:
            self._live.use(self)

    @property
    def texts(self) -> Mapping[str, str]:
        if self._texts is None:
            assert self._read is not None
            # Texts read from disk are held while this scope is the live one, as its index.
            self._use()
            self._texts = self._read()
        return self._texts

    def release(self) -> None:
        """Drop the index (the 8-word sequences, the prepared record texts) and texts read
        from disk; they are built again, the same, when next needed. What was worked out from
        them is kept: a figure list and a yes or no per record asked about are small, and a
        later pass over the scope's questions asks again."""
        self._shingles = None
        self._prepared = {}
        if self._read is not None:
            self._texts = None

    @property
    def shingles(self) -> set[tuple[str, ...]]:
        self._use()
        if self._shingles is None:
            found: set[tuple[str, ...]] = set()
            for text in self.texts.values():
                w = _words(text)
                found.update(tuple(w[i:i + SHINGLE]) for i in range(len(w) - SHINGLE + 1))
            self._shingles = found
        return self._shingles

    def states_fact(self, episode: str, facts: Iterable[str],
                    settings: FactMatcherSettings | None = None) -> bool:
        """Whether the record states at least one of ``facts`` (by the fact matcher). A fact in
        subject form is looked for by its value: a record is a report or a table about its
        subject ("- auth: p99 211 ms"), where the value stands without the subject's words."""
        text = self.texts.get(episode, "")
        if not text:
            return False
        self._use()
        for fact in (fact_subject(f)[1] for f in facts):
            key = (episode, fact, settings)
            if key not in self._states:
                if episode not in self._prepared:
                    self._prepared[episode] = AnswerText(text)
                self._states[key] = match_fact(fact, self._prepared[episode], settings).matched
            if self._states[key]:
                return True
        return False

    def atoms_of(self, episode: str) -> Atoms:
        self._use()
        if episode not in self._atoms:
            self._atoms[episode] = Atoms.of(self.texts.get(episode, ""))
        return self._atoms[episode]


class LiveScope:
    """The one :class:`ScopeText` of a run whose index is held: using another releases it."""

    def __init__(self) -> None:
        self._current: ScopeText | None = None

    def use(self, scope: ScopeText) -> None:
        if self._current is not scope:
            if self._current is not None:
                self._current.release()
            self._current = scope


# Sentences that claim nothing of their own: a footer listing where figures come from
# ("Sources: …", to the end of the answer), and a sentence opened by doubt, denial or a
# condition ("I doubt that …", "It would be wrong to say …", "Only if …", "If … were …").
_FOOTER = re.compile(r"^\W*(?:sources?|references?|refs|citations?|cited|figures|values)"
                     r"\s*(?:used|cited)?\s*:", re.I)
_DOUBTED = re.compile(
    r"^\W*(?:(?:it|this|that)\s+(?:would\s+be|is)\s+(?:wrong|mistaken|incorrect|misleading)"
    r"\s+to\s+(?:say|claim|conclude|think|state)"
    r"|i\s+doubt|(?:it\s+is\s+)?doubtful"
    r"|only\s+if|if\b[^.;:]*\b(?:were|had\s+been|would)\b|suppos(?:e|ing)|imagine"
    r"|hypothetically)", re.I)


@dataclass(frozen=True)
class Claims:
    """An answer split into its own sentences, the sentences it quotes, and those it does not
    assert (a "Sources:" footer, a sentence opened by doubt, denial or a condition). ``text``
    is the answer with each quote or unasserted sentence replaced by QUOTE_MARK; ``own`` counts
    the sentences kept."""

    text: str
    own: int
    quoted: list[str] = field(default_factory=list)
    unasserted: list[str] = field(default_factory=list)


def _sentence_spans(answer: str) -> list[tuple[str, str]]:
    """(sentence, the separator after it) of every non-blank sentence."""
    out: list[tuple[str, str]] = []
    last = 0
    for m in _SENTENCE.finditer(answer):
        out.append((answer[last:m.start()], m.group(0)))
        last = m.end()
    out.append((answer[last:], ""))
    return [(s, sep) for s, sep in out if s.strip()]


def _covered(words: list[str], shingles: Container[tuple[str, ...]]) -> list[bool]:
    """Whether each word lies in a run of SHINGLE words the records hold."""
    covered = [False] * len(words)
    for i in range(len(words) - SHINGLE + 1):
        if tuple(words[i:i + SHINGLE]) in shingles:
            for j in range(i, i + SHINGLE):
                covered[j] = True
    return covered


def _quote_flags(sentences: list[str], scope: ScopeText | None) -> list[bool]:
    """Whether each sentence is mostly copied from the scope's records."""
    if scope is None or not scope.texts:
        return [False] * len(sentences)
    per_sentence = [_words(s) for s in sentences]
    covered = _covered([w for ws in per_sentence for w in ws], scope.shingles)
    flags: list[bool] = []
    pos = 0
    previous = False
    for ws in per_sentence:
        n = len(ws)
        share = sum(covered[pos:pos + n]) / n if n else 0.0
        pos += n
        # A fragment ("18 retired.") goes with the sentence before it when it was copied too:
        # it is part of the pasted passage, not a claim of its own.
        previous = (share >= QUOTED_SHARE if n >= MIN_QUOTE_WORDS
                    else previous and share == 1.0)
        flags.append(previous)
    return flags


def split_claims(answer: str, scope: ScopeText | None) -> Claims:
    spans = _sentence_spans(answer)
    flags = _quote_flags([s for s, _ in spans], scope)
    own: list[str] = []
    quoted: list[str] = []
    unasserted: list[str] = []
    # The answer's text with each quote or unasserted sentence replaced by a wordless line, so
    # that two of its own sentences around one do not become neighbours for the matcher's
    # sentence window; an own sentence keeps the separator after it ("; " stays within the
    # sentence for the matcher).
    kept: list[str] = []
    footer = False
    for (sent, sep), is_quote in zip(spans, flags, strict=True):
        footer = footer or bool(_FOOTER.match(sent))
        if is_quote:
            quoted.append(sent)
        elif footer or _DOUBTED.match(sent):
            unasserted.append(sent)
        else:
            own.append(sent)
            kept.append(sent + sep)
            continue
        kept.append(f"\n{QUOTE_MARK}\n")
    if not quoted and not unasserted:
        return Claims(text=answer, own=len(own))
    # One line per mark, however the sentences around it were separated.
    text = re.sub(r"\s*\n\s*", "\n", "".join(kept)).strip()
    return Claims(text=text, own=len(own), quoted=quoted, unasserted=unasserted)


@dataclass(frozen=True)
class Atoms:
    """The figures of a text: numbers outside dates, and dates (as ``YYYY-MM-DD``)."""

    numbers: list[Number]
    dates: set[str]

    @classmethod
    def of(cls, text: str) -> Atoms:
        low = unicodedata.normalize("NFKC", text).lower()
        dates = {"-".join(m.groups()) for m in _DATE.finditer(low)}
        rest = _DATE.sub(" ", _CITATION.sub(" ", low))
        return cls(numbers=_distinct(extract_numbers(rest)), dates=dates)

    @property
    def count(self) -> int:
        return len(self.numbers) + len(self.dates)

    def holds(self, n: Number) -> bool:
        # Either way round: an honest rounding in the answer ("about 230 ms") stands for the
        # record's figure (228 ms) as the matcher reads it.
        return any(numbers_match(n, x, 0.0) or numbers_match(x, n, 0.0) for x in self.numbers)


def _distinct(numbers: Iterable[Number]) -> list[Number]:
    seen: dict[tuple[str, float], Number] = {}
    for n in numbers:
        seen.setdefault((n.dimension, round(n.value, 9)), n)
    return list(seen.values())


def allowance(ground_truth_texts: Iterable[str]) -> int:
    figures = Atoms.of("\n".join(ground_truth_texts)).count
    return max(MIN_ALLOWANCE, ALLOWANCE_PER_FIGURE * figures)


def stuffing_factor(claimed: Atoms, allowed: int) -> float:
    """1 up to ``allowed`` figures, then allowed / figures: listing every number of the records
    dilutes whatever the answer got right."""
    return 1.0 if claimed.count <= allowed else allowed / claimed.count


def supported_share(claimed: Atoms, support: Iterable[Atoms]) -> float | None:
    """Share of the claimed figures that some supporting text states; None without figures."""
    if not claimed.count:
        return None
    pool = list(support)
    dates = set().union(*(a.dates for a in pool)) if pool else set()
    exact = {(x.dimension, round(x.written, 9)) for a in pool for x in a.numbers}
    ok = sum(d in dates for d in claimed.dates)
    ok += sum((n.dimension, round(n.written, 9)) in exact or any(a.holds(n) for a in pool)
              for n in claimed.numbers)
    return ok / claimed.count
