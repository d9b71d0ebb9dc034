"""The hidden storyline of one scope: what happens, day by day, in numbers.

Each signal episode is one reporting period ("day") of the scope's main report. Before the
*onset* change the target's figure is noise around its baseline; from the onset it climbs a
little each period, crossing the threshold at *breach*; a secondary figure moves with it. Each
period on its own looks routine: the pattern exists only across periods. Around it sit a
red-herring change that does nothing, a peer's one-off spike, a misreported figure corrected two
periods later, a stale summary, and distractor episodes about other entities.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from lens.data.datagen.domains import Cast

MIN_SIGNAL = 14


def seeded_rng(*parts: object) -> random.Random:
    """An RNG seeded from sha256 of the parts: the same on every process and machine."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


@dataclass(frozen=True)
class Days:
    """The storyline's event days (indices of signal periods)."""

    onset: int
    wrong: int  # the period whose figure is misreported
    corrected: int  # the period whose report carries the correction
    spike: int  # a peer's one-off spike
    herring: int  # the red-herring change
    breach: int  # first period above the threshold
    early: int
    mid: int
    late: int
    final: int

    @classmethod
    def plan(cls, n_signal: int) -> Days:
        if n_signal < MIN_SIGNAL:
            raise ValueError(f"a storyline needs at least {MIN_SIGNAL} signal episodes")
        onset = max(3, round(0.25 * n_signal))
        breach = max(round(0.7 * n_signal), onset + 7)
        if breach + 2 > n_signal - 1:
            raise ValueError(f"{n_signal} signal episodes leave no room after the breach")
        wrong = onset + 2
        return cls(onset=onset, wrong=wrong, corrected=wrong + 2, spike=wrong + 2,
                   herring=wrong + 3, breach=breach, early=onset + 1, mid=breach - 1,
                   late=breach + 1, final=n_signal - 1)


@dataclass
class Storyline:
    cast: Cast
    n_signal: int
    days: Days
    dates: list[datetime]  # one per signal period (the report's date)
    primary: list[float]  # the true figure per period
    secondary: list[float]
    volume: list[float]
    peers: list[list[float]]  # per peer, per period
    spike_peer: int
    wrong_value: float
    summary_day: int  # the period after which the stale summary is published
    stale_day: int  # the period the stale summary's figure comes from
    reported: list[float] = field(default_factory=list)  # as first reported (one is wrong)

    def date(self, day: int) -> str:
        return self.dates[day].strftime("%Y-%m-%d")

    def p(self, day: int) -> str:
        return self.cast.primary.fmt(self.primary[day])

    def s(self, day: int) -> str:
        return self.cast.secondary.fmt(self.secondary[day])

    def v(self, day: int) -> str:
        return self.cast.volume.fmt(self.volume[day])


def _round(value: float, decimals: int) -> float:
    return round(value, decimals)


def build_storyline(cast: Cast, n_signal: int, rng: random.Random) -> Storyline:
    days = Days.plan(n_signal)
    m = cast.primary
    step = m.step()
    start = datetime(2024, 1, 8, tzinfo=UTC) + timedelta(days=rng.randint(0, 300))
    dates = [start + timedelta(days=d * cast.cadence_days) for d in range(n_signal)]

    # Primary: noise under the baseline, then a steady climb that crosses the threshold exactly
    # at the breach period and never falls back below it.
    base, thr = cast.primary_base, cast.threshold
    top = thr * rng.uniform(1.25, 1.45)
    primary: list[float] = []
    for d in range(n_signal):
        if d < days.onset:
            v = base * (1 + rng.uniform(-0.04, 0.04))
        else:
            frac = (d - days.onset + 1) / (days.breach - days.onset + 1)
            target = base + (thr * 1.04 - base) * frac if d <= days.breach else (
                thr * 1.04 + (top - thr * 1.04) * (d - days.breach) / max(1, n_signal - 1 -
                                                                          days.breach))
            v = target * (1 + rng.uniform(-0.012, 0.012))
        primary.append(_round(v, m.decimals))
    for d in range(days.onset, n_signal):
        if d > days.onset:
            primary[d] = max(primary[d], primary[d - 1])  # the climb never reverses
        # A clear gap either side of the threshold, so a figure near it is never mistaken for
        # the threshold itself by a tolerant reader.
        if d < days.breach:
            primary[d] = min(primary[d], _round(thr * 0.965, m.decimals))
        else:
            primary[d] = max(primary[d], _round(thr * 1.035 + step, m.decimals))
    # Secondary moves with the primary after onset (up or down, toward its end value).
    sec: list[float] = []
    s0, s1 = cast.secondary_base, cast.secondary_end
    for d in range(n_signal):
        if d < days.onset:
            v = s0 * (1 + rng.uniform(-0.05, 0.05))
        else:
            frac = (d - days.onset + 1) / (n_signal - days.onset)
            v = (s0 + (s1 - s0) * frac) * (1 + rng.uniform(-0.02, 0.02))
        sec.append(_round(v, cast.secondary.decimals))
    volume = [_round(cast.volume_base * (1 + rng.uniform(-0.03, 0.03)), cast.volume.decimals)
              for _ in range(n_signal)]
    peers = [[_round(p.base * (1 + rng.uniform(-p.spread, p.spread)), p.metric.decimals)
              for _ in range(n_signal)] for p in cast.peers]
    spike_peer = rng.randrange(len(cast.peers))
    peers[spike_peer][days.spike] = _round(cast.peers[spike_peer].base * rng.uniform(2.4, 3.0),
                                           cast.peers[spike_peer].metric.decimals)
    wrong_value = _round(thr * rng.uniform(1.5, 1.7), m.decimals)
    reported = list(primary)
    reported[days.wrong] = wrong_value
    summary_day = min(n_signal - 2, days.late + 2)
    return Storyline(cast=cast, n_signal=n_signal, days=days, dates=dates, primary=primary,
                     secondary=sec, volume=volume, peers=peers, spike_peer=spike_peer,
                     wrong_value=wrong_value, summary_day=summary_day,
                     stale_day=max(0, days.onset - 2), reported=reported)
