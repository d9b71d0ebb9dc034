"""The viewer's worker: a piece is computed once per fingerprint, a failure is shown as the
piece's text, and a dead worker is replaced."""

from __future__ import annotations

import os
import signal
import time

from lens.view.jobs import Jobs


def _slow_len(text: str) -> tuple[bool, str]:
    time.sleep(0.3)
    return True, str(len(text))


def _fails(_: str) -> tuple[bool, str]:
    raise RuntimeError("broken section")


def _pid(_: str) -> tuple[bool, str]:
    return True, str(os.getpid())


def _wait(jobs: Jobs, name: str) -> None:
    deadline = time.monotonic() + 60
    while not jobs.ready(name):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_pieces_are_computed_per_fingerprint_and_throttled() -> None:
    jobs = Jobs(wait_s=0.0, min_interval_s=0.0)
    jobs.start()
    try:
        first = jobs.get("a", 1, _slow_len, "abc")
        assert first.pending and first.html == ""
        _wait(jobs, "a")
        done = jobs.get("a", 1, _slow_len, "abc")
        assert (done.ok, done.html, done.fresh, done.pending) == (True, "3", True, False)
        stale = jobs.get("a", 2, _slow_len, "abcd")  # the run changed: the last figures, marked
        assert stale.html == "3" and not stale.fresh and stale.pending
        _wait(jobs, "a")
        assert jobs.get("a", 2, _slow_len, "abcd").html == "4"
        throttled = Jobs(wait_s=60.0, min_interval_s=3600.0)  # a loaded machine spawns slowly
        throttled.start()
        try:
            assert throttled.get("b", 1, _slow_len, "xy").html == "2"
            again = throttled.get("b", 2, _slow_len, "xyz")
            assert again.html == "2" and not again.fresh and not again.pending
        finally:
            throttled.stop()
    finally:
        jobs.stop()


def test_a_failure_is_the_piece_and_a_dead_worker_is_replaced() -> None:
    jobs = Jobs(wait_s=10.0, min_interval_s=0.0)
    jobs.start()
    try:
        failed = jobs.get("f", 1, _fails, "")
        assert not failed.ok and "RuntimeError: broken section" in failed.html
        pid = int(jobs.get("p", 1, _pid, "").html)
        os.kill(pid, signal.SIGKILL)
        dead = jobs.get("p", 2, _pid, "")
        assert not dead.ok and "computing this failed" in dead.html
        assert jobs.get("p", 3, _pid, "").ok
    finally:
        jobs.stop()
