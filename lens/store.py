"""The run directory: manifest, append-only events, per-question records, resume.

Layout::

    RUN_DIR/manifest.json          resolved config, versions, condition fingerprint
    RUN_DIR/events.jsonl           one JSON object a line, appended and fsynced per finished unit
    RUN_DIR/records/<unit>/<q>.json  full record of one answered question
    RUN_DIR/errors/<...>.txt       tracebacks of failed units and questions

A record file is written atomically before the event that names it; the event is the commit
point. A line torn by a crash can only be the last one: it is detected, discarded on read and cut
off before the next append.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lens.errors import UserError
from lens.records import QuestionRecord

EVENTS = "events.jsonl"
MANIFEST = "manifest.json"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:120] or "_"


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` so that ``path`` holds either the old content or all of the new."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class RunStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._seq = 0
        self._fh: Any = None
        # Group commit: one fsync makes every line written before it durable, so appenders that
        # arrive while a sync is running share the next one instead of queueing a sync each.
        self._sync_lock = threading.Lock()
        self._synced = 0

    # -- creation -----------------------------------------------------------------------------
    @classmethod
    def create(cls, out_dir: Path, name: str, run_id: str,
               manifest: dict[str, Any] | None = None) -> RunStore:
        """A new run directory, born complete: it is assembled under a hidden name and renamed
        into place, so a crash never leaves a run directory without its manifest."""
        root = out_dir / f"{_safe(name)}-{run_id}"
        if root.exists():
            raise UserError(f"{root}: run directory already exists; choose another --out")
        staging = out_dir / f".{root.name}.creating"
        staging.mkdir(parents=True)
        (staging / EVENTS).touch()
        atomic_write_text(staging / MANIFEST, json.dumps(manifest or {}, indent=2,
                                                         sort_keys=True))
        os.replace(staging, root)
        return cls(root)

    @classmethod
    def open(cls, root: Path) -> RunStore:
        if not (root / MANIFEST).is_file():
            raise UserError(f"{root}: not a lens run directory (no {MANIFEST})")
        store = cls(root)
        store._repair_tail()
        store._seq = sum(1 for _ in store.events())
        return store

    # -- manifest -----------------------------------------------------------------------------
    def write_manifest(self, manifest: dict[str, Any]) -> None:
        atomic_write_text(self.root / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True))

    def manifest(self) -> dict[str, Any]:
        return json.loads((self.root / MANIFEST).read_text(encoding="utf-8"))

    # -- events -------------------------------------------------------------------------------
    def _repair_tail(self) -> None:
        """Cut a torn last line (a crash mid-write) so the next append starts clean."""
        path = self.root / EVENTS
        if not path.exists():
            path.touch()
            return
        data = path.read_bytes()
        if not data or data.endswith(b"\n"):
            return
        cut = data.rfind(b"\n") + 1
        with open(path, "r+b") as fh:
            fh.truncate(cut)
            fh.flush()
            os.fsync(fh.fileno())

    def append_event(self, kind: str, key: str = "", **payload: Any) -> None:
        line = {"seq": 0, "ts": now_iso(), "kind": kind, "key": key, **payload}
        with self._lock:
            if self._fh is None:
                self._fh = open(self.root / EVENTS, "a", encoding="utf-8")  # noqa: SIM115
            self._seq += 1
            line["seq"] = mine = self._seq
            self._fh.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
            self._fh.flush()
        self._sync(mine)

    def _sync(self, seq: int) -> None:
        """Return once event ``seq`` is on disk, fsyncing unless another thread's sync did."""
        with self._sync_lock:
            if self._synced >= seq:
                return
            with self._lock:
                # Every line up to here is flushed to the OS; this fsync makes all of them durable.
                upto, fh = self._seq, self._fh
            if fh is not None:
                os.fsync(fh.fileno())
            self._synced = upto

    def events(self) -> Iterator[dict[str, Any]]:
        """Every complete event; a torn or unreadable last line is skipped."""
        path = self.root / EVENTS
        if not path.exists():
            return
        with open(path, encoding="utf-8", errors="replace") as fh:
            for raw in fh:
                if not raw.endswith("\n"):
                    return
                try:
                    yield json.loads(raw)
                except json.JSONDecodeError:
                    continue

    def close(self) -> None:
        with self._sync_lock, self._lock:
            if self._fh is not None:
                if self._synced < self._seq:
                    # A line written just before close() whose sync has not run yet.
                    os.fsync(self._fh.fileno())
                    self._synced = self._seq
                self._fh.close()
                self._fh = None

    # -- records ------------------------------------------------------------------------------
    def record_path(self, unit_key: str, question_id: str) -> Path:
        return self.root / "records" / _safe(unit_key) / f"{_safe(question_id)}.json"

    def save_question(self, record: QuestionRecord) -> None:
        """Persist a finished question: record file first, then the committing event."""
        path = self.record_path(record.unit_key, record.question_id)
        atomic_write_text(path, record.model_dump_json(indent=1))
        self.append_event(
            "question_done",
            record.key,
            unit=record.unit_key,
            question_id=record.question_id,
            status=record.status,
            record=str(path.relative_to(self.root)),
            tokens=record.tokens("agent"),
        )

    def save_error(self, name: str, text: str) -> str:
        path = self.root / "errors" / f"{_safe(name)}.txt"
        atomic_write_text(path, text)
        return str(path.relative_to(self.root))

    def done_keys(self, kind: str) -> set[str]:
        return {e["key"] for e in self.events() if e.get("kind") == kind}

    def committed_questions(self) -> dict[str, str]:
        """The status of every committed question (its record file exists); the latest wins."""
        return {
            e["key"]: e.get("status", "answered")
            for e in self.events()
            if e.get("kind") == "question_done" and (self.root / e["record"]).is_file()
        }

    def load_records(self) -> list[QuestionRecord]:
        """Every committed question record, once each, in commit order."""
        seen: set[str] = set()
        out: list[QuestionRecord] = []
        for e in self.events():
            if e.get("kind") != "question_done" or e["key"] in seen:
                continue
            path = self.root / e["record"]
            if not path.is_file():
                continue
            seen.add(e["key"])
            out.append(QuestionRecord.model_validate_json(path.read_text(encoding="utf-8")))
        return out
