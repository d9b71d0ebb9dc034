"""Whether an arm's latency figures may have been measured with warm caches.

Arms of one run that run the same code (the same class and source digest in the manifest's
``arms.<label>.adapter_identity``) share whatever that code caches outside the unit (lens's
embedding cache, a file, a server), so the arm that ran second can look faster for nothing; and
an adapter's own model calls answered from lens's model cache (``cache_hits`` of its usage) cost
no model time. Each arm gets a flag saying which of these lens saw, or none: comparisons of
latency between arms are to be made cold, and a flagged figure says it may not be.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lens.memory.adapter_identity import recorded
from lens.report.foundations.data import RunData


def warm_flags(run: RunData, usage: Mapping[str, Mapping[str, Any] | None]
               ) -> dict[str, str | None]:
    """Per arm: why its latency may be warm, or None when lens saw no shared cache.
    ``usage``: each arm's summed memory-model usage (``cache_hits``, ``calls``)."""
    identities = recorded(run.manifest)
    code = {label: (i.target, i.source_digest) for label, i in identities.items()}
    out: dict[str, str | None] = {}
    for label in run.adapters:
        reasons: list[str] = []
        twins = [other for other in run.adapters
                 if other != label and label in code and code.get(other) == code[label]]
        if twins:
            reasons.append(f"same code as {', '.join(twins)} in this run (caches it keeps "
                           "outside the unit are shared)")
        u = usage.get(label)
        hits = int((u or {}).get("cache_hits") or 0)
        if hits:
            reasons.append(f"{hits} of {int((u or {}).get('calls') or 0)} memory model "
                           "replies from lens's model cache")
        out[label] = "; ".join(reasons) or None
    return out
