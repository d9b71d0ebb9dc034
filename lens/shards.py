"""A run's units spread over worker processes (``concurrency.processes``).

One Python process drives model calls on one core: at a few thousand calls a second its event
loop is what limits a run (``bench/RESULTS.md``, "Runner"). Units (adapter × scope × repeat)
are independent, so N worker processes can each run a share of them with their own event loop,
model clients and adapter instances, while this process stays the run's only writer of
``events.jsonl``:

- a worker appends each question's record to its own ``records-<i>.jsonl``, makes it durable,
  and sends the committing event here; the event is appended (and fsynced) here, so the commit
  point, ``--resume`` and every reader of the run are unchanged;
- each worker gets 1/N of the question and unit concurrency, of the endpoint's
  ``max_concurrency`` and rate limits, and of ``max_cost_usd``; the model cache is one SQLite
  file shared by all;
- workers die with this process (``PR_SET_PDEATHSIG`` on Linux), so a killed run leaves no
  orphan spending money; a worker that dies alone fails its unfinished units, which
  ``--resume`` runs again.

Workers start from a fork server that has imported lens once, so starting one costs
milliseconds rather than a fresh interpreter's import time; ``lens run`` starts them while it
loads the dataset (``prestart``), and each is sent only the scopes of its own units.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from lens.config import RunConfig
from lens.dataset import Dataset
from lens.records import QuestionRecord
from lens.store import RunStore

if TYPE_CHECKING:
    from lens.runner import Runner, RunSummary

_DONE = "__worker_done__"
_EVENTS = "__events__"
_FAILED = "__worker_failed__"


def merge_usage(base: dict[str, Any], others: list[dict[str, Any]]) -> dict[str, Any]:
    """``base`` (a model runtime's ``usage()``) with the workers' counts added in; settings
    (cache path, the run's ``max_cost_usd``) stay as ``base`` has them."""
    out = json.loads(json.dumps(base))
    for other in others:
        _add(out, other)
    return out


def _add(into: dict[str, Any], other: dict[str, Any]) -> None:
    for key, value in other.items():
        mine = into.get(key)
        if isinstance(value, dict):
            if not isinstance(mine, dict):
                mine = into[key] = {}
            _add(mine, value)
        elif key == "max_cost_usd" or isinstance(value, bool):
            into.setdefault(key, value)
        elif isinstance(value, int | float):
            into[key] = (mine if isinstance(mine, int | float) else 0) + value
        else:
            into.setdefault(key, value)


def scaled_config(config: RunConfig, n: int) -> RunConfig:
    """The config one of ``n`` workers runs under: 1/n of every limit, one process."""

    def part(x: int) -> int:
        return max(1, math.ceil(x / n))

    agent = config.agent
    agent = agent.model_copy(update={
        "max_concurrency": part(agent.max_concurrency),
        "requests_per_minute": (agent.requests_per_minute / n
                                if agent.requests_per_minute else None),
        "tokens_per_minute": agent.tokens_per_minute / n if agent.tokens_per_minute else None,
    })
    concurrency = config.concurrency.model_copy(update={
        "questions": part(config.concurrency.questions),
        "units": part(config.concurrency.units), "processes": 1})
    return config.model_copy(update={
        "agent": agent, "concurrency": concurrency,
        "max_cost_usd": config.max_cost_usd / n if config.max_cost_usd else None})


class WorkerStore(RunStore):
    """A worker's view of the run directory: records to its own file, events to the parent."""

    def __init__(self, root: Path, shard: int, conn: multiprocessing.connection.Connection,
                 ) -> None:
        super().__init__(root, records=f"records-{shard}.jsonl")
        self._conn = conn
        self._send_lock = threading.Lock()
        # Questions this worker committed whose events may still be on their way to the parent.
        self._saved: dict[str, str] = {}

    def append_events(self, events: list[tuple[str, str, dict[str, Any]]]) -> None:
        # Every event a worker writes (append_event and save_questions come through here) goes
        # to the parent, the run's only writer of events.jsonl; events written together go in
        # one message.
        if events:
            self.send({"kind": _EVENTS, "events": [{"kind": kind, "key": key, **payload}
                                                    for kind, key, payload in events]})

    def save_questions(self, records: list[QuestionRecord]) -> None:
        super().save_questions(records)
        for record in records:
            self._saved[record.key] = record.status

    def committed_questions(self) -> dict[str, str]:
        done = super().committed_questions()
        done.update(self._saved)
        return done

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, default=str).encode("utf-8")
        with self._send_lock:
            self._conn.send_bytes(data)


@dataclass
class _Job:
    shard: int
    config: dict[str, Any]
    # Only the scopes of this worker's units: unpickling a dataset is most of a worker's
    # start-up.
    dataset: Dataset
    run_dir: str
    run_id: str
    units: list[str]
    retry_errors: bool


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    # The parent may have gone between the fork and the prctl.
    if os.getppid() == 1:
        os._exit(1)


def _worker_main(conn: multiprocessing.connection.Connection) -> None:
    """Wait for a run's job, run its share of units, report, exit: one job per process, so no
    state crosses from one run to the next."""
    _die_with_parent()
    try:
        payload = conn.recv_bytes()
    except (EOFError, OSError):
        return  # a spare worker whose run never came: nothing to do
    from lens import eventloop
    from lens.models.runtime import ModelRuntime
    from lens.runner import Runner

    job: _Job = pickle.loads(payload)
    store = WorkerStore(Path(job.run_dir), job.shard, conn)
    try:
        config = RunConfig.model_validate(job.config)
        runtime = ModelRuntime.for_run(config, job.run_id)
        client = runtime.client(config.agent)
        runner = Runner(config, job.dataset, store, client, retry_errors=job.retry_errors,
                        only_units=frozenset(job.units))

        async def main() -> RunSummary:
            try:
                return await runner.run()
            finally:
                await runtime.aclose()

        summary = eventloop.run(main)
        store.close()
        store.send({"kind": _DONE, "summary": asdict(summary), "usage": runtime.usage(),
                    "cpu_s": time.process_time()})
    except BaseException:
        store.send({"kind": _FAILED, "error": traceback.format_exc()})
        raise
    finally:
        conn.close()


# Imported once by the fork server, so a worker starts with them loaded; anyio's and the event
# loop's modules are otherwise imported lazily by every worker's first run. A name that does not
# import (uvloop where it is not installed) is skipped.
_PRELOAD = ["lens.shards", "lens.runner", "lens.models.runtime", "lens.models.factory",
            "lens.models.openai_backend", "lens.models.scripted", "adapters.sqlite_fts",
            "anyio._backends._asyncio", "anyio.lowlevel", "anyio.streams.memory",
            "concurrent.futures.thread", "uvloop"]


def _context() -> multiprocessing.context.BaseContext:
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)
    return ctx


