"""Slow content (a report's statistics, ``lens compare``'s verdicts) computed off the request path.

Each piece has a name (the run, or the set of runs compared) and a fingerprint of the files it
reads. A request asks for the piece: a result for the current fingerprint is returned at once;
otherwise a computation is started in the worker process, and the request waits a moment for it
and else gets the last result it has (stale) or none, with the piece marked pending. A page with
a pending piece asks ``/api/job`` until it is ready. The worker is a separate process so that
seconds of statistics on a large run never hold the server's interpreter.

While a run is in flight its fingerprint changes with every event: a piece is recomputed at
most once per ``min_interval_s``, so watching a run does not keep a core busy.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

import lens.view.fragments as fragments

Outcome = tuple[bool, str]


@dataclass(frozen=True)
class Piece:
    ok: bool
    html: str
    fresh: bool
    pending: bool


@dataclass
class _Done:
    fingerprint: object
    outcome: Outcome
    at: float


class Jobs:
    def __init__(self, *, wait_s: float = 0.6, min_interval_s: float = 15.0) -> None:
        self.wait_s = wait_s
        self.min_interval_s = min_interval_s
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._running: dict[str, tuple[object, Future[Outcome]]] = {}
        self._done: dict[str, _Done] = {}

    def start(self) -> None:
        # spawn, not fork: the server has threads, and a forked copy of a threaded process
        # may inherit a held lock.
        self._pool = ProcessPoolExecutor(max_workers=1,
                                         mp_context=multiprocessing.get_context("spawn"))
        self._pool.submit(fragments.warm_up)

    def stop(self) -> None:
        """Stop the worker at once, a computation under way included (its result is not
        wanted: the viewer is stopping)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            _stop_pool(pool)

    def get(self, name: str, fingerprint: object, fn: Callable[..., Outcome],
            *args: Any, wait: bool = True) -> Piece:
        """The piece for ``fingerprint``; with ``wait``, a computation started here is given
        ``wait_s`` to finish (a small run's page then comes complete)."""
        with self._lock:
            done = self._done.get(name)
            if done is not None and done.fingerprint == fingerprint:
                return Piece(*done.outcome, fresh=True, pending=False)
            running = self._running.get(name)
            submitted = False
            if running is None or running[1].done():
                throttled = (done is not None
                             and time.monotonic() - done.at < self.min_interval_s)
                if throttled:
                    assert done is not None
                    return Piece(*done.outcome, fresh=False, pending=False)
                running = (fingerprint, self._submit(fn, *args))
                self._running[name] = running
                submitted = True
        if submitted:
            # Outside the lock: a future that is already done runs its callback here, in this
            # thread, and the callback takes the lock (held, it would wait for itself).
            future = running[1]
            future.add_done_callback(lambda f: self._harvest(name, fingerprint, f))
        if submitted and wait:
            # A request finding the computation already under way does not wait for it again.
            try:
                running[1].result(timeout=self.wait_s)
            except FutureTimeout:
                pass
            except Exception:  # recorded by _harvest as the piece's outcome
                pass
        if running[1].done():
            self._harvest(name, running[0], running[1])
        with self._lock:
            done = self._done.get(name)
            pending = not running[1].done()
        if done is None:
            return Piece(True, "", fresh=False, pending=True)
        return Piece(*done.outcome, fresh=done.fingerprint == fingerprint, pending=pending)

    def _submit(self, fn: Callable[..., Outcome], *args: Any) -> Future[Outcome]:
        if self._pool is None:
            self.start()
        assert self._pool is not None
        try:
            future = self._pool.submit(fn, *args)
        except BrokenProcessPool:
            # The worker died (killed, out of memory): its failure was shown on the page that
            # waited for it; a new worker takes the next piece.
            _stop_pool(self._pool)
            self.start()
            assert self._pool is not None
            future = self._pool.submit(fn, *args)
        return future

    def _harvest(self, name: str, fingerprint: object, future: Future[Outcome]) -> None:
        try:
            outcome = future.result()
        except Exception as exc:  # a crash of the computation is shown, never hidden
            outcome = (False, f"computing this failed: {type(exc).__name__}: {exc}")
        with self._lock:
            done = self._done.get(name)
            if done is None or done.fingerprint != fingerprint:
                self._done[name] = _Done(fingerprint, outcome, time.monotonic())

    def ready(self, name: str) -> bool:
        """Whether nothing is being computed for ``name`` (its newest result is in)."""
        with self._lock:
            running = self._running.get(name)
            return running is None or running[1].done()


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    # shutdown() lets a worker finish the computation it holds (seconds on a large run, or
    # for ever on a file that never ends) and leaves it running meanwhile: end the worker
    # processes themselves. ``_processes`` is the executor's own table of them.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(OSError, ValueError):
            process.terminate()
    for process in processes:
        with contextlib.suppress(OSError, ValueError, AssertionError):
            process.join(timeout=2)
            if process.is_alive():
                process.kill()
                process.join(timeout=2)
