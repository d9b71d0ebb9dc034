"""Run directories for the viewer's tests: finished ones (the report tests' factory) and one in
flight, written event by event through the real RunStore as the orchestrator writes them."""

from __future__ import annotations

import threading
from pathlib import Path

from lens.runs.records import QuestionRecord
from lens.runs.store import RunStore
from tests.report.runfactory import RunSpec, build

HOSTILE = "<script>console.error('pwned')</script>\x1b[31m<img src=x onerror=alert(1)>"
DETAIL = {
    "fact_recall": {"facts": [
        {"fact": "p99 latency rose to 410ms", "matched": True, "reason": "stated"},
        {"fact": "retries doubled", "matched": False, "reason": "not stated"}]},
    "evidence_grounding": {"cited": 1, "grounded": 1},
    "answer_quality": {"verdict": "A", "reason": "the judge preferred the answer that cites"},
    "judge": {"pairs": 1, "disagreements": 0},
}


class InFlight:
    """A run whose questions are committed one by one from a background thread."""

    def __init__(self, parent: Path, spec: RunSpec) -> None:
        self.store = RunStore.create(parent, spec.name, f"{spec.name}-id")
        manifest, self.records, _ = build(spec, str(self.store.root))
        manifest["status"] = "running"
        self.store.write_manifest(manifest)
        units = sorted({r.unit_key for r in self.records})
        self.store.append_event("run_started", units=len(units), pending_units=len(units),
                                questions=len(self.records), already_done=0)
        self.done = 0
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def root(self) -> Path:
        return self.store.root

    def commit(self, n: int) -> None:
        """Commit the next ``n`` questions (their unit started first)."""
        for record in self.records[self.done:self.done + n]:
            self._commit(record)

    def _commit(self, record: QuestionRecord) -> None:
        if self.done == 0 or self.records[self.done - 1].unit_key != record.unit_key:
            self.store.append_event("unit_started", record.unit_key, adapter=record.adapter,
                                    scope_id=record.scope_id, repeat=record.repeat)
        self.store.save_question(record)
        self.done += 1

    def start(self, every_s: float, total: int) -> None:
        def work() -> None:
            while self.done < min(total, len(self.records)) and not self._stop.wait(every_s):
                self._commit(self.records[self.done])

        self._thread = threading.Thread(target=work, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.store.close()
