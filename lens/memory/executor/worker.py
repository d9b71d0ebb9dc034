"""The adapter's side of the unit protocol: one adapter instance answering calls as JSON.

Started by the process executor (``python -P`` on the driver's import path; frames on
stdin/stdout), or used through :func:`dispatch` by a Ray actor. The worker knows only the
adapter's name and options, the episodes it is sent and the agent's queries.
"""

from __future__ import annotations

import faulthandler
import json
import math
import os
import signal
import struct
import sys
import traceback
from typing import Any, BinaryIO

import anyio
from pydantic import BaseModel

from lens.core.redact import (
    register_config_secrets,
    register_env_secrets,
    scrub_standard_streams,
)
from lens.data.dataset import Episode
from lens.memory.adapter import MemoryAdapter, create_adapter
from lens.memory.contract import ContractBreach, check_result
from lens.memory.executor.frames import CallOutcome, CallRequest, Reply, WorkerInit

_HEADER = struct.Struct(">I")
_METHODS = frozenset({"ping", "reset", "ingest", "prepare", "search", "retrieve",
                      "get_capabilities", "call_extended_tool", "standing_context",
                      "model_usage", "list_memory", "aclose"})


def to_jsonable(value: Any) -> Any:
    """Pydantic models as their JSON form; anything else must already be JSON data."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


async def dispatch(adapter: MemoryAdapter, method: str, args: list[Any]) -> CallOutcome:
    """One call on ``adapter``: ``{"ok": result}`` or ``{"error": ..., "traceback": ...}``."""
    if method not in _METHODS:
        return {"error": f"unknown method {method!r}", "traceback": ""}
    try:
        if method == "ping":
            return {"ok": None}
        if method == "ingest":
            args = [Episode.model_validate(args[0])]
        result = await getattr(adapter, method)(*args)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}",
                "traceback": f"{handling(method, args)}\n{traceback.format_exc()}"}
    if method in ("reset", "ingest", "prepare", "aclose"):
        return {"ok": None}
    try:
        check_result(method, result)
    except ContractBreach as exc:
        # Checked here, on the Python objects: once encoded, a dict and a Document look alike.
        return {"error": str(exc), "breach": True, "traceback": ""}
    if method == "call_extended_tool":
        result = tool_result(result)
    try:
        encoded = json.dumps({"ok": finite(to_jsonable(result))}, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        # As in-process: what cannot be written as JSON fails this call, not the unit.
        return {"error": "the memory system returned a result that cannot be sent as JSON "
                         f"({type(exc).__name__}: {str(exc)[:200]})", "traceback": ""}
    reply: CallOutcome = json.loads(encoded)
    return reply


def tool_result(result: Any) -> Any:
    """An extended tool's result as the agent is given it: JSON data as it is, anything else as
    its text (in lens's process and in a worker alike)."""
    try:
        json.dumps(finite(result), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return str(result)
    return result


def handling(method: str, args: list[Any]) -> str:
    """What the adapter was doing, for the head of its traceback: the episode it was ingesting,
    the query it was searching for (the driver's file name says which question)."""
    def arg(i: int) -> Any:
        return args[i] if len(args) > i else None

    if method == "ingest":
        episode = arg(0)
        if isinstance(episode, Episode):
            return (f"while ingesting episode {episode.episode_id!r} of scope "
                    f"{episode.scope_id!r}:")
        if isinstance(episode, dict) and "episode_id" in episode:  # as sent to a worker
            return (f"while ingesting episode {episode['episode_id']!r} of scope "
                    f"{episode.get('scope_id')!r}:")
        return "while ingesting an episode:"
    what = {"reset": f"resetting for scope {arg(0)!r}",
            "prepare": f"preparing scope {arg(0)!r} at checkpoint {arg(1)!r}",
            "search": f"searching for {str(arg(0))[:200]!r} (filters {arg(1)!r})",
            "retrieve": f"retrieving {str(arg(0))[:200]!r}",
            "call_extended_tool": f"running its tool {arg(0)!r}",
            "standing_context": f"writing the standing context of scope {arg(0)!r}",
            "list_memory": f"listing the memory of scope {arg(0)!r} at checkpoint {arg(1)!r}"}
    return f"while {what.get(method, f'answering {method}')}:"


def finite(value: Any) -> Any:
    """``value`` with NaN and infinities as null: JSON has no such numbers, and a model given
    ``NaN`` is given invalid JSON. Used for adapters' results in-process and in a worker alike."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def encode_frame(message: WorkerInit | CallRequest | Reply) -> bytes:
    body = json.dumps(message, ensure_ascii=False).encode("utf-8")
    return _HEADER.pack(len(body)) + body


def _apply_memory_limit(megabytes: int | None) -> None:
    if not megabytes:
        return
    import resource

    limit = megabytes * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


async def _serve(reader: BinaryIO, writer: BinaryIO) -> None:
    def read_frame() -> Any:
        """The next frame's JSON (the init, then call requests); None once the pipe closes."""
        header = reader.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack(header)
        return json.loads(reader.read(size))

    write_lock = anyio.Lock()

    async def reply(message: Reply) -> None:
        frame = encode_frame(message)
        async with write_lock:
            await anyio.to_thread.run_sync(_write, writer, frame)

    init: WorkerInit | None = await anyio.to_thread.run_sync(read_frame)
    if init is None:
        return
    for entry in reversed(init.get("sys_path", [])):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    register_config_secrets(init.get("options") or {})
    _stacks_on_signal(init.get("stack_file"))
    try:
        _apply_memory_limit(init.get("max_memory_mb"))
        adapter = create_adapter(init["name"], init.get("options") or {})
    except Exception as exc:
        await reply({"id": 0, "error": f"{type(exc).__name__}: {exc}",
                     "traceback": f"while starting adapter {init['name']!r}:\n"
                                  f"{traceback.format_exc()}"})
        return
    await reply({"id": 0, "ok": None})

    async def handle(request: CallRequest) -> None:
        out = await dispatch(adapter, request["method"], request.get("args", []))
        await reply({"id": request["id"], **out})

    async with anyio.create_task_group() as tg:
        while True:
            request: CallRequest | None = await anyio.to_thread.run_sync(read_frame)
            if request is None:
                tg.cancel_scope.cancel()
                return
            tg.start_soon(handle, request)


# The file faulthandler writes the threads' stacks into; open for the process's lifetime.
_stack_file: Any = None


def _stacks_on_signal(path: object) -> None:
    """On SIGUSR1, write every thread's stack to ``path``: the driver asks for it when a call
    outlives its timeout, before it stops the process. faulthandler writes from the signal
    handler itself, so a thread that holds the interpreter (a C call, a busy loop) still
    shows where it is."""
    global _stack_file
    if not isinstance(path, str) or not hasattr(signal, "SIGUSR1"):
        return
    _stack_file = open(path, "w", encoding="utf-8")  # noqa: SIM115 (kept open on purpose)
    faulthandler.register(signal.SIGUSR1, file=_stack_file, all_threads=True)


def _write(writer: BinaryIO, frame: bytes) -> None:
    writer.write(frame)
    writer.flush()


def main() -> None:
    # The protocol owns the original stdout; anything the adapter prints goes to stderr instead
    # of corrupting a frame, with the values of the run's keys masked like all lens output.
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    register_env_secrets()
    scrub_standard_streams()
    sys.stdout = sys.stderr
    protocol_in = os.fdopen(os.dup(0), "rb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    anyio.run(_serve, protocol_in, protocol_out)


if __name__ == "__main__":
    main()
