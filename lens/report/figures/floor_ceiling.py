"""Each arm placed between the floor and the ceiling of a comparison.

The floor is the ``null`` arm (no memory), the ceiling the ``oracle`` arm (the question's
required evidence, served by lens); ``full_context`` (everything seen so far) is the
alternative. For each headline metric an arm's position is (value − floor) / (ceiling − floor):
0 at the floor, 1 at the ceiling. It is unknown when either end is missing or the ceiling is not
above the floor, since a share of no gap means nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lens.memory.oracle import ALTERNATIVE, CEILING, FLOOR
from lens.report.foundations.shapes import EstimateOut, FloorCeiling, FloorCeilingRow


def _first(names: Mapping[str, str], adapter: str) -> str | None:
    return next((label for label, name in names.items() if name == adapter), None)


def position(value: float | None, floor: float | None, ceiling: float | None) -> float | None:
    if value is None or floor is None or ceiling is None or ceiling <= floor:
        return None
    return (value - floor) / (ceiling - floor)


def floor_ceiling(arms: Mapping[str, Mapping[str, EstimateOut]], names: Mapping[str, str],
                  metrics: Sequence[str]) -> FloorCeiling | None:
    """``arms``: each arm's estimates by metric; ``names``: arm → registered adapter name.
    None without a floor or a ceiling arm."""
    floor_arm = _first(names, FLOOR)
    ceiling_arm = _first(names, CEILING)
    if floor_arm is None and ceiling_arm is None:
        return None

    def mean(arm: str | None, metric: str) -> float | None:
        est = arms[arm].get(metric) if arm is not None and arm in arms else None
        return est.mean if est is not None else None

    rows = []
    for m in metrics:
        lo, hi = mean(floor_arm, m), mean(ceiling_arm, m)
        rows.append(FloorCeilingRow(
            metric=m, floor=lo, ceiling=hi,
            positions={a: position(mean(a, m), lo, hi) for a in arms
                       if a not in (floor_arm, ceiling_arm)}))
    return FloorCeiling(floor_arm=floor_arm, ceiling_arm=ceiling_arm,
                        alternative_arm=_first(names, ALTERNATIVE), rows=rows)
