"""Create model clients: the bare backend for a provider, and the full stack around it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lens.config import CacheConfig, ModelConfig
from lens.errors import ConfigError
from lens.models.base import ModelClient

if TYPE_CHECKING:
    from lens.models.runtime import ModelRuntime

PROVIDERS = ("openai", "litellm", "llama_cpp", "scripted")


def create_backend(config: ModelConfig) -> ModelClient:
    """The bare backend for ``config.provider``, without retry, limits, cache or metering."""
    provider, name = config.provider, config.name
    if provider == "scripted":
        from lens.models.scripted import ScriptedClient

        return ScriptedClient(name, config.options)
    if provider == "openai":
        from lens.models.openai_backend import OpenAIClient

        return OpenAIClient(config)
    if provider == "litellm":
        from lens.models.litellm_backend import LiteLLMClient

        return LiteLLMClient(config)
    if provider == "llama_cpp":
        from lens.models.llama_backend import LlamaCppClient

        return LlamaCppClient(config)
    raise ConfigError(
        f"model {config.model!r}: unknown provider {provider!r}; known: {', '.join(PROVIDERS)}"
    )


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
    from lens.models.runtime import ModelRuntime

    if runtime is not None:
        return runtime.client(config)
    private = ModelRuntime(cache=cache, max_cost_usd=max_cost_usd)
    client = private.client(config)
    client.on_close = private.close_cache
    return client
