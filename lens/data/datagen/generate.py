"""Assemble generated scopes into a LENS dataset and write it byte-for-byte reproducibly.

Everything random comes from ``seeded_rng`` (sha256 of the seed and the scope's place), so one
seed gives the same file in every process and on every machine. A generated scope must pass the
strict checks; if an unlucky draw makes one episode hold too many of a question's facts, the
scope is drawn again under the next attempt number (deterministically) before giving up.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from lens.core.errors import UserError
from lens.data.datagen.checks import strict_problems
from lens.data.datagen.domains import DOMAINS
from lens.data.datagen.questions import PLANS, Layout, QuestionBuilder, to_question
from lens.data.datagen.rendering import Style, render_other, render_signal, render_summary
from lens.data.datagen.storyline import MIN_SIGNAL, build_storyline, seeded_rng
from lens.data.dataset import Dataset
from lens.data.dataset_check import validate_raw
from lens.data.importers.records import DatasetJson, EpisodeJson, QuestionJson, ScopeJson

GENERATOR_VERSION = "1"
MAX_ATTEMPTS = 25


@dataclass(frozen=True)
class ScopeSpec:
    domain: str
    seed: int
    index: int = 0
    episodes: int = 120
    signal_episodes: int = 40
    style: str = "full"
    plan: str = "standard"

    @property
    def scope_id(self) -> str:
        return f"{self.domain}_s{self.seed}_{self.index + 1:02d}"

    def check(self) -> None:
        if self.domain not in DOMAINS:
            raise UserError(f"unknown domain {self.domain!r}; choose from {sorted(DOMAINS)}")
        if self.signal_episodes < MIN_SIGNAL:
            raise UserError(f"--signal-episodes must be at least {MIN_SIGNAL} (got "
                            f"{self.signal_episodes}): the storyline needs that many periods")
        if self.episodes < self.signal_episodes + 1:
            raise UserError(f"--episodes ({self.episodes}) must exceed --signal-episodes "
                            f"({self.signal_episodes}): at least one distractor is needed")
        if self.plan not in PLANS:
            raise UserError(f"unknown question plan {self.plan!r}; choose from {list(PLANS)}")
        if self.style not in ("full", "short"):
            raise UserError(f"unknown style {self.style!r}; choose 'full' or 'short'")


def _slots(spec: ScopeSpec, summary_day: int, rng: Any) -> list[int]:
    """How many non-signal episodes each period gets (the summary takes one of them)."""
    n, extra = spec.signal_episodes, spec.episodes - spec.signal_episodes
    counts = [extra // n] * n
    for day in rng.sample(range(n), extra % n):
        counts[day] += 1
    if counts[summary_day] == 0:
        donor = max(range(n), key=lambda i: (counts[i], -i))
        counts[donor] -= 1
        counts[summary_day] += 1
    return counts


def build_scope(spec: ScopeSpec, attempt: int = 0) -> tuple[ScopeJson, list[QuestionJson]]:
    """One scope and its questions as LENS JSON objects."""
    spec.check()
    root = ("lens.datagen", GENERATOR_VERSION, spec.domain, spec.seed, spec.index, attempt)
    cast = DOMAINS[spec.domain](seeded_rng(*root, "cast"))
    story = build_storyline(cast, spec.signal_episodes, seeded_rng(*root, "storyline"))
    style = Style.named(spec.style)
    text_rng = seeded_rng(*root, "text")
    counts = _slots(spec, story.summary_day, seeded_rng(*root, "slots"))
    sid = spec.scope_id

    episodes: list[EpisodeJson] = []
    signal_ids: list[str] = []
    summary_id = ""
    period_end: list[int] = []
    for day in range(spec.signal_episodes):
        date = story.dates[day]
        items: list[tuple[Any, str, str]] = []
        sig_time = date + timedelta(hours=8, minutes=text_rng.randint(0, 45))
        items.append((sig_time, "signal", render_signal(story, day, text_rng, style)))
        hours = sorted(text_rng.sample(range(10 * 60, 19 * 60), counts[day]))
        summary_at = len(hours) - 1 if day == story.summary_day else -1
        for k, minute in enumerate(hours):
            ts = date + timedelta(minutes=minute)
            if k == summary_at:
                items.append((ts, "summary", render_summary(story, text_rng)))
            else:
                unit = text_rng.choice(cast.others)
                items.append((ts, "distractor", render_other(story, unit, day, text_rng, style)))
        for ts, kind, text in items:
            eid = f"{sid}_e{len(episodes) + 1:03d}"
            if kind == "signal":
                signal_ids.append(eid)
            elif kind == "summary":
                summary_id = eid
            episodes.append({"episode_id": eid, "scope_id": sid,
                             "timestamp": ts.strftime("%Y-%m-%dT%H:%M:%S"), "text": text,
                             "meta": {"episode_type": kind, "period": day}})
        period_end.append(len(episodes))

    layout = Layout(signal_ids=signal_ids, summary_id=summary_id, period_end=period_end)
    builder = QuestionBuilder(story, layout, seeded_rng(*root, "questions"))
    drafts = builder.plan(spec.plan)
    questions = [to_question(d, sid, i + 1, layout) for i, d in enumerate(drafts)]
    d = story.days
    scope: ScopeJson = {
        "scope_id": sid,
        "episodes": episodes,
        "meta": {
            "domain": spec.domain,
            "generator": {"version": GENERATOR_VERSION, "seed": spec.seed, "index": spec.index,
                          "attempt": attempt},
            "storyline": {
                "target": cast.subject, "onset": cast.onset_id, "red_herring": cast.herring_id,
                "threshold": cast.primary.fmt(cast.threshold),
                "periods": {"onset": d.onset, "misreported": d.wrong, "corrected": d.corrected,
                            "peer_spike": d.spike, "red_herring": d.herring,
                            "breach": d.breach},
            },
        },
    }
    return scope, questions


def _assemble(scopes: list[ScopeJson], questions: list[QuestionJson],
              dataset_id: str, meta: dict[str, Any]) -> DatasetJson:
    return {"version": "0.1.0", "dataset_id": dataset_id, "scopes": scopes,
            "questions": questions, "meta": meta}


def generate_scope(spec: ScopeSpec) -> tuple[ScopeJson, list[QuestionJson]]:
    """A scope that passes validation and the strict checks."""
    last: list[str] = []
    for attempt in range(MAX_ATTEMPTS):
        scope, questions = build_scope(spec, attempt)
        raw = _assemble([scope], questions, spec.scope_id, {})
        ds, problems = validate_raw(raw, spec.scope_id)
        if ds is not None and not problems:
            problems = strict_problems(ds, spec.scope_id)
        if not problems:
            return scope, questions
        last = [str(p) for p in problems]
    raise RuntimeError(f"scope {spec.scope_id}: no draw passed the strict checks in "
                       f"{MAX_ATTEMPTS} attempts; last problems: {last[:5]}")


def generate_dataset(specs: list[ScopeSpec], dataset_id: str) -> DatasetJson:
    scopes: list[ScopeJson] = []
    questions: list[QuestionJson] = []
    for spec in specs:
        scope, qs = generate_scope(spec)
        scopes.append(scope)
        questions.extend(qs)
    meta = {"generator": {"name": "lens.datagen", "version": GENERATOR_VERSION,
                          "scopes": [{"domain": s.domain, "seed": s.seed, "index": s.index,
                                      "episodes": s.episodes,
                                      "signal_episodes": s.signal_episodes,
                                      "style": s.style, "plan": s.plan} for s in specs]}}
    return _assemble(scopes, questions, dataset_id, meta)


def dumps(data: Mapping[str, object]) -> str:
    """The canonical file text: stable key order, UTF-8, one trailing newline."""
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


def write_dataset(data: DatasetJson, out: Path) -> Dataset:
    """Validate and write atomically (nothing half-written on failure)."""
    ds, problems = validate_raw(data, str(out))
    if ds is None or problems:
        raise RuntimeError(f"generated data failed validation: {[str(p) for p in problems[:5]]}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(dumps(data), encoding="utf-8")
    tmp.replace(out)
    return ds
