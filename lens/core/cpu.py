"""How many CPU cores are free for a compute-heavy library's worker threads."""

from __future__ import annotations

import os


def idle_cores() -> int:
    """The cores that are idle now: all of them on a quiet machine, fewer on a busy one.

    Spinning worker pools (llama.cpp's threads, OpenBLAS's) collapse when they outnumber the
    free cores: llama.cpp took 62 s for a call with 1 thread and 238 s with 2 on 2 cores under
    load 15; the MiniLM encoder ran 5x slower with OpenBLAS's 2 threads than with 1 while one
    core was busy (``bench/RESULTS.md``).
    """
    cores = os.cpu_count() or 1
    try:
        busy = int(os.getloadavg()[0])
    except OSError:
        busy = 0
    return max(1, cores - busy)
