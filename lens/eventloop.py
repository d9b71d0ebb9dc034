"""Running lens's async work: one entry point, on the fastest event loop the machine has.

uvloop (libuv) schedules tasks and moves socket data with less CPU than the standard library's
loop; at hundreds of model calls in flight the process's own CPU is what bounds it
(``bench/RESULTS.md``, "Runner"). It is used where it is installed (a default dependency on
Linux and macOS); elsewhere, or with ``loop="asyncio"``, the standard loop runs the same code.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable
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
    """``anyio.run(func, *args)`` on uvloop when available (see the module docstring)."""
    options = {"use_uvloop": loop_in_use(loop) == "uvloop"}
    return anyio.run(func, *args, backend="asyncio", backend_options=options)
