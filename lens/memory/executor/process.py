"""A unit's adapter in its own operating-system process (``isolation: process``).

The process is started with the same interpreter and environment as lens, speaks the framed
JSON protocol of ``worker.py`` over its stdin/stdout, and is killed when its unit ends, when a
call outlives ``call_timeout_s`` or when it breaks the protocol. Whatever the adapter does to its
own process (hangs, blocks its event loop, exhausts memory, ``os._exit``) ends its unit alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectSendStream

from lens.memory.executor.frames import CallOutcome, CallRequest, Reply, WorkerInit
from lens.memory.executor.remote import (
    MAX_REPLY_BYTES,
    AdapterWorkerLost,
    RemoteAdapter,
    RemoteTraceback,
    worker_result,
)
from lens.memory.executor.worker import _HEADER, encode_frame

# The worker imports the driver's own lens package, by its folder, before it takes the driver's
# import path: that path may end with the current folder (a ``module:Class`` adapter can live
# there), and a ``lens/`` folder there (a clone, a project of that name) is found as a namespace
# package before an editable install's finder, which would break every unit. ``-P`` keeps the
# current folder off the start-up path; the path then is the driver's (PYTHONPATH and whatever
# the user's setup added), so adapters import as they do in the driver.
_BOOT = ("import importlib.util, json, sys; "
         "init, pkg, path = sys.argv[1:4]; "
         "spec = importlib.util.spec_from_file_location('lens', init, "
         "submodule_search_locations=[pkg]); "
         "module = importlib.util.module_from_spec(spec); sys.modules['lens'] = module; "
         "spec.loader.exec_module(module); "
         "sys.path[:] = json.loads(path); "
         "from lens.memory.executor.worker import main; main()")


_LENS_PACKAGE = Path(__file__).resolve().parents[2]
# How long a hung process gets to write its threads' stacks before it is stopped.
STACKS_WAIT_S = 3.0


def _complete_dump(path: Path) -> bool:
    """Whether faulthandler's dump is in ``path``: it ends with the main thread's frames, the
    last "Thread"/"Current thread" block followed by at least one frame line."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "hread 0x" in text and text.rstrip().splitlines()[-1].lstrip().startswith("File ")


def _boot_args() -> list[str]:
    return [str(_LENS_PACKAGE / "__init__.py"), str(_LENS_PACKAGE), json.dumps(sys.path)]


