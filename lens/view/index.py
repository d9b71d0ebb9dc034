"""What the viewer knows of one run directory, kept current by reading only what was appended.

A run in flight appends to ``events.jsonl`` and ``records.jsonl``; the index remembers how far
it has read ``events.jsonl`` and, on each refresh, reads the complete lines after that offset
(a last line still being written is left for the next refresh). Each ``question_done`` event
names its record's bytes, which are read then and kept as a light row (ids, status, answer,
counts); the full record is read again from disk only for a drill-down. ``scores.json`` and
``manifest.json`` are re-read when their size or mtime changes.

The index only ever opens files for reading: the viewer never writes into a run and holds no
lock a run could wait on. Every file is read through :mod:`lens.view.files` (inside the run,
regular, bounded); what cannot be read is kept as the run's problem, by file, and a run whose
manifest, events or scores cannot be read is *unreadable*: listed with the reason, never
reported on.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lens.runs.records import QuestionRecord, question_key
from lens.runs.store import EVENTS, MANIFEST
from lens.scoring.foundations.detail import QuestionDetail, read_detail
from lens.scoring.foundations.types import RunScores
from lens.scoring.metrics import report_order
from lens.view.files import Unreadable, inside, parse_json, read_bytes, read_json

SCORES = "scores.json"
# Questions per second are measured over the question_done events of this last window.
RATE_WINDOW_S = 60.0
# Bad lines and records named one by one on the run's page; the rest are counted.
MAX_NAMED_PROBLEMS = 20


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

    @functools.cached_property
    def details(self) -> QuestionDetail:
        """``detail`` as typed models, read when a page first shows it."""
        return read_detail(self.detail)

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
        ts = _ts(e.get("ts"))
        if ts is not None:
            self.first_ts = ts if self.first_ts is None else self.first_ts
            self.last_ts = ts
        kind = e.get("kind")
        step = _FOLD_STEPS.get(kind) if isinstance(kind, str) else None
        if step is not None:
            step(self, e, str(e.get("key", "")), ts)

    # One step of :meth:`fold` per kind of event: the event, its key and its time.

    def _run_started(self, e: dict[str, Any], key: str, ts: float | None) -> None:
        self.units_total = _int(e.get("units"))
        self.questions_total = _int(e.get("questions"))
        self.already_done = _int(e.get("already_done")) or 0
        self.finished = None

    def _unit_started(self, e: dict[str, Any], key: str, ts: float | None) -> None:
        self.units_started.add(key)

    def _unit_done(self, e: dict[str, Any], key: str, ts: float | None) -> None:
        self.units_done.add(key)
        # A unit that failed and then finished on a resume is whole again.
        self.unit_errors.pop(key, None)

    def _unit_error(self, e: dict[str, Any], key: str, ts: float | None) -> None:
        self.unit_errors[key] = str(e.get("error", ""))

    def _question_done(self, e: dict[str, Any], key: str, ts: float | None) -> None:
        self.statuses[key] = str(e.get("status", "answered"))
        self.tokens[key] = _int(e.get("tokens")) or 0
        if ts is not None:
            self.last_question_ts = ts
            self.recent.append(ts)
            while self.recent and self.recent[0] < ts - RATE_WINDOW_S:
                self.recent.popleft()

    def _usage(self, e: dict[str, Any], key: str, ts: float | None) -> None:
        self.usage = {k: v for k, v in e.items() if k not in ("seq", "ts", "kind", "key")}

    def _run_finished(self, e: dict[str, Any], key: str, ts: float | None) -> None:
        self.finished = {k: v for k, v in e.items() if k not in ("seq", "kind", "key")}

    def _scoring_done(self, e: dict[str, Any], key: str, ts: float | None) -> None:
        self.scoring_done = True

    def rate(self) -> float | None:
        """Questions per second over the last minute of question_done events."""
        if len(self.recent) < 2:
            return None
        span = self.recent[-1] - self.recent[0]
        return (len(self.recent) - 1) / span if span > 0 else None


_FOLD_STEPS: dict[str, Callable[[Progress, dict[str, Any], str, float | None], None]] = {
    "run_started": Progress._run_started, "unit_started": Progress._unit_started,
    "unit_done": Progress._unit_done, "unit_error": Progress._unit_error,
    "question_done": Progress._question_done, "usage": Progress._usage,
    "run_finished": Progress._run_finished, "scoring_done": Progress._scoring_done,
}


def _ts(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def _int(value: object) -> int | None:
    try:
        number: int = int(value)  # type: ignore[call-overload]  # int() refusing it is caught
        return number
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


def _count(data: dict[str, Any], key: str) -> int:
    """A whole-number field of a record or model call, 0 when absent or empty."""
    return int(data.get(key) or 0)


def _cost_unknown(agent: list[dict[str, Any]], status: str) -> bool:
    """A call of the agent has no price, or the question failed before the agent was called."""
    return any(c.get("cost_usd") is None for c in agent) or (not agent and status == "error")


def _agent_spend(calls: list[dict[str, Any]], status: str) -> tuple[int, float | None]:
    """The agent's tokens and cost over the model calls of one record (the cost unknown when a
    call's is, or when the question failed before the agent was called)."""
    agent = [c for c in calls if c.get("role") == "agent"]
    tokens = sum(_count(c, "prompt_tokens") + _count(c, "completion_tokens") for c in agent)
    if _cost_unknown(agent, status):
        return tokens, None
    return tokens, float(sum(c.get("cost_usd") or 0.0 for c in agent))


