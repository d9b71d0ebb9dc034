"""What the memory wrote, scored at every checkpoint from its listing and the dataset.

For each unit and checkpoint whose listing was recorded (lens/runner/memory_states.py):

- ``extraction_recall``: of the key facts stated so far (those of the scope's questions asked
  at or before this checkpoint), the share some single item holds, by lens's fact matcher;
- ``false_memory_rate``: of the items, the share that state a figure no episode ingested so far
  states (a figure the memory made up or garbled);
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

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from lens.data.datagen.updates import Update, updates_of
from lens.data.dataset import Dataset, Scope
from lens.data.ground_truth_text import fact_subject
from lens.memory.listing import MemoryListing, listing_bytes
from lens.runner.memory_states import ListingLine, load_listings
from lens.runs.store import atomic_write_text
from lens.scoring.text.facts import AnswerText, fact_subjects, match_fact
from lens.scoring.text.lexicon import content_stems, fold, normalise
from lens.scoring.text.numbers import extract_numbers, numbers_match
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


def _line_holds(subject: str, value: str, line: str) -> bool:
    """Whether one line of a record puts the fact's value beside at least half of its subject's
    words ("- notifications: p99 215 ms" for "notifications p99 latency: 215 ms")."""
    if _TOKEN_VALUE.match(value):
        if fold(value) not in fold(line):
            return False
    else:
        wanted = extract_numbers(value, words=False)
        said = extract_numbers(line, words=False)
        if not wanted or not all(any(numbers_match(w, n, FIGURE_TOL) for n in said)
                                 for w in wanted):
            return False
    words = set(content_stems(normalise(subject)))
    present = words & set(content_stems(normalise(line)))
    return bool(words) and 2 * len(present) >= len(words)


def item_holds(fact: str, text: AnswerText, raw: str, rivals: Sequence[str]) -> bool:
    """Whether one item states ``fact``: lens's fact matcher on the item, or, for a fact in
    subject form, one line of it giving the value beside the subject (records list figures
    under short labels that an answer would spell out)."""
    if match_fact(fact, text, rivals=rivals).matched:
        return True
    subject, value = fact_subject(fact)
    if not subject or not value:
        return False
    return any(_line_holds(subject, value, line) for line in raw.splitlines())


def held_facts(facts: Sequence[str], listing: MemoryListing) -> list[bool]:
    """For each fact, whether one item of the listing states it (:func:`item_holds`)."""
    items = [(AnswerText(i.text), i.text) for i in listing.items if i.text.strip()]
    rivals = fact_subjects(facts)
    return [any(item_holds(f, t, raw, rivals) for t, raw in items) for f in facts]


def false_items(listing: MemoryListing, episodes_text: str) -> list[str]:
    """The items stating a figure (not a date or an id) that no ingested episode states."""
    said = extract_numbers(episodes_text, words=False)
    out = []
    for item in listing.items:
        for n in extract_numbers(item.text, words=False):
            if not any(numbers_match(n, s, FIGURE_TOL) for s in said):
                out.append(item.item_id)
                break
    return out


def _states(text: str, figure: str) -> bool:
    wanted = extract_numbers(figure, words=False)
    said = extract_numbers(text, words=False)
    return bool(wanted) and all(any(numbers_match(w, n, FIGURE_TOL) for n in said)
                                for w in wanted)


def update_kind(update: Update, listing: MemoryListing) -> UpdateKind:
    """How the memory holds one superseded figure (see the module docstring)."""
    current = [_states(i.text, update.current) for i in listing.items]
    stale = [_states(i.text, update.stale) for i in listing.items]
    resolved = any(c and s for c, s in zip(current, stale, strict=True))
    stale_alone = any(s and not c for c, s in zip(current, stale, strict=True))
    if any(current):
        return "both" if stale_alone and not resolved else "current"
    return "stale" if any(stale) else "neither"


def _ratio(a: float, b: int) -> float | None:
    return a / b if b else None


def score_checkpoint(line: ListingLine, scope: Scope, dataset: Dataset) -> CheckpointScore:
    episodes = scope.ordered_episodes()[:line.episodes_ingested]
    facts = facts_so_far(dataset, scope.scope_id, line.checkpoint)
    held = held_facts(facts, line.listing) if facts else []
    invented = false_items(line.listing, "\n".join(e.text for e in episodes))
    kinds = [update_kind(u, line.listing) for u in updates_of(scope)
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


def score_write_side(run_dir: Path, dataset: Dataset, arms: Sequence[str]) -> WriteSide:
    """Every recorded listing of the run scored against the dataset, and each arm's figures."""
    scopes = {s.scope_id: s for s in dataset.scopes}
    rows = [score_checkpoint(line, scopes[line.scope_id], dataset)
            for (_, _), line in sorted(load_listings(run_dir).items())
            if line.scope_id in scopes]
    listed = {r.adapter for r in rows}
    out = WriteSide(checkpoints=rows, unlisted=[a for a in arms if a not in listed])
    for arm in [a for a in arms if a in listed] + sorted(listed - set(arms)):
        mine = [r for r in rows if r.adapter == arm]
        out.arms[arm] = {m: _figure(mine, m) for m in METRICS}
        out.update_kinds[arm] = {k: sum(r.updates.count(k) for r in mine)
                                 for k in ("current", "both", "stale", "neither")}
    return out


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
        return WriteSide.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except ValueError:
        return None