class ProcessAdapter(RemoteAdapter):
    def __init__(self, name: str, options: dict[str, Any], call_timeout_s: float,
                 max_memory_mb: int | None = None) -> None:
        super().__init__(name, options, call_timeout_s)
        self.max_memory_mb = max_memory_mb
        self._process: Process | None = None
        self._reader: BufferedByteReceiveStream | None = None
        self._pending: dict[int, MemoryObjectSendStream[CallOutcome]] = {}
        self._next_id = 1
        self._write_lock = anyio.Lock()
        self._reader_done = anyio.Event()
        self._stack_file: Path | None = None

    async def _start(self) -> None:
        fd, name = tempfile.mkstemp(prefix="lens-adapter-stacks-", suffix=".txt")
        os.close(fd)
        self._stack_file = Path(name)
        self._process = await anyio.open_process(
            [sys.executable, "-P", "-c", _BOOT, *_boot_args()],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None)
        assert self._process.stdout is not None
        self._reader = BufferedByteReceiveStream(self._process.stdout)
        await self._write({"name": self.name, "options": self.options, "sys_path": sys.path,
                           "max_memory_mb": self.max_memory_mb,
                           "stack_file": str(self._stack_file)})
        first = await self._read()
        if "error" in first:
            lost = AdapterWorkerLost(f"the adapter could not start in its process: "
                                     f"{first['error']}")
            if first.get("traceback"):
                raise lost from RemoteTraceback(str(first["traceback"]))
            raise lost
        # Replies are read by one task for the adapter's lifetime. The adapter is not given a
        # task group of the runner's, so the task is the event loop's own; it never raises.
        self._read_task = asyncio.get_running_loop().create_task(self._read_replies())

    async def _write(self, message: WorkerInit | CallRequest) -> None:
        assert self._process is not None and self._process.stdin is not None
        async with self._write_lock:
            try:
                await self._process.stdin.send(encode_frame(message))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                raise AdapterWorkerLost(self._death()) from None

    async def _read(self) -> Reply:
        assert self._reader is not None
        try:
            header = await self._reader.receive_exactly(_HEADER.size)
            (size,) = _HEADER.unpack(header)
            if size > MAX_REPLY_BYTES:
                raise AdapterWorkerLost(f"the adapter's process sent a {size}-byte reply "
                                        f"(limit {MAX_REPLY_BYTES}); it was stopped")
            body = await self._reader.receive_exactly(size)
            reply: Reply = json.loads(body)
            return reply
        except (anyio.IncompleteRead, anyio.EndOfStream, anyio.BrokenResourceError,
                anyio.ClosedResourceError):
            raise AdapterWorkerLost(self._death()) from None
        except ValueError:
            raise AdapterWorkerLost("the adapter's process broke the protocol "
                                    "(a reply that is not JSON); it was stopped") from None

    def _death(self) -> str:
        code = self._process.returncode if self._process is not None else None
        how = f" (exit status {code})" if code is not None else ""
        return f"the adapter's process ended unexpectedly{how}"

    async def _reap(self) -> None:
        if self._process is not None:
            with anyio.move_on_after(2):
                await self._process.wait()

    async def _read_replies(self) -> None:
        failure: AdapterWorkerLost
        try:
            while True:
                message = await self._read()
                waiter = self._pending.pop(int(message.get("id", -1)), None)
                if waiter is not None:
                    await waiter.send(message)
        except AdapterWorkerLost as exc:
            await self._reap()
            failure = AdapterWorkerLost(self._death()) if "ended" in str(exc) else exc
        except BaseException as exc:  # cancelled with the process; nothing is waiting any more
            failure = AdapterWorkerLost(f"the adapter's reply reader stopped: {exc!r}")
        for waiter in list(self._pending.values()):
            with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError,
                                     anyio.ClosedResourceError):
                waiter.send_nowait({"lost": str(failure)})
        self._pending.clear()
        self._reader_done.set()

    async def _send(self, method: str, args: list[Any]) -> Any:
        if self._reader_done.is_set():
            raise AdapterWorkerLost(self._death())
        call_id = self._next_id
        self._next_id += 1
        send, receive = anyio.create_memory_object_stream[CallOutcome](1)
        self._pending[call_id] = send
        try:
            await self._write({"id": call_id, "method": method, "args": args})
            async with receive:
                reply = await receive.receive()
        finally:
            self._pending.pop(call_id, None)
        if "lost" in reply:
            raise AdapterWorkerLost(reply["lost"])
        return worker_result(reply)

    async def _stacks(self) -> str:
        process, path = self._process, self._stack_file
        if process is None or path is None or process.returncode is not None \
                or not hasattr(signal, "SIGUSR1"):
            return ""
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGUSR1)
        # faulthandler writes the dump at once; a process too far gone to write it gets a
        # bounded wait, then the call's error goes on without its stacks.
        with anyio.move_on_after(STACKS_WAIT_S):
            seen = -1
            # Complete: it ends on a frame line and stopped growing between two looks.
            while not (_complete_dump(path) and path.stat().st_size == seen):
                seen = path.stat().st_size
                await anyio.sleep(0.02)
        with contextlib.suppress(OSError):
            return path.read_text(encoding="utf-8", errors="replace").strip()
        return ""

    async def _stop(self) -> None:
        if self._stack_file is not None:
            with contextlib.suppress(OSError):
                self._stack_file.unlink()
        process, self._process = self._process, None
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        with anyio.move_on_after(5):
            await process.wait()
        task = getattr(self, "_read_task", None)
        if task is not None and not task.done():
            task.cancel()
        await process.aclose()
