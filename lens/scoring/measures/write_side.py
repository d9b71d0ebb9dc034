"""What the memory wrote, scored at every checkpoint from its listing and the dataset.

For each unit and checkpoint whose listing was recorded (lens/runner/memory_states.py):

- ``extraction_recall``: of the key facts stated so far (those of the scope's questions asked
  at or before this checkpoint), the share some single item holds (:func:`item_holds`: lens's
  fact matcher, or one line giving the fact's value beside its subject's words);
- ``false_memory_rate``: of the items, the share that state a figure no episode ingested so far
  states (a figure the memory made up or garbled), or, in a generated scope, give the target's
  name a figure the episodes give only to another entity (a distractor's figure filed under the
  target);
- ``update_current``: of the figures a later episode superseded so far (a generated scope's
  corrected misreport, lens/data/datagen/updates.py), the share the memory holds as it now is:
  the current figure, with the stale one nowhere or beside it in an item that states both (a
  correction). Each update is one of ``current`` (that), ``both`` (current and stale in separate
  items, nothing saying which holds), ``stale`` (only the superseded figure) or ``neither``;
- ``items_per_episode`` and ``bytes_per_episode``: the listing's size over the episodes ingested.

Each is unknown (None) when it cannot be computed: no listing (the adapter does not list), no key
facts stated yet, no items to judge. An arm's figure is the mean over its checkpoints with an
interval clustered by scope. ``update_current`` needs the dataset to say which figures a later
episode superseded: scopes that do not (any source but lens's generator) leave it unknown.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from lens.core.jsonguard import JsonRefused, loads_guarded
from lens.data.datagen.updates import Update, target_of, updates_of
from lens.data.dataset import Dataset, Scope
from lens.data.ground_truth_text import fact_subject
from lens.memory.listing import MemoryListing, listing_bytes
from lens.runner.memory_states import ListingLine, listings_by_unit
from lens.runs.store import atomic_write_text
from lens.scoring.text.facts import (
    AnswerText,
    fact_subjects,
    match_fact,
    may_state,
    screen_text,
)
from lens.scoring.text.lexicon import content_stems, fold, may_hold_stem, normalise
from lens.scoring.text.numbers import Number, extract_numbers, numbers_match
from lens.stats.intervals import clustered_estimate

FILE = "write_side.json"
METRICS = ("extraction_recall", "false_memory_rate", "update_current", "items_per_episode",
           "bytes_per_episode")
UpdateKind = Literal["current", "both", "stale", "neither"]
# Two figures are the same figure within this relative tolerance (rounding in a note).
FIGURE_TOL = 0.005
UPDATES_NOTE = ("updates are read from a generated scope's corrected misreport; scopes of other "
                "sources record no superseded figures, and their update figure is unknown")


class CheckpointScore(BaseModel):
    model_config = ConfigDict(extra="forbid")

    unit_key: str
    adapter: str
    scope_id: str
    checkpoint: int
    episodes_ingested: int
    items: int
    bytes: int
    facts: int
    facts_held: int
    false_items: list[str] = Field(default_factory=list)
    updates: list[UpdateKind] = Field(default_factory=list)
    extraction_recall: float | None
    false_memory_rate: float | None
    update_current: float | None
    items_per_episode: float | None
    bytes_per_episode: float | None


class ArmFigure(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mean: float | None
    low: float | None
    high: float | None
    n: int
    scopes: int


class WriteSide(BaseModel):
    model_config = ConfigDict(extra="forbid")

    arms: dict[str, dict[str, ArmFigure]] = Field(default_factory=dict)
    # Arms of the run without a recorded listing: every figure unknown.
    unlisted: list[str] = Field(default_factory=list)
    # Per arm, how many (checkpoint, update) pairs fell in each kind.
    update_kinds: dict[str, dict[str, int]] = Field(default_factory=dict)
    checkpoints: list[CheckpointScore] = Field(default_factory=list)
    updates: str = UPDATES_NOTE


def facts_so_far(dataset: Dataset, scope_id: str, checkpoint: int) -> list[str]:
    """The key facts of the scope's questions asked at or before ``checkpoint`` (distinct)."""
    facts = [f for q in dataset.questions
             if q.scope_id == scope_id and q.checkpoint_after <= checkpoint
             for f in q.ground_truth.key_facts]
    return list(dict.fromkeys(facts))


# A value that is one token with a dash or a letter (an id such as CHG-9437, a date such as
# 2024-09-30) is found as written; any other value by its figures.
_TOKEN_VALUE = re.compile(r"^(?=.*[-A-Za-z])[\w.:/-]+$")


