"""The messages of the unit protocol between lens and an adapter's worker, one JSON frame each.

lens sends a :class:`WorkerInit` first, then one :class:`CallRequest` per call; the worker
answers each with a :class:`Reply` of the same id (id 0 answers the init). A Ray actor returns
the :class:`CallOutcome` alone: Ray pairs calls with their answers itself.
"""

from __future__ import annotations

from typing import Any, Required, TypedDict


class WorkerInit(TypedDict, total=False):
    name: Required[str]
    options: Required[dict[str, Any]]  # the adapter's own options, as configured
    sys_path: list[str]
    max_memory_mb: int | None
    stack_file: str | None  # where the worker writes its threads' stacks on SIGUSR1


class CallRequest(TypedDict):
    id: int
    method: str
    args: list[Any]  # JSON data: the method's arguments in order


class CallOutcome(TypedDict, total=False):
    """``ok`` (the result as JSON data), or ``error`` with its ``traceback``; ``breach`` when
    the result broke the adapter contract. ``lost`` is the driver's own: the worker is gone."""

    ok: Any
    error: str
    traceback: str
    breach: bool
    lost: str


class Reply(CallOutcome, total=False):
    id: Required[int]
