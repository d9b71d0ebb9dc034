"""Episode texts: the main report of each period, distractor reports and the stale summary.

Texts read like the real thing (tables of figures, names, times, routine notes) and state the
storyline's figures exactly as key facts write them (``Metric.fmt``), so a fact can be found in
its evidence. A signal report never comments on the trend: the pattern is only visible across
periods.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from lens.data.datagen.domains import Cast, OtherUnit, Peer
from lens.data.datagen.storyline import Storyline


@dataclass(frozen=True)
class Style:
    """How much a report says: ``full`` for the standard data, ``short`` for small models."""

    peers: int
    notes: int
    extras: bool

    @classmethod
    def named(cls, name: str) -> Style:
        if name == "short":
            return cls(peers=2, notes=1, extras=False)
        return cls(peers=99, notes=6, extras=True)


def _wobble(rng: random.Random, peer: Peer) -> float:
    return round(peer.base * (1 + rng.uniform(-peer.spread, peer.spread)), peer.metric.decimals)


def _ops_rows(story: Storyline, d: int, rng: random.Random, style: Style) -> list[str]:
    c = story.cast
    rows = [(c.target, story.reported[d])]
    rows += [(p.name, story.peers[i][d]) for i, p in enumerate(c.peers)][: style.peers]
    rng.shuffle(rows)
    out = ["### Dependencies"]
    for name, val in rows:
        extra = ""
        if style.extras:
            extra = (f" | p50 {max(1, round(val * rng.uniform(0.3, 0.45)))} ms | errors "
                     f"{rng.uniform(0.02, 0.3):.2f}% | success {100 - rng.uniform(0.02, 0.3):.2f}%")
        out.append(f"- {name}: p99 {c.primary.fmt(val)}{extra}")
    out.append(f"- {c.threshold_name}: {c.primary.fmt(c.threshold)}")
    out.append("### Callers")
    out.append(f"- {c.secondary_subject}: {c.secondary.fmt(story.secondary[d])}")
    out.append(f"- {c.volume_subject}: {c.volume.fmt(story.volume[d])}")
    return out


def _clinical_rows(story: Storyline, d: int, rng: random.Random, style: Style) -> list[str]:
    c = story.cast
    out = ["### Bloods (morning draw)",
           f"- {c.primary.label}: {c.primary.fmt(story.reported[d])} "
           f"({c.threshold_name} {c.primary.fmt(c.threshold)})",
           f"- {c.secondary.label}: {c.secondary.fmt(story.secondary[d])}"]
    for i, p in enumerate(c.peers[: style.peers]):
        out.append(f"- {p.name}: {p.metric.fmt(story.peers[i][d])}")
    out.append("### Obs and balance")
    if style.extras:
        out.append(f"- BP {rng.randint(112, 146)}/{rng.randint(64, 88)}, HR "
                   f"{rng.randint(62, 94)}, temp {rng.uniform(36.3, 37.4):.1f} C")
    out.append(f"- {c.volume.label}: {c.volume.fmt(story.volume[d])}")
    return out


def _finance_rows(story: Storyline, d: int, rng: random.Random, style: Style) -> list[str]:
    c = story.cast
    rows = [f"- {c.target}: {c.primary.fmt(story.reported[d])} in the trailing 30 days | "
            f"{c.secondary.label} {c.secondary.fmt(story.secondary[d])}"]
    for i, p in enumerate(c.peers[: style.peers]):
        rows.append(f"- {p.name}: {p.metric.fmt(story.peers[i][d])} {p.metric.label}")
    rng.shuffle(rows)
    out = ["### Vendor activity", *rows,
           f"- {c.threshold_name}: {c.primary.fmt(c.threshold)} in 30 days",
           "### Batch", f"- {c.volume.label}: {c.volume.fmt(story.volume[d])}"]
    if style.extras:
        out.append(f"- exceptions: {rng.randint(2, 14)} | on hold: {rng.randint(0, 6)}")
    return out


def _support_rows(story: Storyline, d: int, rng: random.Random, style: Style) -> list[str]:
    c = story.cast
    rows = [f"- {c.primary.label}: {c.primary.fmt(story.reported[d])}"]
    rows += [f"- {p.name}: {p.metric.fmt(story.peers[i][d])}"
             for i, p in enumerate(c.peers[: style.peers])]
    rng.shuffle(rows)
    out = ["### Tickets by tag", *rows,
           f"- {c.threshold_name}: {c.primary.fmt(c.threshold)} a day per tag",
           "### Queue",
           f"- {c.secondary.label}: {c.secondary.fmt(story.secondary[d])}",
           f"- {c.volume.label}: {c.volume.fmt(story.volume[d])}"]
    if style.extras:
        out.append(f"- CSAT: {rng.uniform(84, 93):.1f}%")
    return out


_ROWS: dict[str, Callable[[Storyline, int, random.Random, Style], list[str]]] = {
    "ops": _ops_rows,
    "clinical": _clinical_rows,
    "finance": _finance_rows,
    "support": _support_rows,
}


_OPENERS = [
    "Routine period; scheduled work completed as planned.",
    "No incidents opened during the period; figures are from the automated export.",
    "Figures below come from the automated export and were spot-checked by the author.",
    "Quiet period overall; see the notes for the few items worth knowing.",
    "All scheduled checks ran; nothing needed escalation beyond the usual follow-ups.",
    "Numbers are final for the period unless a correction is issued in a later report.",
]


_NARRATIVE = [
    "{a} walked through the open items with {b}; nothing was left without an owner.",
    "The morning check-in started at {t} and ran its usual fifteen minutes.",
    "{a} asked for the export format to stay unchanged until the quarterly review.",
    "Two follow-ups from the previous period were closed by {b} before noon.",
    "{a} confirmed the schedule for the next period with the wider team.",
    "Access to the shared dashboards was re-granted to {b} after the permissions sync.",
    "{b} reviewed the notes of the previous report and had nothing to add.",
    "The weekly sync with the neighbouring teams moved to {t} on Thursdays.",
    "{a} filed the period's figures in the shared folder as usual.",
    "A reminder went out about the holiday cover rota; {b} will collate replies.",
]


def _narrative(c: Cast, rng: random.Random, k: int) -> list[str]:
    out = []
    for template in rng.sample(_NARRATIVE, k):
        a, b = rng.sample(list(c.staff), 2)
        out.append(template.format(a=a, b=b, t=f"{rng.randint(8, 11)}:{rng.choice(['00', '30'])}"))
    return out


def render_signal(story: Storyline, d: int, rng: random.Random, style: Style) -> str:
    c, days = story.cast, story.days
    who = rng.choice(c.staff)
    lines = [f"## {c.org}: {c.report}, {story.date(d)}",
             f"Prepared by {who} at {rng.randint(7, 9):02d}:{rng.randint(0, 59):02d}."]
    if style.extras:
        lines.append(rng.choice(_OPENERS))
    lines.append("")
    lines += _ROWS[c.domain](story, d, rng, style)
    changes: list[str] = []
    if d == days.onset:
        changes.append(f"{c.onset_id}: {c.onset_text}.")
    if d == days.herring:
        changes.append(f"{c.herring_id}: {c.herring_text}.")
    if d == days.corrected:
        changes.append(f"Correction to the {story.date(days.wrong)} report: {c.subject} was "
                       f"{story.p(days.wrong)}, not {c.primary.fmt(story.wrong_value)} "
                       f"({c.correction_reason}).")
    lines += ["", "### Changes and notes"]
    lines += [f"- {x}" for x in changes]
    lines += [f"- {x}" for x in rng.sample(c.notes, style.notes)]
    if style.extras:
        lines += ["", " ".join(_narrative(c, rng, 4)), "", _handover(c, rng)]
    return "\n".join(lines)


def _handover(c: Cast, rng: random.Random) -> str:
    esc, open_items = rng.randint(0, 3), rng.randint(1, 9)
    return (f"Handover: {rng.choice(c.staff)} to {rng.choice(c.staff)} at "
            f"{rng.randint(16, 19)}:{rng.choice(['00', '15', '30', '45'])}; {esc} "
            f"escalation{'s' if esc != 1 else ''}, {open_items} follow-up"
            f"{'s' if open_items != 1 else ''} open. Nothing else to flag for the next shift.")


def render_other(story: Storyline, unit: OtherUnit, d: int, rng: random.Random,
                 style: Style) -> str:
    """A distractor: another entity's report on the same day, with its own harmless noise."""
    c = story.cast
    lines = [f"## {unit.name}: {c.report}, {story.date(d)}",
             f"Prepared by {rng.choice(c.staff)}."]
    if style.extras:
        lines.append(rng.choice(_OPENERS))
    lines.append("")
    blip = rng.random() < 0.2
    for i, p in enumerate(unit.peers[: max(2, style.peers)]):
        value = _wobble(rng, p)
        if blip and i == 0:
            value = round(p.base * rng.uniform(1.3, 1.6), p.metric.decimals)
        shown = "" if p.name == p.metric.label else f"{p.metric.label} "
        lines.append(f"- {p.name}: {shown}{p.metric.fmt(value)}")
    lines += ["", "### Notes"]
    if blip:
        first = unit.peers[0]
        label = first.name if first.name == first.metric.label else \
            f"{first.name} {first.metric.label}"
        lines.append(f"- {label} briefly high; expected to settle by the next report.")
    pool = list(dict.fromkeys([*unit.notes, *c.notes]))
    lines += [f"- {x}" for x in rng.sample(pool, min(len(pool), style.notes))]
    if style.extras:
        lines += ["", "### Follow-ups"]
        lines += [f"- {x.format(a=rng.choice(c.staff))}" for x in rng.sample(_FOLLOW_UPS, 3)]
        lines += ["", " ".join(_narrative(c, rng, 4)), "", _handover(c, rng)]
    return "\n".join(lines)


_FOLLOW_UPS = [
    "{a} to confirm the figures with the source system before the month-end close.",
    "{a} to update the runbook section on the export job.",
    "{a} to check whether the blip repeats at the same hour tomorrow.",
    "Review of the alert thresholds scheduled with {a} for next week.",
    "{a} to circulate the notes to the wider team.",
    "{a} to close the two stale tickets from last month.",
    "Archive of last quarter's reports handed to {a}.",
]


def render_summary(story: Storyline, rng: random.Random) -> str:
    """A summary published late but built from an old snapshot: stale figures."""
    c, old = story.cast, story.stale_day
    return "\n".join([
        f"## {c.org}: monthly summary (prepared {story.date(story.summary_day)})",
        f"Compiled by {rng.choice(c.staff)} from the data snapshot of {story.date(old)}.",
        "",
        f"- {c.subject}: {story.p(old)}, within {c.threshold_text}",
        f"- {c.secondary_subject}: {story.s(old)}",
        f"- {c.volume_subject}: {story.v(old)}",
        "- No open risks recorded for the period.",
    ])
