"""What the viewer knows of one run directory, kept current by reading only what was appended.

A run in flight appends to ``events.jsonl`` and ``records.jsonl``; the index remembers how far
it has read ``events.jsonl`` and, on each refresh, reads the complete lines after that offset
(a last line still being written is left for the next refresh). Each ``question_done`` event
names its record's bytes, which are read then and kept as a light row (ids, status, answer,
counts); the full record is read again from disk only for a drill-down. ``scores.json`` and
``manifest.json`` are re-read when their size or mtime changes.

The index only ever opens files for reading: the viewer never writes into a run and holds no
lock a run could wait on.
"""

from __future__ import annotations

import json
import math
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from lens.runs.records import QuestionRecord, question_key
from lens.runs.store import EVENTS, MANIFEST
from lens.scoring.metrics import report_order
from lens.scoring.types import RunScores

SCORES = "scores.json"
# Questions per second are measured over the question_done events of this last window.
RATE_WINDOW_S = 60.0


@dataclass(frozen=True)
class Row:
    """One committed question, light: what the list, the filters and the side by side need."""

    key: str
    unit: str
    adapter: str
    scope: str
    qid: str
    repeat: int
    checkpoint: int
    status: str
    question: str
    answer: str
    error: str
    tool_calls: int
    tool_errors: int
    tokens: int
    cost: float | None
    retries: int
    wall_s: float
    # Where the full record is: (file, offset, length); offset None for a file per record.
    where: tuple[str, int | None, int | None]
    haystack: str

    @property
    def match_key(self) -> tuple[str, str, int]:
        return (self.scope, self.qid, self.repeat)


@dataclass(frozen=True)
class Scored:
    question_type: str
    metrics: dict[str, float | None]
    detail: dict[str, Any]

    def metric(self, name: str) -> float | None:
        v = self.metrics.get(name)
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


@dataclass
class Progress:
    """The run as its events tell it: a fold over events.jsonl, in file order."""

    units_total: int | None = None
    questions_total: int | None = None
    already_done: int = 0
    units_started: set[str] = field(default_factory=set)
    units_done: set[str] = field(default_factory=set)
    unit_errors: dict[str, str] = field(default_factory=dict)
    statuses: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    first_ts: float | None = None
    last_ts: float | None = None
    last_question_ts: float | None = None
    recent: deque[float] = field(default_factory=deque)
    usage: dict[str, Any] = field(default_factory=dict)
    finished: dict[str, Any] | None = None
    scoring_done: bool = False
    events: int = 0

    def fold(self, e: dict[str, Any]) -> None:
        self.events += 1
        kind = e.get("kind")
        ts = _ts(e.get("ts"))
        if ts is not None:
            self.first_ts = ts if self.first_ts is None else self.first_ts
            self.last_ts = ts
        key = str(e.get("key", ""))
        if kind == "run_started":
            self.units_total = _int(e.get("units"))
            self.questions_total = _int(e.get("questions"))
            self.already_done = _int(e.get("already_done")) or 0
            self.finished = None
        elif kind == "unit_started":
            self.units_started.add(key)
        elif kind == "unit_done":
            self.units_done.add(key)
            # A unit that failed and then finished on a resume is whole again.
            self.unit_errors.pop(key, None)
        elif kind == "unit_error":
            self.unit_errors[key] = str(e.get("error", ""))
        elif kind == "question_done":
            self.statuses[key] = str(e.get("status", "answered"))
            self.tokens[key] = _int(e.get("tokens")) or 0
            if ts is not None:
                self.last_question_ts = ts
                self.recent.append(ts)
                while self.recent and self.recent[0] < ts - RATE_WINDOW_S:
                    self.recent.popleft()
        elif kind == "usage":
            self.usage = {k: v for k, v in e.items() if k not in ("seq", "ts", "kind", "key")}
        elif kind == "run_finished":
            self.finished = {k: v for k, v in e.items() if k not in ("seq", "kind", "key")}
        elif kind == "scoring_done":
            self.scoring_done = True

    def rate(self) -> float | None:
        """Questions per second over the last minute of question_done events."""
        if len(self.recent) < 2:
            return None
        span = self.recent[-1] - self.recent[0]
        return (len(self.recent) - 1) / span if span > 0 else None


