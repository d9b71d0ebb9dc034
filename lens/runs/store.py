"""The run directory: manifest, append-only events, per-question records, resume.

Layout::

    RUN_DIR/manifest.json          resolved config, versions, condition fingerprint
    RUN_DIR/events.jsonl           one JSON object a line, appended and fsynced per finished unit
    RUN_DIR/records.jsonl          full record of each answered question, one a line
    RUN_DIR/errors/<...>.txt       tracebacks of failed units and questions

A question's record is appended to ``records.jsonl`` and made durable before the event that
names it (with the record's byte offset and length); the event is the commit point, so a record
without its event -- torn or whole -- is never read. A line torn by a crash can only be the last
one of its file: in ``events.jsonl`` it is detected, discarded on read and cut off before the
next append; in ``records.jsonl`` it simply has no event.

One append-only file rather than a file per question: creating a file costs enough kernel time
(about 0.3 ms on ext4, twice with a temporary file and a rename) that it was the run's largest
CPU cost at hundreds of questions in flight (``bench/RESULTS.md``). Run directories written with
the earlier layout (``records/<unit>/<q>.json``) still load.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from lens.core.errors import UserError
from lens.core.jsonguard import MAX_JSON_DEPTH, JsonRefused, loads_guarded
from lens.core.redact import scrub, scrub_bytes, scrub_chunks
from lens.runs.manifest import RunManifest
from lens.runs.records import QuestionRecord

EVENTS = "events.jsonl"
MANIFEST = "manifest.json"
# A manifest holds the run's config (itself at most MAX_JSON_DEPTH deep) a few levels down.
MANIFEST_MAX_DEPTH = 2 * MAX_JSON_DEPTH
RECORDS = "records.jsonl"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:120] or "_"


def _error_name(name: str) -> str:
    """A file name for ``name`` that no other name shares: keys that differ only in characters
    a file name cannot hold (unit keys escape "|", labels may hold anything) get a short hash
    of the whole key, so one traceback never overwrites another."""
    safe = _safe(name)
    if safe == name:
        return safe
    return f"{safe[:109]}-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:10]}"


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` so that ``path`` holds either the old content or all of the new."""
    text = scrub(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path)
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def staged_chunks(path: Path, chunks: Iterable[str]) -> Path:
    """The chunks joined and scrubbed, written and made durable beside ``path`` under a
    temporary name that is returned: moving it onto ``path`` (``os.replace``) is the commit, so
    several files can be committed together after all were written. A failure while the
    chunks are produced removes the temporary file and leaves ``path`` as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path)
    try:
        with open(tmp, "wb") as fh:
            for data in scrub_chunks(c.encode("utf-8") for c in chunks):
                fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class _Appender:
    """An append-only file whose writers share fsyncs (group commit).

    ``append`` returns once the bytes are written to the OS; ``sync`` returns once they are
    durable. A writer arriving while another's fsync runs waits for it and then syncs everything
    written so far, for all waiters at once, instead of queueing a sync each.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._fh: Any = None
        self._written = 0
        self._synced = 0

    def append(self, data: bytes) -> tuple[int, int]:
        """(ticket, offset): pass the ticket to ``sync``."""
        with self._lock:
            if self._fh is None:
                self._fh = open(self.path, "ab")  # noqa: SIM115
            offset = self._fh.seek(0, os.SEEK_END)
            self._fh.write(data)
            self._fh.flush()
            self._written += 1
            return self._written, offset

    def sync(self, ticket: int) -> None:
        with self._sync_lock:
            if self._synced >= ticket:
                return
            with self._lock:
                upto, fh = self._written, self._fh
            if fh is not None:
                os.fsync(fh.fileno())
            self._synced = upto

    def close(self) -> None:
        with self._sync_lock, self._lock:
            if self._fh is not None:
                if self._synced < self._written:
                    os.fsync(self._fh.fileno())
                    self._synced = self._written
                self._fh.close()
                self._fh = None


