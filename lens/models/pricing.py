"""Prices per token: from the config first, then from litellm's table when litellm is installed,
then (the official OpenAI endpoint only) from lens's small dated table (lens.models.price_table).

A price that cannot be found stays unknown (None); lens never reports an unknown cost as 0.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lens.core.distribution import install_hint
from lens.data.config import ModelConfig
from lens.models import price_table
from lens.models.base import Usage
from lens.models.price_table import openai_list_price


@dataclass(frozen=True)
class Pricing:
    input_per_mtok: float
    output_per_mtok: float
    source: str
    # The provider's prompt-cache rates; None where the price map has none (then the input rate).
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None

    def cost(self, usage: Usage) -> float:
        read = min(usage.cached_prompt_tokens, usage.prompt_tokens)
        write = min(usage.cache_write_tokens, usage.prompt_tokens - read)
        fresh = usage.prompt_tokens - read - write
        read_rate = self.input_per_mtok if self.cache_read_per_mtok is None \
            else self.cache_read_per_mtok
        write_rate = self.input_per_mtok if self.cache_write_per_mtok is None \
            else self.cache_write_per_mtok
        return (
            fresh * self.input_per_mtok + read * read_rate + write * write_rate
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
        return litellm_pricing(config.name) or table_pricing(config.name)
    return None


def table_pricing(name: str) -> Pricing | None:
    found = openai_list_price(name)
    if found is None:
        return None
    inp, out, cached = found
    return Pricing(inp, out, price_table.SOURCE, cached)


def why_unpriced(config: ModelConfig) -> str:
    """Why ``config``'s model has no price, and what would give it one."""
    set_it = "set price_input_per_mtok and price_output_per_mtok on the model"
    if config.provider == "openai" and config.base_url is not None:
        return (f"{config.model} is served at {config.base_url}, not OpenAI's endpoint, so "
                f"OpenAI's prices may not apply; {set_it}")
    if config.provider in ("openai", "litellm"):
        extra = ("" if _litellm_price_table() else
                 f"; litellm's price table (the litellm extra: {install_hint('litellm')}) "
                 "prices many more")
        return (f"{config.model} is not in lens's price table ({price_table.AS_OF})"
                f"{extra}; or {set_it}")
    return f"provider {config.provider!r} publishes no price lens knows; {set_it}"


def litellm_pricing(model: str) -> Pricing | None:
    table = _litellm_price_table()
    for name in (model, model.split("/", 1)[-1]):
        entry = table.get(name)
        if not isinstance(entry, dict):
            continue
        inp = entry.get("input_cost_per_token")
        out = entry.get("output_cost_per_token")
        if isinstance(inp, int | float) and isinstance(out, int | float):
            return Pricing(float(inp) * 1_000_000, float(out) * 1_000_000, "litellm",
                           _per_mtok(entry.get("cache_read_input_token_cost")),
                           _per_mtok(entry.get("cache_creation_input_token_cost")))
    return None


def _per_mtok(per_token: object) -> float | None:
    if isinstance(per_token, bool) or not isinstance(per_token, int | float):
        return None
    return float(per_token) * 1_000_000


# The price table litellm ships beside its code. Reading the file needs no import of litellm
# (slow, and without an environment variable it fetches the table from the network).
_LITELLM_TABLE = "model_prices_and_context_window_backup.json"


@functools.cache
def _litellm_price_table() -> dict[str, Any]:
    loaded = sys.modules.get("litellm")
    if loaded is not None and isinstance(getattr(loaded, "model_cost", None), dict):
        table: dict[str, Any] = loaded.model_cost
        return table
    spec = importlib.util.find_spec("litellm")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / _LITELLM_TABLE
        try:
            table = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(table, dict):
            return table
    return {}
