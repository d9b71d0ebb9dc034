"""Which adapters of a run use the model gateway, and for what; imports no server, so a run
without one never loads aiohttp."""

from __future__ import annotations

from typing import Any

from lens.data.config import AdapterConfig, RunConfig
from lens.memory.adapter import resolve_adapter
from lens.memory.gateway_access import AnyGatewayOptions, wants_gateway


def gateway_options(cfg: AdapterConfig) -> AnyGatewayOptions | None:
    """The adapter's validated gateway options (``GatewayOptions`` for a memory that chats,
    ``EmbeddingGatewayOptions`` for one that only embeds), or None when it does not use the
    gateway."""
    cls = resolve_adapter(cfg.name)
    if not wants_gateway(cls):
        return None
    options: Any = cls.Options
    validated: AnyGatewayOptions = options.model_validate(cfg.options)
    return validated


def needs_gateway(config: RunConfig) -> bool:
    return any(gateway_options(a) is not None for a in config.adapters)
