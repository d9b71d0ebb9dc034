"""The budget meter: hard per-session limits, checked before every model and tool call."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from lens.data.config import BudgetConfig
from lens.runs.records import BudgetOutcome

# Each count-limit and the meter's counter for it: the one place that pairs them.
COUNTERS = {"max_turns": "turns", "max_tool_calls": "tool_calls",
            "max_payload_bytes": "payload_bytes", "max_agent_tokens": "agent_tokens"}


@dataclass
class BudgetMeter:
    limits: BudgetConfig
    started: float = field(default_factory=time.monotonic)
    turns: int = 0
    tool_calls: int = 0
    payload_bytes: int = 0
    agent_tokens: int = 0

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def remaining_payload(self) -> int:
        return max(0, self.limits.max_payload_bytes - self.payload_bytes)

    def remaining_tokens(self) -> int:
        return max(0, self.limits.max_agent_tokens - self.agent_tokens)

    def _time_up(self) -> str | None:
        return "max_seconds" if self.elapsed() >= self.limits.max_seconds else None

    def before_model_call(self) -> str | None:
        """The name of the exhausted limit that forbids another model call, or None."""
        return self._exhausted("max_turns", "max_agent_tokens")

    def before_tool_call(self) -> str | None:
        return self._exhausted("max_tool_calls", "max_payload_bytes")

    def _exhausted(self, *names: str) -> str | None:
        # Checked before every model and tool call: the counters are read by name rather than
        # through used(), which would build its whole dict (and read the clock) each time.
        for name in names:
            if getattr(self, COUNTERS[name]) >= getattr(self.limits, name):
                return name
        return self._time_up()

    def used(self) -> dict[str, float]:
        return {**{name: getattr(self, counter) for name, counter in COUNTERS.items()},
                "max_seconds": round(self.elapsed(), 3)}

    def outcome(self, stop_reason: str) -> BudgetOutcome:
        limits = self.limits.model_dump()
        used = self.used()
        # Using exactly the allowance is compliant; only going over is not.
        compliant = all(used[k] <= limits[k] for k in used)
        return BudgetOutcome(limits=limits, used=used, stop_reason=stop_reason,
                             compliant=compliant)