@dataclass
class _Worker:
    proc: multiprocessing.process.BaseProcess
    conn: multiprocessing.connection.Connection


def _spawn(ctx: multiprocessing.context.BaseContext) -> _Worker:
    parent_end, child_end = ctx.Pipe(duplex=True)
    proc = ctx.Process(target=_worker_main, args=(child_end,), name="lens-worker", daemon=True)
    proc.start()
    child_end.close()
    return _Worker(proc, parent_end)


class _Spares:
    """Workers started ahead of a run, waiting for its job.

    Starting a worker through the fork server costs a few tens of milliseconds, one after the
    other; started ahead (``prestart``), the run hands them their jobs at once. Held until
    taken; a spare left over dies with this process."""

    def __init__(self) -> None:
        # Held while spares are being started, so a run that wants them waits for them
        # rather than starting its own beside them.
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []

    def fill(self, count: int) -> None:
        ctx = _context()
        with self._lock:
            self._idle = [w for w in self._idle if w.proc.is_alive()]
            if not self._idle and count <= 0:
                _spawn_noop(ctx)  # the fork server alone
            while len(self._idle) < count:
                self._idle.append(_spawn(ctx))

    def take(self, count: int) -> list[_Worker]:
        with self._lock:
            ready = [w for w in self._idle if w.proc.is_alive()]
            taken, self._idle = ready[:count], ready[count:]
        ctx = _context()
        return taken + [_spawn(ctx) for _ in range(count - len(taken))]


def _noop() -> None:
    return None


def _spawn_noop(ctx: multiprocessing.context.BaseContext) -> None:
    proc = ctx.Process(target=_noop, daemon=True)
    proc.start()
    proc.join()


_SPARES = _Spares()


def prestart(workers: int = 0) -> None:
    """Have the fork server up, its imports done, and ``workers`` worker processes waiting,
    before the run that needs them (``lens run`` does this while it loads the dataset)."""
    _SPARES.fill(workers)


def prestart_in_background(workers: int) -> None:
    threading.Thread(target=prestart, args=(workers,), name="lens-prestart",
                     daemon=True).start()


