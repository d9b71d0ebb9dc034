"""Which figure a later episode superseded, read from a generated scope.

A generated scope's storyline misreports the target's figure in one period and corrects it two
periods later (lens/data/datagen/storyline.py): the scope's meta names both periods
(``storyline.periods.misreported`` / ``corrected``), each signal episode its ``period``, and the
correcting episode states both figures in the generator's fixed wording ("Correction to the DATE
report: SUBJECT was CURRENT, not STALE (...)"). From the correcting episode on, CURRENT is the
figure and STALE is superseded: the ground truth the write-side ``updates`` metric needs. A scope
of any other source (LoCoMo, LongMemEval, a hand-written file) has none, and the metric stays
unknown for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lens.data.dataset import Scope

_CORRECTION = re.compile(
    r"Correction to the (?P<date>\d{4}-\d{2}-\d{2}) report: (?P<subject>.+?) was "
    r"(?P<current>.+?), not (?P<stale>.+?) \(")


@dataclass(frozen=True)
class Update:
    """A figure superseded from the episode ``at`` (its index in stream order) on."""

    subject: str
    date: str
    current: str
    stale: str
    stale_episode: str
    correcting_episode: str
    at: int


def target_of(scope: Scope) -> str | None:
    """The figure a generated scope's storyline follows ("auth p99 latency"); None for a scope
    of any other source."""
    story = scope.meta.get("storyline")
    target = story.get("target") if isinstance(story, dict) else None
    return target if isinstance(target, str) and target.strip() else None


def _periods(scope: Scope) -> tuple[int, int] | None:
    story = scope.meta.get("storyline")
    periods = story.get("periods") if isinstance(story, dict) else None
    if not isinstance(periods, dict):
        return None
    wrong, corrected = periods.get("misreported"), periods.get("corrected")
    if not isinstance(wrong, int) or not isinstance(corrected, int):
        return None
    return wrong, corrected


def updates_of(scope: Scope) -> list[Update]:
    """The superseded figures of a generated scope (empty for any other scope)."""
    periods = _periods(scope)
    if periods is None:
        return []
    wrong, corrected = periods
    ordered = scope.ordered_episodes()
    signal = {e.meta.get("period"): (i, e) for i, e in enumerate(ordered)
              if e.meta.get("episode_type") == "signal"}
    if wrong not in signal or corrected not in signal:
        return []
    at, fixing = signal[corrected]
    found = _CORRECTION.search(fixing.text)
    if found is None:
        return []
    return [Update(subject=found["subject"], date=found["date"], current=found["current"],
                   stale=found["stale"], stale_episode=signal[wrong][1].episode_id,
                   correcting_episode=fixing.episode_id, at=at)]
