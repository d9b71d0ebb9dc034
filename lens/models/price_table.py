"""A small dated table of list prices, for the official OpenAI endpoint when neither the config
nor litellm's table (the ``litellm`` extra) prices a model: enough for ``lens plan`` and a run's
cost to be known for the common models without that extra. Prices change; the table says when
it was read, and a price from it names that date wherever it is shown.
"""

from __future__ import annotations

import re

# When the prices below were read from the provider's pricing page.
AS_OF = "2025-06-01"
SOURCE = f"lens's price table of {AS_OF}"

# model name -> (input, output, cached input) in USD per million tokens, OpenAI's list prices.
OPENAI: dict[str, tuple[float, float, float | None]] = {
    "gpt-4o-mini": (0.15, 0.60, 0.075),
    "gpt-4o": (2.50, 10.00, 1.25),
    "gpt-4.1": (2.00, 8.00, 0.50),
    "gpt-4.1-mini": (0.40, 1.60, 0.10),
    "gpt-4.1-nano": (0.10, 0.40, 0.025),
    "o3-mini": (1.10, 4.40, 0.55),
    "o4-mini": (1.10, 4.40, 0.275),
    "gpt-3.5-turbo": (0.50, 1.50, None),
}

# A dated snapshot ("gpt-4o-mini-2024-07-18") is priced as its model.
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def openai_list_price(name: str) -> tuple[float, float, float | None] | None:
    """The table's (input, output, cached input) per million tokens for ``name``, or None."""
    return OPENAI.get(name) or OPENAI.get(_SNAPSHOT.sub("", name))
