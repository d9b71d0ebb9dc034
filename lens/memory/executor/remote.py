"""A memory adapter that runs somewhere else: the driver's side of the unit protocol.

The agent, the model stack and the run store stay in the driver; only the adapter of a unit runs
in another process (``process.py``) or on a Ray actor (``ray_actor.py``). Calls and their results
cross as JSON, never pickle, so nothing the adapter sends can run code in the driver, and ground
truth never leaves it: the adapter's process only ever holds episodes and the agent's queries.

A call that does not return within the adapter's ``call_timeout_s`` stops the adapter's process
(a hung or loop-blocking adapter cannot be interrupted any other way) and raises
:class:`AdapterWorkerLost`, which ends the unit; so does the process dying. Losses that are not
the adapter's fault (a Ray node that went away) are marked ``retryable``.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from lens.data.dataset import Episode
from lens.memory.adapter import CapabilityManifest, Document, MemoryAdapter, SearchResult
from lens.memory.contract import ContractBreach
from lens.memory.executor.frames import CallOutcome
from lens.memory.executor.worker import handling
from lens.memory.listing import MemoryListing, read_listing

# A reply larger than this is a protocol violation, not a result (the agent's payload budget is
# tens of kilobytes; this only stops a runaway adapter from exhausting the driver's memory).
MAX_REPLY_BYTES = 64 * 1024 * 1024
START_TIMEOUT_S = 120.0


class AdapterWorkerLost(Exception):
    """The adapter's process stopped, hung or broke the protocol: its unit cannot go on."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class RemoteTraceback(Exception):
    """The traceback of the adapter's own process, as text: the cause of the driver's error, so
    that every traceback lens writes of it (``errors/``) shows the adapter's frames first."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f"\n{self.text.rstrip()}"


class AdapterCallError(Exception):
    """The adapter raised inside its own process; the message names its exception, the cause
    carries its traceback there."""

    def __init__(self, message: str, traceback_text: str = "") -> None:
        super().__init__(message)
        self.traceback_text = traceback_text
        if traceback_text:
            self.__cause__ = RemoteTraceback(traceback_text)


def worker_result(reply: CallOutcome) -> Any:
    """The result a worker's reply carries, or the error it reports, raised in the driver."""
    if reply.get("breach"):
        raise ContractBreach(str(reply["error"]))
    if "error" in reply:
        raise AdapterCallError(str(reply["error"]), str(reply.get("traceback", "")))
    return reply.get("ok")


T = TypeVar("T")


def _decoded(read: Callable[[], T], method: str) -> T:
    try:
        return read()
    except (ValueError, TypeError):
        # The worker sent a checked result that does not read back: the protocol broke.
        raise AdapterCallError(f"the adapter's worker sent a {method} result lens cannot "
                               "read") from None


