"""Create a ModelClient from a ModelConfig by its provider prefix."""

from __future__ import annotations

from lens.config import ModelConfig
from lens.errors import ConfigError
from lens.models.base import ModelClient

PROVIDERS = ("scripted",)


def create_client(config: ModelConfig) -> ModelClient:
    provider, name = config.provider, config.name
    if provider == "scripted":
        from lens.models.scripted import ScriptedClient

        return ScriptedClient(name, config.options)
    raise ConfigError(
        f"model {config.model!r}: unknown provider {provider!r}; known: {', '.join(PROVIDERS)}"
    )