def _line_holds(subject: str, value: str, line: str, reader: FactReader | None = None) -> bool:
    """Whether one line of a record puts the fact's value beside at least half of its subject's
    words ("- notifications: p99 215 ms" for "notifications p99 latency: 215 ms")."""
    read = reader or FactReader()
    if _TOKEN_VALUE.match(value):
        if fold(value) not in fold(line):
            return False
    else:
        wanted = read.numbers(value)
        said = read.numbers(line)
        if not wanted or not all(any(numbers_match(w, n, FIGURE_TOL) for n in said)
                                 for w in wanted):
            return False
    words = read.stems(subject)
    present = words & read.stems(line)
    return bool(words) and 2 * len(present) >= len(words)


@functools.lru_cache(maxsize=4096)
def _line_screen(fact: str) -> tuple[str | None, tuple[str, ...]] | None:
    """What :func:`_line_holds` needs written somewhere in an item, for a fact in subject form:
    (its value as written, for a token value; the subject's words); None for any other fact."""
    subject, value = fact_subject(fact)
    if not subject or not value:
        return None
    words = tuple(set(content_stems(normalise(subject))))
    return (fold(value) if _TOKEN_VALUE.match(value) else None), words


def may_hold(fact: str, screened: str) -> bool:
    """Whether an item could hold ``fact`` (:func:`item_holds`), read from its
    :func:`screen_text` without parsing it (a whole session listed as one item is tens of
    kilobytes, and most facts name words it never writes): the matcher's screen, or one of
    :func:`_line_holds`'s needs — the token value as written, half the subject's words."""
    if may_state(fact, screened):
        return True
    line = _line_screen(fact)
    if line is None:
        return False
    token, words = line
    if token is not None and token not in screened:
        return False
    maybe = sum(1 for w in words if may_hold_stem(w, screened))
    return bool(words) and 2 * maybe >= len(words)


def item_holds(fact: str, text: AnswerText, raw: str, rivals: Sequence[str],
               reader: FactReader | None = None) -> bool:
    """Whether one item states ``fact``: lens's fact matcher on the item, or, for a fact in
    subject form, one line of it giving the value beside the subject (records list figures
    under short labels that an answer would spell out)."""
    if match_fact(fact, text, rivals=rivals).matched:
        return True
    subject, value = fact_subject(fact)
    if not subject or not value:
        return False
    return any(_line_holds(subject, value, line, reader) for line in raw.splitlines())


_DIGITS = re.compile(r"\d+")


def _may_hold(fact_digits: list[str], text: str) -> bool:
    """A cheap necessary condition: every run of digits of the fact is in the item (both the
    matcher and the line rule need the fact's figures, ids and dates)."""
    return all(d in text for d in fact_digits)


class FactReader:
    """Whether items hold facts, remembered by text: a memory's items recur from checkpoint to
    checkpoint, and each (fact, item) pair is read once per run. The figures and content words
    of a text (an item, an episode, one line of either) are read once too: every checkpoint
    reads the episodes ingested so far again, and every fact the lines of an item."""

    def __init__(self) -> None:
        self._texts: dict[str, AnswerText] = {}
        self._screens: dict[str, str] = {}
        self._held: dict[tuple[str, str, tuple[str, ...]], bool] = {}
        self._numbers: dict[str, list[Number]] = {}
        self._stems: dict[str, frozenset[str]] = {}
        self._named: dict[tuple[str, str], list[Number]] = {}

    def numbers(self, text: str) -> list[Number]:
        """The figures of a text (``extract_numbers`` without spelled-out numbers), read once."""
        if text not in self._numbers:
            self._numbers[text] = extract_numbers(text, words=False)
        return self._numbers[text]

    def stems(self, text: str) -> frozenset[str]:
        """The content stems of a text, read once."""
        if text not in self._stems:
            self._stems[text] = frozenset(content_stems(normalise(text)))
        return self._stems[text]

    def named_figures(self, entity: str, text: str) -> list[Number]:
        """The figures an episode's text gives on lines naming ``entity``, read once."""
        key = (entity, text)
        if key not in self._named:
            self._named[key] = [n for line in text.splitlines()
                                if _names(entity, line, self) for n in self.numbers(line)]
        return self._named[key]

    def holds(self, fact: str, text: str, rivals: tuple[str, ...]) -> bool:
        key = (fact, text, rivals)
        if key not in self._held:
            screened = self._screens.get(text)
            if screened is None:
                screened = self._screens[text] = screen_text(text)
            if not may_hold(fact, screened):
                self._held[key] = False
                return False
            prepared = self._texts.get(text)
            if prepared is None:
                prepared = self._texts[text] = AnswerText(text)
            self._held[key] = item_holds(fact, prepared, text, rivals, self)
        return self._held[key]

    def held_facts(self, facts: Sequence[str], listing: MemoryListing) -> list[bool]:
        """For each fact, whether one item of the listing states it (:func:`item_holds`)."""
        texts = [i.text.replace(",", "") for i in listing.items if i.text.strip()]
        raw = [i.text for i in listing.items if i.text.strip()]
        rivals = tuple(fact_subjects(facts))
        out = []
        for fact in facts:
            digits = _DIGITS.findall(fact.replace(",", ""))
            out.append(any(self.holds(fact, r, rivals) for r, t in zip(raw, texts, strict=True)
                           if _may_hold(digits, t)))
        return out


