"""The checklist row of the memory states that answered (lens/runner/memory_state.py).

FAIL, and the run exits 1 (lens/report/checks/gate.py), when an arm's memory changed while its
questions were being answered, or was still changing when they started (its listing never
settled): its answers did not come from one state, a memory that learns from the questions
carries one question's words into the next, and a score over them is not a score of the memory
the checkpoint left. Absent when no arm lists its memory.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from lens.report.foundations.data import RunData
from lens.report.foundations.shapes import Check, Status
from lens.runner.memory_states import CheckpointState, checkpoint_states


def arm_states(run: RunData) -> dict[str, list[CheckpointState]]:
    """The recorded checkpoint states of each arm that lists its memory."""
    out: dict[str, list[CheckpointState]] = {}
    for state in checkpoint_states(run.events):
        out.setdefault(state.adapter, []).append(state)
    return out


def prepare_times(run: RunData) -> dict[str, list[float]]:
    """Per arm, the seconds ``prepare`` took at each checkpoint (from the last ingest to its
    return): the time to be ready of a memory that does not list."""
    arm_of = {e.get("key"): e.get("adapter") for e in run.events
              if e.get("kind") == "unit_started"}
    out: dict[str, list[float]] = {}
    for e in run.events:
        seconds = e.get("seconds")
        if e.get("kind") == "prepare_done" and isinstance(seconds, int | float):
            out.setdefault(str(arm_of.get(e.get("key"))), []).append(float(seconds))
    return out


def times_text(times: Sequence[float], what: str = "ready") -> str:
    if not times:
        return f"{what} time unknown"
    return f"{what} {statistics.median(times):.4f}s median, {max(times):.4f}s at most"


def ready_text(states: Sequence[CheckpointState]) -> str:
    """The median time from the last ingest to a settled listing, and the slowest."""
    return times_text([s.ready_s for s in states if s.ready_s is not None])


def _arm(states: Sequence[CheckpointState]) -> tuple[Status, str]:
    changed = [s for s in states if s.changed]
    unsettled = [s for s in states if s.settled is False]
    failed = [s for s in states if s.error]
    unread = sum(1 for s in states if s.changed is None and not s.error)
    parts = [f"{len(states)} checkpoint(s)"]
    if changed:
        first = changed[0]
        parts.append(f"{len(changed)} changed while questioned (first: scope {first.scope_id} "
                     f"checkpoint {first.checkpoint}, {first.before} -> {first.after})")
    if unsettled:
        parts.append(f"{len(unsettled)} still changing when questions started")
    if failed:
        parts.append(f"listing failed at {len(failed)} (first: {failed[0].error})")
    if unread:
        parts.append(f"{unread} not read after the questions (unit failed)")
    parts.append(ready_text(states))
    return ("fail" if changed or unsettled or failed else "pass"), ", ".join(parts)


def check_memory_state(runs: Sequence[RunData]) -> Check | None:
    each: dict[str, Status] = {}
    parts: list[str] = []
    unlisted: list[str] = []
    for run in runs:
        states = arm_states(run)
        for adapter in run.adapters:
            name = f"{run.run_id}:{adapter}" if len(runs) > 1 else adapter
            if adapter not in states:
                unlisted.append(name)
                continue
            status, text = _arm(states[adapter])
            each[name] = status
            parts.append(f"{name}: {text}")
    if not each:
        return None
    if unlisted:
        parts.append(f"unknown for {', '.join(unlisted)} (no memory listing)")
    failing = [a for a, s in each.items() if s == "fail"]
    return Check(id="memory_state", title="memory state fixed while questioned (per arm)",
                 status="fail" if failing else "pass", failing=failing,
                 value="; ".join(parts),
                 detail="the memory's listing is read when prepare returns (until two readings "
                        "agree) and again after the checkpoint's last question; a state that "
                        "changed in between learned from the questions or was still being "
                        "written, so its answers do not measure one memory (the run exits 1); "
                        "a listing that raised fails the row too (its traceback in errors/); "
                        "the digests are in events.jsonl (memory_state) and each record's "
                        "memory_state")