class _Collector:
    """Appends the workers' events to the run, counts and reports progress.

    Events that arrive together are appended with one fsync: one per event, from this single
    thread, would cap the run at the disk's fsync rate."""

    def __init__(self, runner: Runner, shards: list[list[str]]) -> None:
        self.runner = runner
        self.store = runner.store
        self.summary = runner.summary
        self.units_of = shards
        self.units_done: set[str] = set()

    def collect(self, procs: list[multiprocessing.process.BaseProcess],
                conns: list[multiprocessing.connection.Connection]) -> None:
        live = dict(enumerate(conns))
        while live:
            ready = multiprocessing.connection.wait(list(live.values()))
            batch: list[tuple[int, dict[str, Any]]] = []
            for shard, conn in list(live.items()):
                if conn not in ready:
                    continue
                try:
                    while conn.poll():
                        message = json.loads(conn.recv_bytes())
                        if message["kind"] == _EVENTS:
                            batch.extend((shard, event) for event in message["events"])
                            continue
                        batch.append((shard, message))
                        if message["kind"] in (_DONE, _FAILED):
                            del live[shard]
                            break
                except (EOFError, OSError):
                    del live[shard]
                    procs[shard].join()
                    batch.append((shard, {"kind": _FAILED, "error": (
                        f"ended without finishing (exit code {procs[shard].exitcode})")}))
            self.store.append_events([(m["kind"], m["key"], _payload(m)) for _, m in batch
                                      if m["kind"] not in (_DONE, _FAILED)])
            for shard, message in batch:
                self._count(shard, message)

    def _count(self, shard: int, message: dict[str, Any]) -> None:
        kind = message["kind"]
        if kind == _DONE:
            worker = message["summary"]
            self.summary.units_failed += worker["units_failed"]
            self.summary.failures.extend(worker["failures"])
            self.summary.worker_usage.append(message["usage"])
            self.summary.worker_cpu_s += float(message["cpu_s"])
        elif kind == _FAILED:
            self._lost(shard, f"worker {shard} failed: {message['error'].strip()}")
        elif kind == "question_done":
            self.summary.count(message["status"])
            self.runner.progress.question_done(message["status"], int(message["tokens"]))
        elif kind in ("unit_done", "unit_error"):
            self.units_done.add(message["key"])
            if kind == "unit_done":
                self.runner.progress.unit_done(message["key"])

    def _lost(self, shard: int, message: str) -> None:
        events = []
        for key in self.units_of[shard]:
            if key in self.units_done:
                continue
            self.units_done.add(key)
            self.summary.units_failed += 1
            self.summary.failures.append(f"{key}: {message}")
            events.append(("unit_error", key, {"error": message}))
        self.store.append_events(events)


def _payload(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k not in ("kind", "key")}


async def run_in_processes(runner: Runner) -> RunSummary:
    from lens.runner import _default_adapter_factory

    config = runner.config
    if runner.adapter_factory is not _default_adapter_factory:
        raise ValueError("concurrency.processes > 1 creates adapters by name in each worker; "
                         "a custom adapter factory cannot cross processes")
    started = time.perf_counter()
    pending = runner.begin()
    if not pending:
        return runner.finish(started)
    n = min(config.concurrency.processes, len(pending))
    parts = [pending[i::n] for i in range(n)]
    shards = [[u.key for u in part] for part in parts]
    worker_config = scaled_config(config, n).model_dump(mode="json")
    run_id = str(runner.store.manifest().get("run_id") or runner.store.root.name)
    workers: list[_Worker] = []
    try:
        workers = _SPARES.take(n)
        for shard, part in enumerate(parts):
            dataset = runner.dataset.select_scopes(sorted({u.scope.scope_id for u in part}))
            job = pickle.dumps(_Job(shard, worker_config, dataset, str(runner.store.root),
                                    run_id, shards[shard], runner._retry_errors))
            try:
                workers[shard].conn.send_bytes(job)
            except OSError:
                # A spare that died while it waited: start this share afresh.
                workers[shard].proc.kill()
                workers[shard].conn.close()
                workers[shard] = _spawn(_context())
                workers[shard].conn.send_bytes(job)
        runner.store.append_event("workers_started", pids=[w.proc.pid for w in workers],
                                  units=shards)
        collector = _Collector(runner, shards)
        await anyio.to_thread.run_sync(collector.collect, [w.proc for w in workers],
                                       [w.conn for w in workers], abandon_on_cancel=True)
    finally:
        for worker in workers:
            if worker.proc.is_alive():
                worker.proc.kill()
            worker.proc.join()
            worker.conn.close()
    return runner.finish(started)
