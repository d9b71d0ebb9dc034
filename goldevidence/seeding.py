"""Seeds derived with sha256, so streams are the same in every process and never overlap.

``random.Random(int)`` is deterministic across processes and platforms; what must not be used is
Python's salted ``hash()``. Deriving each episode's seed from (namespace, seed, index) rather than
``seed + index`` keeps seed 1's first episode from being seed 0's second.
"""

from __future__ import annotations

import hashlib
import random


def derive(*parts: object) -> int:
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def rng_for(*parts: object) -> random.Random:
    return random.Random(derive(*parts))
