"""A unit's adapter on a Ray actor (``executor: {kind: ray}``; the ``ray`` extra).

Each unit's adapter is one actor, placed by Ray on whatever node has the resources the adapter
asks for (``adapters[].resources``). The agent, the model stack, the limits and the run store
stay in the driver, so rate limits and the cost cap are global across the cluster by
construction and the driver is the run's only writer. An actor that dies with its node is a
retryable loss: the runner runs the unit again (``executor.unit_retries``) on a fresh actor, and
questions already committed are not asked again.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any, TypedDict

from lens.core.distribution import install_hint
from lens.core.errors import ConfigError
from lens.memory.executor.frames import CallOutcome
from lens.memory.executor.remote import (
    AdapterCallError,
    AdapterWorkerLost,
    RemoteAdapter,
    RemoteTraceback,
    worker_result,
)

_init_lock = threading.Lock()
_actor_class: Any = None


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(f"executor.kind 'ray' needs Ray: {install_hint('ray')}") from None
    return ray


def connect(address: str | None, runtime_env: dict[str, Any] | None) -> None:
    """Join the cluster at ``address`` (or start a local one) once per driver process."""
    ray = _ray()
    with _init_lock:
        if ray.is_initialized():
            return
        env = dict(runtime_env or {})
        # Adapters named module:Class must import on every node the way they do here.
        env.setdefault("env_vars", {})
        env["env_vars"].setdefault("PYTHONPATH", ":".join(p for p in sys.path if p))
        ray.init(address=address, runtime_env=env, log_to_driver=False,
                 include_dashboard=False, configure_logging=False)


def _actor() -> Any:
    global _actor_class
    if _actor_class is None:
        ray = _ray()

        class AdapterActor:
            def __init__(self, name: str, options: dict[str, Any]) -> None:
                from lens.memory.adapter import create_adapter

                self.adapter = create_adapter(name, options)

            async def call(self, method: str, args: list[Any]) -> CallOutcome:
                from lens.memory.executor.worker import dispatch

                return await dispatch(self.adapter, method, args)

        _actor_class = ray.remote(AdapterActor)
    return _actor_class


class ActorOptions(TypedDict, total=False):
    """The options of ``ray.remote(...).options``: the adapter's resources, Ray's named ones
    apart."""

    max_restarts: int
    max_concurrency: int
    num_cpus: float
    num_gpus: float
    memory: float
    resources: dict[str, float]


class RayAdapter(RemoteAdapter):
    # Waiting for a node with the resources the adapter asks for is part of starting; a sweep
    # with more units in flight than the cluster has room for waits here, not in a call.
    start_timeout_s = 600.0

    def __init__(self, name: str, options: dict[str, Any], call_timeout_s: float,
                 resources: dict[str, float] | None = None) -> None:
        super().__init__(name, options, call_timeout_s)
        self.resources = dict(resources or {})
        self._handle: Any = None

    def _options(self) -> ActorOptions:
        res = dict(self.resources)
        opts = ActorOptions(max_restarts=0, max_concurrency=1000, num_cpus=res.pop("num_cpus", 0))
        if "num_gpus" in res:
            opts["num_gpus"] = res.pop("num_gpus")
        if "memory" in res:
            opts["memory"] = res.pop("memory")
        if res:
            opts["resources"] = res
        return opts

    async def _start(self) -> None:
        self._handle = _actor().options(**self._options()).remote(self.name, self.options)
        await self._send("ping", [])

    async def _send(self, method: str, args: list[Any]) -> Any:
        ray = _ray()
        try:
            reply = await self._handle.call.remote(method, args)
        except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
                ray.exceptions.NodeDiedError, ray.exceptions.ObjectLostError) as exc:
            # A node that went away and an adapter that killed its own worker look alike from
            # here; both are retried up to executor.unit_retries, then the unit fails.
            # Ray's text of the loss holds the actor's own traceback (a constructor that raised).
            raise AdapterWorkerLost(f"the adapter's Ray actor was lost ({type(exc).__name__}: "
                                    f"{_first_line(exc)})", retryable=True
                                    ) from RemoteTraceback(str(exc))
        except ray.exceptions.RayTaskError as exc:
            # Ray's text holds the adapter's traceback: the error's cause, so errors/ shows it.
            raise AdapterCallError(f"{type(exc).__name__}: {exc}", str(exc))  # noqa: B904
        return worker_result(reply)

    async def _stop(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            # Already gone with its node: nothing left to stop.
            with contextlib.suppress(Exception):
                _ray().kill(handle, no_restart=True)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else ""
