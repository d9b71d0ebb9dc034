"""Prices per token: from the config first, then from litellm's table when litellm is installed.

A price that cannot be found stays unknown (None); lens never reports an unknown cost as 0.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

from lens.config import ModelConfig
from lens.models.base import Usage


@dataclass(frozen=True)
class Pricing:
    input_per_mtok: float
    output_per_mtok: float
    source: str

    def cost(self, usage: Usage) -> float:
        return (
            usage.prompt_tokens * self.input_per_mtok
            + usage.completion_tokens * self.output_per_mtok
        ) / 1_000_000


def pricing_for(config: ModelConfig) -> Pricing | None:
    """The price of ``config``'s model, or None when it is not known."""
    if config.price_input_per_mtok is not None and config.price_output_per_mtok is not None:
        return Pricing(config.price_input_per_mtok, config.price_output_per_mtok, "config")
    if config.provider == "litellm":
        return litellm_pricing(config.name)
    if config.provider == "openai" and config.base_url is None:
        # Only the official endpoint: a compatible server may reuse OpenAI's model names for
        # models it serves at another price (or for free).
        return litellm_pricing(config.name)
    return None


def litellm_pricing(model: str) -> Pricing | None:
    if importlib.util.find_spec("litellm") is None:
        return None
    # litellm otherwise fetches its price table from the network when imported.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    table = getattr(litellm, "model_cost", None) or {}
    for name in (model, model.split("/", 1)[-1]):
        entry = table.get(name)
        if not isinstance(entry, dict):
            continue
        inp = entry.get("input_cost_per_token")
        out = entry.get("output_cost_per_token")
        if isinstance(inp, int | float) and isinstance(out, int | float):
            return Pricing(float(inp) * 1_000_000, float(out) * 1_000_000, "litellm")
    return None
