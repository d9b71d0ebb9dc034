"""Group commit in the run store: concurrent appenders share fsyncs, and none returns before a
sync that covers its own line."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from lens.runs.store import EVENTS, RunStore

THREADS = 8
PER_THREAD = 25


def test_every_append_returns_after_a_sync_that_covers_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RunStore.create(tmp_path, "gc", "x")
    events = store.root / EVENTS
    real_fsync = os.fsync
    covered = [0]
    syncs = [0]
    guard = threading.Lock()

    def slow_fsync(fd: int) -> None:
        lines_at_start = events.read_bytes().count(b"\n")
        time.sleep(0.005)  # a slow disk, so that appenders pile up behind a running sync
        real_fsync(fd)
        with guard:
            syncs[0] += 1
            covered[0] = max(covered[0], lines_at_start)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    violations: list[str] = []

    def worker(t: int) -> None:
        for i in range(PER_THREAD):
            key = f"t{t}-{i}"
            store.append_event("probe", key)
            lines = events.read_text(encoding="utf-8").splitlines()
            position = next(n for n, line in enumerate(lines, 1) if f'"key": "{key}"' in line)
            with guard:
                if covered[0] < position:
                    violations.append(f"{key}: line {position} returned before a sync "
                                      f"covering it (synced up to {covered[0]})")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    store.close()
    assert not violations, violations[:3]
    got = list(store.events())
    assert [e["seq"] for e in got] == list(range(1, THREADS * PER_THREAD + 1))
    assert len({e["key"] for e in got}) == THREADS * PER_THREAD
    # Appenders that arrived during a sync shared the next one.
    assert syncs[0] < THREADS * PER_THREAD


def test_close_makes_a_pending_line_durable(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    store = RunStore.create(tmp_path, "gc", "y")
    calls: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        calls.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    # A line written but not yet synced (as if its appender were preempted before syncing).
    with store._lock:
        store._seq += 1
        store._events.append(b'{"seq": 1, "kind": "probe", "key": "k"}\n')
    store.close()
    assert len(calls) == 1
    assert [e["key"] for e in store.events()] == ["k"]
    store.append_event("after", "k2")
    store.close()
    assert [e["seq"] for e in store.events()] == [1, 2]
