"""The composite score: weighted metrics behind a hard gate, over what is present.

The gate zeroes the composite when a gate metric (evidence_grounding, budget_compliance: the
registry's ``gate``) is below the threshold; the default weights are the registry's
(:mod:`lens.scoring.metrics`). A metric that is missing (no judge, no questions of a type, or
not defined at this level) is left out and the remaining weights are renormalised; the result
says which metrics were missing so a renormalised composite is never mistaken for a full one.

Two rules keep a failing agent from gaining:

- longitudinal_advantage (synthesis minus control scores) is reported but never weighted: it
  rises when the control questions fail, and no positive weight on it can keep a worse control
  score from raising the composite. A non-zero weight for it is a configuration error.
- A group's composite counts every question that ended in an error as a failure: the composite
  of its answered questions is scaled by the share answered (``answered_share``), so an agent
  cannot lift its composite by erroring on the questions it would fail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

import lens.scoring.metrics as registry
from lens.core.errors import ConfigError

DEFAULT_GATE_THRESHOLD = 0.5


def resolve_weights(weights: Mapping[str, float] | None, where: str = "scoring.weights",
                    *, stored: bool = False) -> dict[str, float]:
    """Defaults overridden by ``weights``; unknown names and bad values are a ConfigError.
    Every registered metric can be weighted, plugin metrics too. ``stored`` reads weights an
    earlier scoring recorded: an unweighted metric's weight, or a metric no longer registered
    (its plugin is not installed), is kept as recorded instead of refused."""
    defaults = registry.default_weights()
    never = registry.unweighted()
    out = dict(defaults)
    for name, w in (weights or {}).items():
        if name not in defaults and not stored:
            raise ConfigError(f"{where}: unknown metric {name!r}; known: "
                              f"{', '.join(defaults)}")
        if not isinstance(w, int | float) or w < 0:
            raise ConfigError(f"{where}.{name}: weight must be a number >= 0 (got {w!r})")
        if name in never and w > 0 and not stored:
            raise ConfigError(f"{where}.{name}: must be 0 (got {w!r}); {never[name]}")
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
              gate_threshold: float = DEFAULT_GATE_THRESHOLD,
              answered_share: float = 1.0) -> Composite:
    """``answered_share`` is the share of a group's questions that were answered (the others
    ended in an error and count as 0)."""
    never = registry.unweighted()
    gates = registry.gate_metrics()
    active = [m for m, w in weights.items() if w > 0 and m not in never]
    value, gated = _rule({m: np.nan if v is None else v for m, v in values.items()}, weights,
                         gate_threshold, answered_share, never, gates)
    return Composite(None if np.isnan(value) else float(value),
                     [m for m in active if values.get(m) is None], bool(gated),
                     [g for g in gates if values.get(g) is None])


def composite_values(values: Mapping[str, np.ndarray], weights: Mapping[str, float],
                     gate_threshold: float = DEFAULT_GATE_THRESHOLD,
                     answered_share: np.ndarray | float = 1.0) -> np.ndarray:
    """The composite of many sets of values at once, e.g. every bootstrap replicate of a group:
    ``values`` holds one array per metric (NaN where the metric is unknown); NaN where no
    weighted metric is known. The same rule as :func:`composite`, which applies it to one set."""
    value, _ = _rule(values, weights, gate_threshold, answered_share, registry.unweighted(),
                     registry.gate_metrics())
    return np.asarray(value)


def _rule(values: Mapping[str, np.ndarray | float], weights: Mapping[str, float],
          gate_threshold: float, answered_share: np.ndarray | float,
          never: Mapping[str, str], gates: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The composite's one rule, and where the gate zeroed it: the weighted mean of the known
    (finite) weighted metrics, renormalised over them, times the answered share; 0 where a known
    gate metric is below the threshold and some weighted metric is known; NaN where none is.
    Each value is a number or an array of them (one per set of values)."""
    names = [m for m, w in weights.items() if w > 0 and m not in never and m in values]
    if not names:
        shape = np.broadcast_shapes(*(np.shape(v) for v in values.values()),
                                    np.shape(answered_share))
        return np.full(shape, np.nan), np.zeros(shape, dtype=bool)
    table = np.array([values[m] for m in names], dtype=float)
    w = np.array([weights[m] for m in names]).reshape((-1,) + (1,) * (table.ndim - 1))
    known = np.isfinite(table)
    terms = w * np.where(known, table, 0.0)
    shares = w * known
    # Summed one metric after another, in the weights' order, so that every set of values adds
    # in the same order whatever its shape (a reduction may pair the terms differently).
    num, den = terms[0], shares[0]
    for t, d in zip(terms[1:], shares[1:], strict=True):
        num, den = num + t, den + d
    gate_table = np.array([values[g] for g in gates if g in values], dtype=float)
    below = (np.isfinite(gate_table) & (gate_table < gate_threshold)).any(axis=0)
    value = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan) * answered_share
    gated = below & (den > 0)
    return np.where(gated, 0.0, value), gated
