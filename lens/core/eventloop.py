"""Running lens's async work: one entry point, on the fastest event loop the machine has.

uvloop (libuv) is used where it is installed, the standard library's loop elsewhere or with
``loop="asyncio"``; the same code runs on both. For lens itself the difference measured within
the noise; the benchmarks' fake provider spends about a fifth less CPU per request on it
(``bench/RESULTS.md``, "Runner"). It is not a dependency of lens: ``pip install uvloop``.
"""

from __future__ import annotations

import gc
import importlib.util
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Literal, TypeVar, TypeVarTuple

import anyio

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

LoopName = Literal["auto", "uvloop", "asyncio"]


def uvloop_available() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def loop_in_use(loop: LoopName = "auto") -> str:
    """The loop :func:`run` will use for ``loop``: ``uvloop`` or ``asyncio``."""
    if loop == "asyncio":
        return "asyncio"
    if loop == "uvloop" and not uvloop_available():
        raise RuntimeError("uvloop is not installed: `pip install uvloop` (Linux and macOS)")
    return "uvloop" if uvloop_available() else "asyncio"


def run(func: Callable[[*Ts], Awaitable[T]], *args: *Ts, loop: LoopName = "auto") -> T:
    """``anyio.run(func, *args)`` on uvloop when available (see the module docstring), with
    the garbage collector tuned for the run (:func:`fewer_collections`)."""
    options = {"use_uvloop": loop_in_use(loop) == "uvloop"}
    result: list[T] = []

    async def main() -> None:
        result.append(await func(*args))

    with fewer_collections():
        # The main task returns None and the result is handed over here: when the loop ends,
        # asyncio's runner puts the default SIGINT handler back, and the standard library turns
        # the handler it replaces (which holds the main task) into a string by the task's full
        # repr, result included. A scoring's result (every score row and question record) made
        # that string tens of megabytes: the peak of `lens score` on a 500-question run.
        anyio.run(main, backend="asyncio", backend_options=options)
    return result[0]


# Container allocations between two collections of the youngest generation (CPython: 700).
GEN0_THRESHOLD = 10_000


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect cyclic garbage less often, and over less, while lens's async work runs.

    Hundreds of agent sessions in flight allocate containers (messages, transcripts, records)
    fast, and each collection walks every object still alive; at CPython's default threshold a
    1,000-question run collected about 280 times, a fifth of lens's CPU per model call, for
    almost no garbage (the objects are freed by reference counting). Collecting every 10,000
    allocations instead cut that to about ten collections (``bench/RESULTS.md``, "Runner").

    What is alive when the run starts (imported modules, classes, the loaded dataset: over
    100,000 objects once the providers' SDKs are imported) is frozen for the run
    (``gc.freeze``), so the occasional full collection walks what the run made, not the whole
    process: a full collection over the unfrozen heap stalled every call in flight for a
    tenth of a second or more. Nothing is frozen when something else froze objects already
    (its freeze is left as it is). The previous thresholds are restored afterwards and the
    frozen objects released to the collector.
    """
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], GEN0_THRESHOLD), *before[1:])
    froze = gc.get_freeze_count() == 0
    if froze:
        gc.freeze()
    try:
        yield
    finally:
        if froze:
            gc.unfreeze()
        gc.set_threshold(*before)
