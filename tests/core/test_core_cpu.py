"""How many cores a spinning worker pool may take (lens/core/cpu.py)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from lens.core import cpu


def test_busy_cores_reads_the_share_of_time_not_idle() -> None:
    # 400 jiffies went by on 2 cores, 200 of them idle: one core's worth of work.
    assert cpu.busy_cores((1000, 500), (1400, 700), 2) == 1
    assert cpu.busy_cores((1000, 500), (1400, 900), 2) == 0
    assert cpu.busy_cores((1000, 500), (1400, 500), 2) == 2
    # Counters that did not move (or went back) say nothing is busy, never a negative count.
    assert cpu.busy_cores((1000, 500), (1000, 500), 4) == 0
    assert cpu.busy_cores((1000, 500), (900, 400), 4) == 0


def test_a_finished_job_in_the_load_average_does_not_take_a_core(monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    """The load average still counts an install that ended seconds ago; the machine is quiet
    now, so every core is free."""
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.6, 1.2, 0.8))
    monkeypatch.setattr(cpu, "_sampled_busy", lambda cores: 0)
    assert cpu.idle_cores() == 2


def test_a_brief_spike_on_a_quiet_minute_does_not_take_a_core(monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    monkeypatch.setattr(cpu, "_sampled_busy", lambda cores: 1)
    assert cpu.idle_cores() == 2


def test_sustained_load_leaves_the_free_cores_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.4, 1.3, 1.2))
    monkeypatch.setattr(cpu, "_sampled_busy", lambda cores: 1)
    assert cpu.idle_cores() == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 9.0, 9.0))
    monkeypatch.setattr(cpu, "_sampled_busy", lambda cores: 2)
    assert cpu.idle_cores() == 1  # never fewer than one


def test_without_the_kernel_counters_the_load_average_decides(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(os, "getloadavg", lambda: (2.2, 2.0, 2.0))
    monkeypatch.setattr(cpu, "_PROC_STAT", tmp_path / "absent")
    assert cpu.idle_cores() == 2


@pytest.mark.skipif(not cpu._PROC_STAT.exists(), reason="no /proc/stat on this system")
def test_the_real_counters_see_a_spinning_thread() -> None:
    """On the real kernel counters: a thread spinning through the sample is at least part of a
    busy core (other tests may be running beside this one, so only the lower bound is sure)."""
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass

    first = cpu._stat_times()
    worker = threading.Thread(target=spin)
    worker.start()
    try:
        time.sleep(0.3)
        second = cpu._stat_times()
    finally:
        stop.set()
        worker.join()
    assert first is not None and second is not None
    total, idle = second[0] - first[0], second[1] - first[1]
    assert total > 0
    assert (total - idle) / total >= 0.4 / (os.cpu_count() or 1)