def held_facts(facts: Sequence[str], listing: MemoryListing) -> list[bool]:
    """For each fact, whether one item of the listing states it (:func:`item_holds`)."""
    return FactReader().held_facts(facts, listing)


class Figures:
    """The figures some episodes state, found by dimension and value: a figure written as an
    episode wrote it is found at once, any other only among those of its dimension within 10%."""

    def __init__(self, numbers: Sequence[Number]) -> None:
        self.exact = {(n.dimension, n.value) for n in numbers}
        self.by_dim: dict[str, list[tuple[float, Number]]] = {}
        for n in numbers:
            self.by_dim.setdefault(n.dimension, []).append((n.value, n))
        for values in self.by_dim.values():
            values.sort(key=lambda p: p[0])

    def states(self, n: Number) -> bool:
        if (n.dimension, n.value) in self.exact:
            return True
        values = self.by_dim.get(n.dimension, [])
        span = 0.1 * abs(n.value) + n.precision
        lo = bisect.bisect_left(values, n.value - span, key=lambda p: p[0])
        hi = bisect.bisect_right(values, n.value + span, key=lambda p: p[0])
        return any(numbers_match(n, said, FIGURE_TOL) for _, said in values[lo:hi])


def false_items(listing: MemoryListing, episodes_text: str | Figures,
                reader: FactReader | None = None) -> list[str]:
    """The items stating a figure (not a date or an id) that no ingested episode states."""
    said = (episodes_text if isinstance(episodes_text, Figures)
            else Figures(extract_numbers(episodes_text, words=False)))
    numbers = (reader or FactReader()).numbers
    return [item.item_id for item in listing.items
            if any(not said.states(n) for n in numbers(item.text))]


def _names(entity: str, line: str, reader: FactReader) -> bool:
    return entity in reader.stems(line)


def misattributed_items(listing: MemoryListing, episodes: Sequence[str], target: str,
                        reader: FactReader) -> list[str]:
    """Items with a line naming ``target`` beside a figure the episodes state, but never on a
    line naming the target: another entity's figure under the target's name."""
    # The target's entity is its first word ("notifications" of "notifications p99 latency"):
    # its measure's words ("p99 latency") are shared with every other entity's.
    words = content_stems(normalise(target))
    if not words:
        return []
    entity = words[0]
    mine = _figures_named(entity, episodes, reader)
    anywhere = Figures([n for text in episodes for n in reader.numbers(text)])
    return [item.item_id for item in listing.items
            if any(_borrows(line, entity, mine, anywhere, reader)
                   for line in item.text.splitlines())]


def _figures_named(entity: str, episodes: Sequence[str], reader: FactReader) -> Figures:
    """The figures the episodes give on lines naming the entity."""
    return Figures([n for text in episodes for n in reader.named_figures(entity, text)])


def _borrows(line: str, entity: str, mine: Figures, anywhere: Figures,
             reader: FactReader) -> bool:
    """Whether a line naming the entity gives a figure the episodes state only of another."""
    return _names(entity, line, reader) and any(anywhere.states(n) and not mine.states(n)
                                                for n in reader.numbers(line))


def _states(text: str, figure: str, reader: FactReader) -> bool:
    wanted = reader.numbers(figure)
    said = reader.numbers(text)
    return bool(wanted) and all(any(numbers_match(w, n, FIGURE_TOL) for n in said)
                                for w in wanted)


def update_kind(update: Update, listing: MemoryListing,
                reader: FactReader | None = None) -> UpdateKind:
    """How the memory holds one superseded figure (see the module docstring)."""
    read = reader or FactReader()
    current = [_states(i.text, update.current, read) for i in listing.items]
    stale = [_states(i.text, update.stale, read) for i in listing.items]
    resolved = any(c and s for c, s in zip(current, stale, strict=True))
    stale_alone = any(s and not c for c, s in zip(current, stale, strict=True))
    if any(current):
        return "both" if stale_alone and not resolved else "current"
    return "stale" if any(stale) else "neither"


def _ratio(a: float, b: int) -> float | None:
    return a / b if b else None


