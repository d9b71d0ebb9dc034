"""The composite score: weighted metrics behind a hard gate, renormalised over what is present.

Weights follow the LENS method; the gate zeroes the composite when evidence_grounding or
budget_compliance is below the threshold. A metric that is missing (no judge, no questions of a
type, or not defined at this level) is left out and the remaining weights are renormalised; the
result says which metrics were missing so a renormalised composite is never mistaken for a full
one. longitudinal_advantage ranges −1..1; it enters the composite clipped to 0..1 (a negative
advantage earns nothing) so that the composite stays within 0..1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lens.errors import ConfigError

DEFAULT_WEIGHTS: dict[str, float] = {
    "evidence_grounding": 0.10,
    "fact_recall": 0.10,
    "evidence_coverage": 0.10,
    "budget_compliance": 0.10,
    "answer_quality": 0.15,
    "insight_depth": 0.15,
    "reasoning_quality": 0.10,
    "longitudinal_advantage": 0.15,
    "action_quality": 0.05,
}
GATE_METRICS = ("evidence_grounding", "budget_compliance")
DEFAULT_GATE_THRESHOLD = 0.5


def resolve_weights(weights: Mapping[str, float] | None, where: str = "scoring.weights"
                    ) -> dict[str, float]:
    """Defaults overridden by ``weights``; unknown names and bad values are a ConfigError."""
    out = dict(DEFAULT_WEIGHTS)
    for name, w in (weights or {}).items():
        if name not in DEFAULT_WEIGHTS:
            raise ConfigError(f"{where}: unknown metric {name!r}; known: "
                              f"{', '.join(DEFAULT_WEIGHTS)}")
        if not isinstance(w, int | float) or w < 0:
            raise ConfigError(f"{where}.{name}: weight must be a number >= 0 (got {w!r})")
        out[name] = float(w)
    if sum(out.values()) <= 0:
        raise ConfigError(f"{where}: at least one weight must be above 0")
    return out


@dataclass(frozen=True)
class Composite:
    value: float | None
    missing: list[str] = field(default_factory=list)
    gated: bool = False
    # Gate metrics that were missing, so the gate could not be checked on them.
    gate_unchecked: list[str] = field(default_factory=list)

    @property
    def renormalised(self) -> bool:
        return bool(self.missing)


def composite(values: Mapping[str, float | None], weights: Mapping[str, float],
              gate_threshold: float = DEFAULT_GATE_THRESHOLD) -> Composite:
    active = {m: w for m, w in weights.items() if w > 0}
    present = {m: values[m] for m in active if values.get(m) is not None}
    missing = [m for m in active if m not in present]
    unchecked = [g for g in GATE_METRICS if values.get(g) is None]
    if not present:
        return Composite(None, missing, False, unchecked)
    gated = any(values.get(g) is not None and values[g] < gate_threshold  # type: ignore[operator]
                for g in GATE_METRICS)
    if gated:
        return Composite(0.0, missing, True, unchecked)
    total = 0.0
    for m, v in present.items():
        assert v is not None
        if m == "longitudinal_advantage":
            v = min(1.0, max(0.0, v))
        total += active[m] * v
    return Composite(total / sum(active[m] for m in present), missing, False, unchecked)