class RemoteAdapter(MemoryAdapter):
    """Forwards every contract method to a worker; subclasses say how to reach it."""

    # The runner and the agent leave call timeouts to this class: only it can stop the worker.
    enforces_timeouts = True
    start_timeout_s = START_TIMEOUT_S

    def __init__(self, name: str, options: dict[str, Any], call_timeout_s: float) -> None:
        self.name = name
        self.options = options
        self.call_timeout_s = call_timeout_s
        self._lost: AdapterWorkerLost | None = None
        self._start_lock = anyio.Lock()
        self._loss_lock = anyio.Lock()
        self._started = False

    @abstractmethod
    async def _start(self) -> None:
        """Create the worker and the adapter instance inside it."""

    @abstractmethod
    async def _send(self, method: str, args: list[Any]) -> Any:
        """One call; returns the decoded JSON result or raises AdapterCallError /
        AdapterWorkerLost."""

    @abstractmethod
    async def _stop(self) -> None:
        """Stop the worker at once (idempotent)."""

    async def _stacks(self) -> str:
        """The stacks of the worker's threads as it is now ("" where they cannot be read)."""
        return ""

    async def _call(self, method: str, *args: Any) -> Any:
        if self._lost is not None:
            raise self._lost
        timeout = self.call_timeout_s if math.isfinite(self.call_timeout_s) else None
        await self._ensure_started(timeout)
        try:
            with anyio.fail_after(timeout):
                return await self._send(method, list(args))
        except TimeoutError:
            await self._lose(await self._loss_of_hung_call(method, list(args)))
        except AdapterWorkerLost as exc:
            await self._lose(exc)
        raise AssertionError("unreachable")

    async def _ensure_started(self, timeout: float | None) -> None:
        """Start the worker on the first call; a start that fails or overruns loses it."""
        try:
            async with self._start_lock:
                if not self._started:
                    # Starting an interpreter and the adapter's constructor (which may load a
                    # model) is not a call: it gets its own, longer allowance.
                    with anyio.fail_after(max(self.start_timeout_s, timeout or 0)):
                        await self._start()
                    self._started = True
        except TimeoutError:
            await self._lose(AdapterWorkerLost(
                f"the adapter did not start within {max(self.start_timeout_s, timeout or 0):g} s; "
                "its process was stopped"))
        except AdapterWorkerLost as exc:
            await self._lose(exc)

    async def _loss_of_hung_call(self, method: str, args: list[Any]) -> AdapterWorkerLost:
        """The loss a timed-out call raises. Where it hung, before the process goes: the stack
        of every thread of the adapter's process, headed by what it was serving, is the error's
        cause. One call asks (shielded: the unit's other calls must not end it half-way); calls
        timing out meanwhile wait for it and raise the same loss."""
        with anyio.CancelScope(shield=True):
            async with self._loss_lock:
                lost = self._lost
                if lost is None:
                    lost = await self._hung(method, args)
                    self._lost = lost
        # The shielded scope swallows nothing here: it only keeps out cancellation.
        assert lost is not None
        return lost

    async def _hung(self, method: str, args: list[Any]) -> AdapterWorkerLost:
        stacks = await self._stacks()
        hung = AdapterWorkerLost(
            f"the adapter's {method} did not return within {self.call_timeout_s:g} s "
            f"(call_timeout_s) {handling(method, args).rstrip(':')}; its process was stopped")
        if stacks:
            hung.__cause__ = RemoteTraceback(
                f"{handling(method, args)}\nthe adapter's threads when the call timed out "
                f"(most recent call first):\n{stacks}")
        return hung

    async def _lose(self, exc: AdapterWorkerLost) -> None:
        if self._lost is None:
            self._lost = exc
        with anyio.CancelScope(shield=True):
            await self._stop()
        raise self._lost

    async def reset(self, scope_id: str) -> None:
        await self._call("reset", scope_id)

    async def ingest(self, episode: Episode) -> None:
        await self._call("ingest", episode.model_dump(mode="json"))

    async def prepare(self, scope_id: str, checkpoint: int) -> None:
        await self._call("prepare", scope_id, checkpoint)

    # The worker checked each result's shape on the adapter's own objects (``contract.py``);
    # what arrives here is their JSON form, read back into the same types.
    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        raw = await self._call("search", query, filters, limit)
        return _decoded(lambda: [SearchResult.model_validate(r) for r in raw], "search")

    async def retrieve(self, ref_id: str) -> Document | None:
        raw = await self._call("retrieve", ref_id)
        return None if raw is None else _decoded(lambda: Document.model_validate(raw),
                                                 "retrieve")

    async def get_capabilities(self) -> CapabilityManifest:
        raw = await self._call("get_capabilities")
        return _decoded(lambda: CapabilityManifest.model_validate(raw), "get_capabilities")

    async def call_extended_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self._call("call_extended_tool", name, arguments)

    async def standing_context(self, scope_id: str, checkpoint: int) -> str | None:
        text: str | None = await self._call("standing_context", scope_id, checkpoint)
        return text

    async def model_usage(self) -> dict[str, Any] | None:
        usage = await self._call("model_usage")
        return usage if isinstance(usage, dict) else None

    async def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing | None:
        raw = await self._call("list_memory", scope_id, checkpoint)
        try:
            return read_listing(raw)
        except ValueError as exc:
            raise AdapterCallError("the memory system returned a malformed memory listing: "
                                   f"{str(exc)[:300]}") from None

    async def aclose(self) -> None:
        try:
            if self._started and self._lost is None:
                with anyio.move_on_after(min(self.call_timeout_s, 10.0)):
                    await self._send("aclose", [])
        except (AdapterCallError, AdapterWorkerLost):
            pass
        finally:
            with anyio.CancelScope(shield=True):
                await self._stop()
