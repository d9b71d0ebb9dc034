"""A gate that proves concurrency by events, not by time: every call that passes through it is
held until ``size`` calls are in flight together, then all go through. The most in flight at
once is kept (``peak``), so a test asserts both that the limit was reached and that it was never
exceeded. A caller that never sees the gate open (the code runs calls one at a time) fails after
``give_up_s`` instead of hanging, and opens the gate so the other calls fail fast too."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio


class InFlightGate:
    def __init__(self, size: int | None, give_up_s: float = 120.0) -> None:
        self.size = size
        self.give_up_s = give_up_s
        self.in_flight = 0
        self.peak = 0
        self._open: anyio.Event | None = None

    @asynccontextmanager
    async def passing(self) -> AsyncIterator[None]:
        """Counts one call in flight for the block; with a size, waits for the gate first."""
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self.size is not None:
                if self._open is None:
                    self._open = anyio.Event()
                if self.in_flight >= self.size:
                    self._open.set()
                try:
                    with anyio.fail_after(self.give_up_s):
                        await self._open.wait()
                except TimeoutError:
                    self._open.set()  # one failure says it; the other calls need not wait
                    raise
            yield
        finally:
            self.in_flight -= 1
