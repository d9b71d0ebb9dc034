"""Create model clients: the full stack around a provider's backend.

The backend itself comes from the provider registry (:mod:`lens.models.providers`); this
module builds on :class:`~lens.models.runtime.ModelRuntime` and nothing below imports it back.
"""

from __future__ import annotations

from lens.data.config import CacheConfig, ModelConfig
from lens.models.base import ModelClient
from lens.models.providers import create_backend
from lens.models.runtime import ModelRuntime

__all__ = ["create_backend", "create_client"]


def create_client(
    config: ModelConfig,
    *,
    runtime: ModelRuntime | None = None,
    cache: CacheConfig | None = None,
    max_cost_usd: float | None = None,
) -> ModelClient:
    """A client with the whole stack (retry, limits, cache, metering, cost cap).

    Pass the run's ``ModelRuntime`` so that all clients share one cache, limiter set and meter;
    without one, the client gets a private runtime built from ``cache`` and ``max_cost_usd``.
    """
    if runtime is not None:
        return runtime.client(config)
    private = ModelRuntime(cache=cache, max_cost_usd=max_cost_usd)
    client = private.client(config)
    client.on_close = private.close_cache
    return client
