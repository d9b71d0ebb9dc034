"""What a sequential look reads: the questions committed since the last look, scored once.

A look needs the per-question scores of the blocks finished so far. A finished block's records
no longer change, so the blocks finished at earlier looks keep the rows they were scored to
then. Each look reads the run's events from where the last look stopped (whole lines only: an
event another task is writing is read at the next look), keeps the commits of the blocks still
running, and scores only the blocks finished since, in a folder of their own (the manifest, the
units' start events and those blocks' commits, links to the record files), against the run's
dataset as the runner holds it rather than the file loaded again. A look's cost follows what
is new, not the size of the run.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lens.data.dataset import Dataset
from lens.runs.store import EVENTS, MANIFEST
from lens.scoring.foundations.types import QuestionScores, RunScores
from lens.scoring.plan import ScoringPlan
from lens.scoring.scorer import score


@dataclass
class LookReader:
    """The run's committed questions, read and scored a finished block at a time."""

    root: Path
    # The run's dataset as the runner holds it (None: each look loads the file).
    dataset: Dataset | None = None
    # How far the events were read, in bytes.
    _offset: int = 0
    # Each unit's start event (its adapter's capabilities), and the scope it works on.
    _units: dict[str, bytes] = field(default_factory=dict)
    _unit_scope: dict[str, str] = field(default_factory=dict)
    # The commit events of blocks not yet scored: block -> question key -> its latest commit.
    _pending: dict[str, dict[str, bytes]] = field(default_factory=dict)
    # The rows of the blocks scored, by block.
    _rows: dict[str, list[QuestionScores]] = field(default_factory=dict)
    _last: RunScores | None = None
    # How many questions the last call scored (the blocks finished since the call before).
    scored: int = 0

    def _read_new(self) -> None:
        with open(self.root / EVENTS, "rb") as fh:
            fh.seek(self._offset)
            data = fh.read()
        end = data.rfind(b"\n") + 1
        self._offset += end
        for raw in data[:end].splitlines(keepends=True):
            try:
                event = json.loads(raw)
            except (json.JSONDecodeError, RecursionError):
                continue  # skipped as the run store skips it
            kind = event.get("kind")
            if kind == "unit_started":
                self._units[event["key"]] = raw
                self._unit_scope[event["key"]] = str(event.get("scope_id"))
            elif kind == "question_done":
                scope = self._unit_scope.get(str(event.get("unit")))
                if scope is not None:
                    block = self._pending.setdefault(scope, {})
                    # Re-inserting keeps the newest commit last, as the store reads them.
                    block.pop(event["key"], None)
                    block[event["key"]] = raw

    async def scores(self, done: Sequence[str], plan: ScoringPlan) -> RunScores:
        """The scores of every question of the blocks ``done``, under ``plan``: the blocks
        finished since the last call scored now, the others as they were scored then."""
        self._read_new()
        new = [b for b in done if b not in self._rows]
        self.scored = 0
        if new or self._last is None:
            scored = await self._score(new, plan)
            for block in new:
                self._rows[block] = []
                self._pending.pop(block, None)
            for row in scored.questions:
                self._rows.setdefault(row.scope_id, []).append(row)
            self._last = scored
            self.scored = len(scored.questions)
        rows = [row for block in done for row in self._rows.get(block, [])]
        return self._last.model_copy(update={"questions": rows})

    async def _score(self, blocks: Sequence[str], plan: ScoringPlan) -> RunScores:
        wanted = set(blocks)
        with tempfile.TemporaryDirectory(prefix="lens-look-") as tmp:
            into = Path(tmp)
            shutil.copyfile(self.root / MANIFEST, into / MANIFEST)
            lines = [raw for unit, raw in self._units.items()
                     if self._unit_scope[unit] in wanted]
            lines += [raw for block in blocks for raw in self._pending.get(block, {}).values()]
            (into / EVENTS).write_bytes(b"".join(lines))
            for records in self.root.glob("*.jsonl"):
                if records.name != EVENTS:
                    (into / records.name).symlink_to(records.resolve())
            dataset = (self.dataset.select_scopes(list(blocks)) if self.dataset is not None
                       else None)
            return (await score(into, plan, dataset=dataset)).scores