class RunStore:
    def __init__(self, root: Path, records: str = RECORDS) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._seq = 0
        self._events = _Appender(root / EVENTS)
        # The file this store appends question records to; each event names the file its
        # record is in, so worker processes each write their own (lens/shards.py).
        self.records_name = records
        self._records = _Appender(root / records)

    # -- creation -----------------------------------------------------------------------------
    @classmethod
    def create(cls, out_dir: Path, name: str, run_id: str,
               manifest: RunManifest | dict[str, Any] | None = None) -> RunStore:
        """A new run directory, born complete: it is assembled under a hidden name and renamed
        into place, so a crash never leaves a run directory without its manifest."""
        root = out_dir / f"{_safe(name)}-{run_id}"
        if root.exists():
            raise UserError(f"{root}: run directory already exists; choose another --out")
        staging = out_dir / f".{root.name}.creating"
        try:
            staging.mkdir(parents=True)
        except OSError as exc:
            raise UserError(f"{out_dir}: cannot create the run directory here "
                            f"({exc.strerror}); choose another out_dir or --out") from None
        (staging / EVENTS).touch()
        data = manifest.as_dict() if isinstance(manifest, RunManifest) else manifest or {}
        atomic_write_text(staging / MANIFEST, json.dumps(data, indent=2, sort_keys=True))
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
    def write_manifest(self, manifest: RunManifest | dict[str, Any]) -> None:
        data = manifest.as_dict() if isinstance(manifest, RunManifest) else manifest
        atomic_write_text(self.root / MANIFEST, json.dumps(data, indent=2, sort_keys=True))

    def manifest_data(self) -> dict[str, Any]:
        """The manifest as the JSON the file holds (the report and the viewer show whatever a
        run directory holds); anything else reads :meth:`manifest`."""
        data: dict[str, Any] = self._manifest_json()
        return data

    def manifest(self) -> RunManifest:
        """The manifest, migrated from an earlier lens's shape and checked: a UserError names
        the file and every field that does not fit."""
        return RunManifest.load(self._manifest_json(), self.root / MANIFEST)

    def _manifest_json(self) -> Any:
        """The manifest file read through the JSON guard: a run directory may come from
        anyone (copied, edited), so a file nested past any manifest lens writes, or not JSON,
        is a UserError naming it rather than a parser's traceback."""
        path = self.root / MANIFEST
        try:
            return loads_guarded(path.read_bytes(), what=str(path),
                                 max_depth=MANIFEST_MAX_DEPTH)
        except JsonRefused as exc:
            raise UserError(f"{path}: not a readable run manifest ({exc.reason})") from None

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
        self.append_events([(kind, key, payload)])

    def append_events(self, events: list[tuple[str, str, dict[str, Any]]]) -> None:
        """Append ``(kind, key, payload)`` events in order and make them durable together."""
        ticket = 0
        with self._lock:
            for kind, key, payload in events:
                # Numbering and appending are one step, so seq order is file order.
                self._seq += 1
                line = {"seq": self._seq, "ts": now_iso(), "kind": kind, "key": key, **payload}
                data = scrub_bytes(
                    (json.dumps(line, ensure_ascii=False, default=str) + "\n").encode())
                ticket, _ = self._events.append(data)
        if ticket:
            self._events.sync(ticket)

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
                except (json.JSONDecodeError, RecursionError):
                    continue  # unreadable: torn, or nested past what the parser can hold

    def close(self) -> None:
        self._records.close()
        self._events.close()

    # -- records ------------------------------------------------------------------------------
    def save_question(self, record: QuestionRecord) -> None:
        """Persist a finished question: its record durably first, then the committing event."""
        self.save_questions([record])

    def save_questions(self, records: list[QuestionRecord]) -> None:
        """Persist finished questions together: their records durably first (one write, one
        fsync), then their committing events (one fsync)."""
        # Scrubbed before the offsets are taken: the event names the bytes as written.
        lines = [scrub_bytes(r.model_dump_json().encode("utf-8")) + b"\n" for r in records]
        ticket, offset = self._records.append(b"".join(lines))
        self._records.sync(ticket)
        events = []
        for record, data in zip(records, lines, strict=True):
            events.append(("question_done", record.key, {
                "unit": record.unit_key, "question_id": record.question_id,
                "status": record.status, "record": self.records_name, "offset": offset,
                "length": len(data), "tokens": record.tokens("agent")}))
            offset += len(data)
        self.append_events(events)

    def save_error(self, name: str, text: str) -> str:
        path = self.root / "errors" / f"{_error_name(name)}.txt"
        atomic_write_text(path, text)
        return str(path.relative_to(self.root))

    def done_keys(self, kind: str) -> set[str]:
        return {e["key"] for e in self.events() if e.get("kind") == kind}

    def committed_questions(self) -> dict[str, str]:
        """The status of every committed question (its record is on disk); the latest wins."""
        sizes: dict[str, int] = {}
        return {
            e["key"]: e.get("status", "answered")
            for e in self.events()
            if e.get("kind") == "question_done" and self._record_present(e, sizes)
        }

    def _record_present(self, event: dict[str, Any], sizes: dict[str, int]) -> bool:
        name = event["record"]
        if name not in sizes:
            path = self.root / name
            sizes[name] = path.stat().st_size if path.is_file() else -1
        if "offset" not in event:  # the one-file-per-record layout
            return sizes[name] >= 0
        return sizes[name] >= int(event["offset"]) + int(event["length"])

    def load_records(self) -> list[QuestionRecord]:
        """Every committed question record, once each: the newest commit of a question wins
        (a question re-asked by ``--resume --retry-errors``), as in ``committed_questions``;
        ordered by that newest commit."""
        return list(self.iter_records())

    def iter_records(self) -> Iterator[QuestionRecord]:
        """:meth:`load_records` one record at a time (only the commits' events are held)."""
        sizes: dict[str, int] = {}
        latest: dict[str, dict[str, Any]] = {}
        for e in self.events():
            if e.get("kind") == "question_done" and self._record_present(e, sizes):
                latest.pop(e["key"], None)  # re-inserting moves the key to its newest commit
                latest[e["key"]] = e
        handles: dict[str, BinaryIO] = {}
        try:
            for e in latest.values():
                yield QuestionRecord.model_validate_json(self._read_record(e, handles))
        finally:
            for fh in handles.values():
                fh.close()

    def _read_record(self, event: dict[str, Any], handles: dict[str, BinaryIO]) -> bytes:
        path = self.root / event["record"]
        if "offset" not in event:
            return Path(path).read_bytes()
        fh = handles.get(event["record"])
        if fh is None:
            fh = handles[event["record"]] = open(path, "rb")  # noqa: SIM115
        fh.seek(int(event["offset"]))
        return fh.read(int(event["length"]))
