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
milliseconds rather than a fresh interpreter's import time.
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
        # Every event a worker writes (append_event and save_question come through here) goes
        # to the parent, the run's only writer of events.jsonl.
        for kind, key, payload in events:
            self.send({"kind": kind, "key": key, **payload})

    def save_question(self, record: QuestionRecord) -> None:
        super().save_question(record)
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


def _worker_main(payload: bytes, conn: multiprocessing.connection.Connection) -> None:
    _die_with_parent()
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


# Imported once by the fork server, so a worker starts with them loaded.
_PRELOAD = ["lens.shards", "lens.runner", "lens.models.runtime", "lens.models.openai_backend",
            "lens.models.scripted", "adapters.sqlite_fts"]


def _context() -> multiprocessing.context.BaseContext:
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)
    return ctx


def _noop() -> None:
    return None


def prestart() -> None:
    """Have the fork server up, its imports done, before the first run that needs it."""
    proc = _context().Process(target=_noop, daemon=True)
    proc.start()
    proc.join()


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
            if message["status"] == "answered":
                self.summary.answered += 1
            else:
                self.summary.errored += 1
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
    shards = [[u.key for u in pending[i::n]] for i in range(n)]
    worker_config = scaled_config(config, n).model_dump(mode="json")
    run_id = str(runner.store.manifest().get("run_id") or runner.store.root.name)
    ctx = _context()
    procs, conns = [], []
    try:
        for shard, keys in enumerate(shards):
            parent_end, child_end = ctx.Pipe(duplex=False)
            job = _Job(shard, worker_config, runner.dataset, str(runner.store.root), run_id,
                       keys, runner._retry_errors)
            proc = ctx.Process(target=_worker_main, args=(pickle.dumps(job), child_end),
                               name=f"lens-worker-{shard}", daemon=True)
            proc.start()
            child_end.close()
            procs.append(proc)
            conns.append(parent_end)
        runner.store.append_event("workers_started", pids=[p.pid for p in procs],
                                  units=shards)
        collector = _Collector(runner, shards)
        await anyio.to_thread.run_sync(collector.collect, procs, conns, abandon_on_cancel=True)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
            proc.join()
        for conn in conns:
            conn.close()
    return runner.finish(started)