def _ts(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def _int(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _first_user(transcript: list[dict[str, Any]]) -> str:
    for m in transcript:
        if isinstance(m, dict) and m.get("role") == "user":
            return str(m.get("content") or "")
    return ""


def _row(data: dict[str, Any], where: tuple[str, int | None, int | None]) -> Row:
    calls = [c for c in data.get("model_calls") or [] if isinstance(c, dict)]
    agent = [c for c in calls if c.get("role") == "agent"]
    tokens = sum(int(c.get("prompt_tokens") or 0) + int(c.get("completion_tokens") or 0)
                 for c in agent)
    if any(c.get("cost_usd") is None for c in agent):
        cost: float | None = None
    else:
        cost = float(sum(c.get("cost_usd") or 0.0 for c in agent))
    status = str(data.get("status", ""))
    if not agent and status == "error":
        cost = None
    question = _first_user(data.get("transcript") or [])
    answer = str(data.get("answer") or "")
    error = str(data.get("error") or "")
    ids = [str(data.get(k, "")) for k in ("adapter", "scope_id", "question_id")]
    unit = str(data.get("unit_key", ""))
    qid = str(data.get("question_id", ""))
    return Row(
        key=question_key(unit, qid), unit=unit, adapter=ids[0], scope=ids[1], qid=qid,
        repeat=int(data.get("repeat") or 0), checkpoint=int(data.get("checkpoint") or 0),
        status=status, question=question, answer=answer, error=error,
        tool_calls=len(data.get("tool_calls") or []), tool_errors=int(data.get("tool_errors") or 0),
        tokens=tokens, cost=cost, retries=sum(int(c.get("retries") or 0) for c in calls),
        wall_s=float(data.get("wall_s") or 0.0), where=where,
        haystack=" ".join([*ids, status, question, answer, error]).lower(),
    )


class _Tail:
    """A records file read once per refresh, from the first record asked for to its end: the
    records of one refresh's events are consecutive, so one read serves them all."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._start = -1
        self._data = b""

    def read(self, offset: int, length: int) -> bytes:
        if not (self._start >= 0 and self._start <= offset
                and offset + length <= self._start + len(self._data)):
            with open(self.path, "rb") as fh:
                fh.seek(offset)
                self._data = fh.read()
            self._start = offset
        return self._data[offset - self._start:offset - self._start + length]


class RunIndex:
    """The viewer's picture of one run directory; :meth:`refresh` brings it up to date."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.name = root.name
        self._lock = threading.Lock()
        self._reset()
        self._manifest_stat: tuple[int, int] | None = None
        self.manifest: dict[str, Any] = {}
        self._scores_stat: tuple[int, int] | None = None
        self.scores: dict[str, Scored] = {}
        self.scores_head: dict[str, Any] | None = None
        self._problems: dict[str, str] = {}

    def _reset(self) -> None:
        self._offset = 0
        self.progress = Progress()
        self.rows: dict[str, Row] = {}
        self._events_stat: tuple[int, int] | None = None

    # -- refresh ------------------------------------------------------------------------------
    def refresh(self) -> RunIndex:
        with self._lock:
            self._refresh_manifest()
            self._refresh_events()
            self._refresh_scores()
        return self

    def _refresh_manifest(self) -> None:
        path = self.root / MANIFEST
        st = _stat(path)
        if st == self._manifest_stat:
            return
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            # A manifest being replaced is replaced atomically; anything else is the run's
            # problem, shown on its page.
            self._problems[MANIFEST] = f"{path}: cannot be read ({exc})"
            return
        self._problems.pop(MANIFEST, None)
        self.manifest = data if isinstance(data, dict) else {}
        self._manifest_stat = st

    def _refresh_events(self) -> None:
        path = self.root / EVENTS
        st = _stat(path)
        if st is None or st == self._events_stat:
            return
        if st[0] < self._offset:
            # Cut by a resume (a torn last line removed): read it all again.
            self._reset()
        try:
            with open(path, "rb") as fh:
                fh.seek(self._offset)
                data = fh.read()
        except OSError:
            return
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next refresh
        files: dict[str, _Tail | None] = {}
        for raw in data[:end].splitlines():
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            self.progress.fold(event)
            if event.get("kind") == "question_done":
                self._take_record(event, files)
        self._offset += end
        self._events_stat = (self._offset, st[1]) if end == len(data) else None

    def _take_record(self, event: dict[str, Any], files: dict[str, Any]) -> None:
        name = str(event.get("record", ""))
        if name not in files:
            # Checked once per file and refresh, not once per question.
            path = self.root / name
            ok = bool(name) and ".." not in Path(name).parts and path.is_file()
            files[name] = _Tail(path) if ok else None
        tail = files[name]
        if tail is None:
            return
        offset, length = event.get("offset"), event.get("length")
        try:
            if offset is None:
                raw = tail.path.read_bytes()
                where: tuple[str, int | None, int | None] = (name, None, None)
            else:
                raw = tail.read(int(offset), int(length))
                if len(raw) < int(length):
                    return
                where = (name, int(offset), int(length))
            data = json.loads(raw)
        except (OSError, ValueError, TypeError):
            return
        if isinstance(data, dict):
            row = _row(data, where)
            self.rows.pop(row.key, None)  # the newest commit of a question wins, in its place
            self.rows[row.key] = row

    def _refresh_scores(self) -> None:
        path = self.root / SCORES
        st = _stat(path)
        if st == self._scores_stat:
            return
        self._scores_stat = st
        self.scores, self.scores_head = {}, None
        self._problems.pop(SCORES, None)
        if st is None:
            return
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            questions = data.pop("questions", [])
            self.scores_head = data
            for q in questions:
                self.scores[str(q["key"])] = Scored(
                    question_type=str(q.get("question_type", "unknown")),
                    metrics=dict(q.get("metrics") or {}), detail=dict(q.get("detail") or {}))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            # A half-replaced scores.json cannot be: it is written atomically. This is a
            # broken file, shown as such; the next change of the file is read again.
            self._problems[SCORES] = f"{path}: not a valid scores file ({exc})"
            self.scores, self.scores_head = {}, None

    @property
    def problems(self) -> list[str]:
        """What could not be read, to show on the run's page."""
        return list(self._problems.values())

    # -- questions ----------------------------------------------------------------------------
    def scored(self, key: str) -> Scored | None:
        return self.scores.get(key)

    def question_type(self, key: str) -> str:
        s = self.scores.get(key)
        return s.question_type if s else "unknown"

    def record(self, row: Row) -> QuestionRecord:
        """The full record of a question, read from its place in the run directory."""
        name, offset, length = row.where
        path = self.root / name
        if offset is None or length is None:
            raw = path.read_bytes()
        else:
            with open(path, "rb") as fh:
                fh.seek(offset)
                raw = fh.read(length)
        return QuestionRecord.model_validate_json(raw)

    def run_scores(self) -> RunScores | None:
        """The run-level part of scores.json (no questions): what a condition check needs."""
        if self.scores_head is None:
            return None
        try:
            return RunScores.model_validate({**self.scores_head, "questions": []})
        except ValueError:
            return None

    def metric_names(self) -> list[str]:
        names: set[str] = set()
        for s in self.scores.values():
            names.update(k for k, v in s.metrics.items() if v is not None)
        known = [m for m in report_order() if m in names]
        return known + sorted(names - set(known))

    def adapters(self) -> list[str]:
        cond = self.manifest.get("condition")
        out: list[str] = []
        if isinstance(cond, dict):
            for a in cond.get("adapters") or []:
                if isinstance(a, dict) and (a.get("label") or a.get("name")):
                    out.append(str(a.get("label") or a.get("name")))
        for row in self.rows.values():
            if row.adapter not in out:
                out.append(row.adapter)
        return out

    def fingerprint(self) -> tuple[object, ...]:
        """Changes whenever anything the report reads changes."""
        return (self._manifest_stat, _stat(self.root / EVENTS), self._scores_stat)
