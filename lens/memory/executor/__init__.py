"""Where each unit's adapter runs: in the driver, in its own process, or on a Ray actor.

The unit protocol is the adapter contract itself, carried as JSON (``remote.py``); the agent,
model calls, limits, scoring and the run store always stay in the driver.
"""

from __future__ import annotations

from collections.abc import Callable

from lens.data.config import AdapterConfig, ExecutorConfig
from lens.memory.adapter import (
    BUILTIN_ADAPTERS,
    OWN_PROCESS,
    MemoryAdapter,
    create_adapter,
    registered_adapter,
)
from lens.memory.executor.remote import AdapterCallError, AdapterWorkerLost, RemoteAdapter

__all__ = ["AdapterCallError", "AdapterWorkerLost", "RemoteAdapter", "adapter_factory",
           "runs_isolated"]


def runs_isolated(cfg: AdapterConfig) -> bool:
    """Whether the local executor gives this adapter a process of its own.

    ``auto`` isolates third-party adapters (entry points and ``module:Class`` names) and trusts
    lens's built-ins, except those that keep process-wide state (``OWN_PROCESS``); a class
    registered in this process with ``register_adapter`` cannot be rebuilt in another, so it
    stays in-process.
    """
    if cfg.isolation == "none" or registered_adapter(cfg.name):
        return False
    if cfg.isolation == "process":
        return True
    return cfg.name not in BUILTIN_ADAPTERS or cfg.name in OWN_PROCESS


def adapter_factory(executor: ExecutorConfig) -> Callable[[AdapterConfig], MemoryAdapter]:
    """The function the runner calls for each unit's fresh adapter."""
    if executor.kind == "ray":
        from lens.memory.executor.ray_actor import RayAdapter, connect

        connect(executor.address, executor.runtime_env)

        def on_ray(cfg: AdapterConfig) -> MemoryAdapter:
            return RayAdapter(cfg.name, cfg.options, cfg.call_timeout_s, cfg.resources)

        return on_ray

    def local(cfg: AdapterConfig) -> MemoryAdapter:
        if runs_isolated(cfg):
            from lens.memory.executor.process import ProcessAdapter

            return ProcessAdapter(cfg.name, cfg.options, cfg.call_timeout_s, cfg.max_memory_mb)
        return create_adapter(cfg.name, cfg.options)

    return local
