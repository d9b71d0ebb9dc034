"""How many CPU cores are free for a compute-heavy library's worker threads.

Read from the kernel's own counters (``/proc/stat``) rather than a process library: lens needs
one number, once per loaded model, and the standard library's load average is the fallback
where the counters are not there.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_PROC_STAT = Path("/proc/stat")
# Long enough to see a busy neighbour, short enough to go unnoticed once per loaded model.
_SAMPLE_S = 0.25


def idle_cores() -> int:
    """The cores that are idle now: all of them on a quiet machine, fewer on a busy one.

    Spinning worker pools (llama.cpp's threads, OpenBLAS's) collapse when they outnumber the
    free cores: llama.cpp took 62 s for a call with 1 thread and 238 s with 2 on 2 cores under
    load 15; the MiniLM encoder ran 5x slower with OpenBLAS's 2 threads than with 1 while one
    core was busy (``bench/RESULTS.md``). A core counts as busy when both the last minute's load
    average and the last quarter second say so: the load average alone still counts the job
    that has just finished (an install before the quickstart left one of two cores unused for
    the whole run), a short sample alone can catch a neighbour's brief spike.
    """
    cores = os.cpu_count() or 1
    busy = _load_busy()
    now = _sampled_busy(cores)
    if now is not None:
        busy = min(busy, now)
    return max(1, cores - busy)


def _load_busy() -> int:
    try:
        return int(os.getloadavg()[0])
    except OSError:
        return 0


def _sampled_busy(cores: int) -> int | None:
    """Cores busy over a short sample of the kernel's counters; None where there are none."""
    first = _stat_times()
    if first is None:
        return None
    time.sleep(_SAMPLE_S)
    second = _stat_times()
    if second is None:
        return None
    return busy_cores(first, second, cores)


def busy_cores(first: tuple[int, int], second: tuple[int, int], cores: int) -> int:
    """Whole cores busy between two ``(total, idle)`` readings of the counters."""
    total = second[0] - first[0]
    if total <= 0:
        return 0
    busy_share = 1.0 - (second[1] - first[1]) / total
    return max(0, min(cores, round(busy_share * cores)))


def _stat_times() -> tuple[int, int] | None:
    """``(all jiffies, idle jiffies)`` of the machine, idle counting time waiting for I/O."""
    try:
        with _PROC_STAT.open(encoding="ascii") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if len(fields) < 5 or fields[0] != "cpu":
        return None
    try:
        values = [int(v) for v in fields[1:]]
    except ValueError:
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
    return sum(values[:8]), values[3] + (values[4] if len(values) > 4 else 0)