def _model_calls(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in data.get("model_calls") or [] if isinstance(c, dict)]


def _row(data: dict[str, Any], where: tuple[str, int | None, int | None]) -> Row:
    calls = _model_calls(data)
    status = str(data.get("status", ""))
    tokens, cost = _agent_spend(calls, status)
    question = _first_user(data.get("transcript") or [])
    answer = str(data.get("answer") or "")
    error = str(data.get("error") or "")
    ids = [str(data.get(k, "")) for k in ("adapter", "scope_id", "question_id")]
    unit = str(data.get("unit_key", ""))
    qid = str(data.get("question_id", ""))
    return Row(
        key=question_key(unit, qid), unit=unit, adapter=ids[0], scope=ids[1], qid=qid,
        repeat=_count(data, "repeat"), checkpoint=_count(data, "checkpoint"),
        status=status, question=question, answer=answer, error=error,
        tool_calls=len(data.get("tool_calls") or []), tool_errors=_count(data, "tool_errors"),
        tokens=tokens, cost=cost, retries=sum(_count(c, "retries") for c in calls),
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
            self._data = read_bytes(self.path, offset)
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
        # What makes the run unreadable, by file; and bad lines or records, in file order.
        self._problems: dict[str, str] = {}

    def _reset(self) -> None:
        self._offset = 0
        self._lines = 0
        self.progress = Progress()
        self.rows: dict[str, Row] = {}
        self._events_stat: tuple[int, int] | None = None
        self._bad: list[str] = []
        self._bad_count = 0
        self._problems = getattr(self, "_problems", {})
        self._problems.pop(EVENTS, None)

    def _bad_line(self, text: str) -> None:
        self._bad_count += 1
        if len(self._bad) < MAX_NAMED_PROBLEMS:
            self._bad.append(text)

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
        if st is not None and st == self._manifest_stat:
            return
        try:
            data = read_json(inside(self.root, MANIFEST))
            if not isinstance(data, dict):
                raise Unreadable(f"{MANIFEST}: not a JSON object")
        except Unreadable as exc:
            # A manifest being replaced is replaced atomically; anything else is the run's
            # problem, shown on its page.
            self._problems[MANIFEST] = str(exc)
            self.manifest, self._manifest_stat = {}, st
            return
        self._problems.pop(MANIFEST, None)
        self.manifest = data
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
            data = read_bytes(inside(self.root, EVENTS), self._offset)
        except Unreadable as exc:
            self._problems[EVENTS] = str(exc)
            self._events_stat = st
            return
        except OSError:
            return
        self._problems.pop(EVENTS, None)
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next refresh
        files: dict[str, _Tail | Unreadable] = {}
        for raw in data[:end].splitlines():
            self._lines += 1
            try:
                self._take_event(raw, files, f"{EVENTS} line {self._lines}")
            except Unreadable as exc:
                self._bad_line(str(exc))
        self._offset += end
        self._events_stat = (self._offset, st[1]) if end == len(data) else None

    def _take_event(self, raw: bytes, files: dict[str, _Tail | Unreadable],
                     where: str) -> None:
        """One line of events.jsonl folded into the progress, with the record it names when
        it ends a question; raises :class:`Unreadable` for a bad line."""
        event = parse_json(raw, where)
        if not isinstance(event, dict):
            raise Unreadable(f"{where}: not a JSON object")
        self.progress.fold(event)
        if event.get("kind") == "question_done":
            self._take_record(event, files, where)

    def _tail(self, name: str, files: dict[str, _Tail | Unreadable], where: str) -> _Tail:
        """The records file ``name``, checked once per file and refresh, not once per
        question."""
        if name not in files:
            try:
                files[name] = _Tail(inside(self.root, name))
            except Unreadable as exc:
                files[name] = exc
        tail = files[name]
        if isinstance(tail, Unreadable):
            raise Unreadable(f"{where}: record {tail}")
        return tail

    @staticmethod
    def _record_bytes(tail: _Tail, event: dict[str, Any], name: str, where: str
                      ) -> tuple[bytes, tuple[str, int | None, int | None], str] | None:
        """The bytes of the record an event names, where they are, and how a message names
        them; None while they are not all on disk yet (a later refresh reads them)."""
        offset, length = event.get("offset"), event.get("length")
        try:
            if offset is None:
                return read_bytes(tail.path), (name, None, None), name
            offset, length = int(offset), int(length)  # type: ignore[arg-type]  # caught below
            if offset < 0 or length < 0:
                raise ValueError("a negative offset or length")
            raw = tail.read(offset, length)
        except (TypeError, ValueError) as exc:
            raise Unreadable(f"{where}: offset or length of the record: {exc}") from None
        except Unreadable as exc:
            raise Unreadable(f"{where}: {exc}") from None
        if len(raw) < length:
            return None
        return raw, (name, offset, length), f"{name} at byte {offset}"

    def _take_record(self, event: dict[str, Any], files: dict[str, _Tail | Unreadable],
                     where: str) -> None:
        name = str(event.get("record", ""))
        found = self._record_bytes(self._tail(name, files, where), event, name, where)
        if found is None:
            return
        raw, place, shown = found
        data = parse_json(raw, f"{shown} (named by {where})")
        if not isinstance(data, dict):
            raise Unreadable(f"{shown} (named by {where}): not a JSON object")
        try:
            row = _row(data, place)
        except (TypeError, ValueError, AttributeError) as exc:
            raise Unreadable(f"{shown} (named by {where}): {_record_problem(data, exc)}"
                             ) from None
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
            data = read_json(inside(self.root, SCORES))
            if not isinstance(data, dict):
                raise Unreadable(f"{SCORES}: not a JSON object")
            questions = data.pop("questions", [])
            self.scores_head = data
            for q in questions:
                self.scores[str(q["key"])] = Scored(
                    question_type=str(q.get("question_type", "unknown")),
                    metrics=dict(q.get("metrics") or {}), detail=dict(q.get("detail") or {}))
        except Unreadable as exc:
            self._problems[SCORES] = f"not a valid scores file: {exc}"
            self.scores, self.scores_head = {}, None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            # A half-replaced scores.json cannot be: it is written atomically. This is a
            # broken file, shown as such; the next change of the file is read again.
            self._problems[SCORES] = f"{SCORES}: not a valid scores file ({exc!r:.300})"
            self.scores, self.scores_head = {}, None

    @property
    def problems(self) -> list[str]:
        """What could not be read, to show on the run's page: the files first, then the bad
        lines and records."""
        out = [*self._problems.values(), *self._bad]
        if self._bad_count > len(self._bad):
            out.append(f"... and {self._bad_count - len(self._bad)} more bad lines or records "
                       f"in {EVENTS}")
        return out

    @property
    def unreadable(self) -> list[str]:
        """Why the run as a whole cannot be read (its manifest, events or scores), or []."""
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
        path = inside(self.root, name)
        raw = read_bytes(path) if offset is None else read_bytes(path, offset, length)
        shown = name if offset is None else f"{name} at byte {offset}"
        data = parse_json(raw, shown)
        try:
            return QuestionRecord.model_validate(data)
        except ValueError as exc:
            raise Unreadable(f"{shown}: {_record_problem(data, exc)}") from None

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


def _record_problem(data: dict[str, Any], exc: Exception) -> str:
    """The fields of a record that are not a question record's, by name, with the fix."""
    try:
        QuestionRecord.model_validate(data)
    except ValidationError as invalid:
        fields = "; ".join(f"field {'.'.join(map(str, err['loc'])) or '(record)'}: {err['msg']}"
                           for err in invalid.errors()[:5])
        return f"not a valid question record ({fields}); lens writes these records itself"
    except ValueError:
        pass
    return f"not a valid question record ({type(exc).__name__}: {str(exc)[:200]})"