def _invented(listing: MemoryListing, scope: Scope, episodes: list[str], reader: FactReader
              ) -> list[str]:
    """The items with a figure no episode states, then those giving the scope's target
    another entity's figure."""
    invented = false_items(listing, Figures(
        [n for text in episodes for n in reader.numbers(text)]), reader)
    target = target_of(scope)
    if target is not None:
        misfiled = misattributed_items(listing, episodes, target, reader)
        invented += [i for i in misfiled if i not in invented]
    return invented


def score_checkpoint(line: ListingLine, scope: Scope, dataset: Dataset,
                     reader: FactReader | None = None) -> CheckpointScore:
    reader = reader or FactReader()
    episodes = scope.ordered_episodes()[:line.episodes_ingested]
    facts = facts_so_far(dataset, scope.scope_id, line.checkpoint)
    held = reader.held_facts(facts, line.listing) if facts else []
    invented = _invented(line.listing, scope, [e.text for e in episodes], reader)
    kinds = [update_kind(u, line.listing, reader) for u in updates_of(scope)
             if u.at < line.episodes_ingested]
    items = len(line.listing.items)
    size = listing_bytes(line.listing)
    return CheckpointScore(
        unit_key=line.unit_key, adapter=line.adapter, scope_id=line.scope_id,
        checkpoint=line.checkpoint, episodes_ingested=line.episodes_ingested, items=items,
        bytes=size, facts=len(facts), facts_held=sum(held), false_items=invented[:20],
        updates=kinds, extraction_recall=_ratio(sum(held), len(facts)),
        false_memory_rate=_ratio(len(invented), items),
        update_current=_ratio(kinds.count("current"), len(kinds)),
        items_per_episode=_ratio(items, line.episodes_ingested),
        bytes_per_episode=_ratio(size, line.episodes_ingested))


def _figure(rows: Sequence[CheckpointScore], metric: str) -> ArmFigure:
    pairs = [(v, r.scope_id) for r in rows if (v := getattr(r, metric)) is not None]
    if not pairs:
        return ArmFigure(mean=None, low=None, high=None, n=0, scopes=0)
    est = clustered_estimate([v for v, _ in pairs], [s for _, s in pairs])
    return ArmFigure(mean=est.mean, low=est.low, high=est.high, n=est.n, scopes=est.clusters)


def _checkpoint_scores(run_dir: Path, dataset: Dataset) -> list[CheckpointScore]:
    """Every recorded listing of a scope the dataset has, scored, by unit and checkpoint."""
    known = {s.scope_id for s in dataset.scopes}
    # One scope at a time, whole (read from disk for an outline), with a reader of its own:
    # the reader remembers items and records by their text, and a unit's listings, and the
    # units of a scope, come together.
    rows: list[CheckpointScore] = []
    scope: Scope | None = None
    reader = FactReader()
    for unit in listings_by_unit(run_dir):
        for (_, _), line in sorted(unit.items()):
            if line.scope_id not in known:
                continue
            if scope is None or scope.scope_id != line.scope_id:
                scope, reader = dataset.full_scope(line.scope_id), FactReader()
            rows.append(score_checkpoint(line, scope, dataset, reader))
    rows.sort(key=lambda r: (r.unit_key, r.checkpoint))
    return rows


def score_write_side(run_dir: Path, dataset: Dataset, arms: Sequence[str]) -> WriteSide:
    """Every recorded listing of the run scored against the dataset, and each arm's figures."""
    rows = _checkpoint_scores(run_dir, dataset)
    listed = {r.adapter for r in rows}
    out = WriteSide(checkpoints=rows, unlisted=[a for a in arms if a not in listed])
    for arm in [a for a in arms if a in listed] + sorted(listed - set(arms)):
        mine = [r for r in rows if r.adapter == arm]
        out.arms[arm] = {m: _figure(mine, m) for m in METRICS}
        out.update_kinds[arm] = _update_counts(mine)
    return out


def _update_counts(rows: Sequence[CheckpointScore]) -> dict[str, int]:
    """How many of an arm's updates its listings hold in each way."""
    return {k: sum(r.updates.count(k) for r in rows)
            for k in ("current", "both", "stale", "neither")}


def write_write_side(run_dir: Path, dataset: Dataset, arms: Sequence[str]) -> WriteSide | None:
    """Score and write ``RUN_DIR/write_side.json``; nothing when no unit recorded a listing."""
    if not (run_dir / "memory").is_dir():
        return None
    result = score_write_side(run_dir, dataset, arms)
    atomic_write_text(run_dir / FILE, result.model_dump_json(indent=1))
    return result


def read_write_side(run_dir: Path) -> WriteSide | None:
    path = run_dir / FILE
    if not path.is_file():
        return None
    try:
        return WriteSide.model_validate(loads_guarded(path.read_bytes(), what=str(path)))
    except (JsonRefused, ValueError):
        return None
