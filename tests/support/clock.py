"""Stand-ins for a module's clock and sleep, so that a test of a rule about elapsed time reads
the waits the code asked for instead of the wall clock, which a loaded machine stretches."""

from __future__ import annotations

from typing import Any

import anyio


class SleepRecorder:
    """Put in place of a module's ``anyio`` (``monkeypatch.setattr(module, "anyio", rec)``):
    every ``sleep`` the module asks for is recorded in ``slept``; with ``clock`` the sleep
    moves that clock instead of waiting, otherwise it really waits. Everything else is anyio's
    own."""

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.slept: list[float] = []
        self.clock = clock

    def __getattr__(self, name: str) -> Any:
        return getattr(anyio, name)

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if self.clock is None:
            await anyio.sleep(seconds)
            return
        self.clock.now += max(0.0, seconds)
        await anyio.lowlevel.checkpoint()


class FakeClock:
    """Put in place of a module's ``time`` (``monkeypatch.setattr(module, "time", clock)``);
    the test moves ``now``."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        return self.now
