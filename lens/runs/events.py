"""Typed events of ``events.jsonl``, for the events code reads back.

An event line is ``{"seq", "ts", "kind", "key", **payload}`` (``RunStore.append_event``); a
model here names the payload of one kind. Keys it does not name are kept (``extra="allow"``), so
a protocol or a newer lens may add fields without breaking a reader.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict


class ScoringDone(BaseModel):
    """A scoring wrote ``scores.json``: under which protocol, tiers and judge, and what its
    judge cost (new calls, verdicts reused from the run's events, failed calls)."""

    model_config = ConfigDict(extra="allow")
    KIND: ClassVar[str] = "scoring_done"

    protocol: str | None = None
    tiers: list[int] | None = None
    judge: str | None = None
    new_judge_calls: int = 0
    reused_verdicts: int = 0
    failed_judge_calls: int = 0
    # The errata file applied (its name) and how many of its entries touched the run.
    errata: str | None = None
    errata_touched: int | None = None

    def payload(self) -> dict[str, Any]:
        """The fields the event line carries: the ones the scoring set."""
        return self.model_dump(mode="json", exclude_unset=True)

    @classmethod
    def latest(cls, events: Iterable[Mapping[str, Any]]) -> ScoringDone | None:
        """The last ``scoring_done`` of a run's events, or None before its first scoring."""
        last = None
        for event in events:
            if event.get("kind") == cls.KIND:
                last = event
        if last is None:
            return None
        return cls.model_validate({k: v for k, v in last.items()
                                   if k not in ("seq", "ts", "kind", "key")})

