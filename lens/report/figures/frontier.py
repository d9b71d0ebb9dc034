"""The frontier: per arm, accuracy (the primary metric) against cost per question and against
latency per question, the Pareto-optimal arms, and each arm's frontier score and gain.

Scores follow LongMemEval-V2's LAFS (lens.stats.frontier). Its gain is measured against a
reference frontier; lens has no released baselines for its datasets, so an arm's gain is
measured against the run's other arms: LAFS(all arms) − LAFS(all arms but this one), what the
frontier would lose without it. A cheaper arm that is almost as good raises the frontier at
small budgets and so gains; an arm that is both dearer and worse than another gains 0.

Latency is the question's wall time (the agent's whole session, memory calls included), in
LongMemEval-V2's window of 1 to 200 seconds. Cost is the total per answered question (agent +
memory + judge, lens.report.sections.memory_cost) in a window of $0.0001 to $1 per question,
lens's own choice (LongMemEval-V2 scores latency only). An arm whose cost is unknown (a call
without a price) stays unknown: it is not on the cost frontier and has no cost score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lens.report.foundations.data import RunData
from lens.stats.frontier import LATENCY_WINDOW, Point, lafs, lafs_gain, pareto_optimal

COST_WINDOW = (1e-4, 1.0)
AXES = {"latency": ("latency_s_per_question", LATENCY_WINDOW),
        "cost": ("cost_usd_per_question", COST_WINDOW)}


def _axis(arms: Mapping[str, dict[str, Any]], field: str, window: tuple[float, float]
          ) -> dict[str, dict[str, Any]]:
    points = [Point(name, a["accuracy"], a[field]) for name, a in arms.items()
              if a["accuracy"] is not None and a[field] is not None]
    best = pareto_optimal(points)
    out: dict[str, dict[str, Any]] = {}
    for name in arms:
        mine = [p for p in points if p.name == name]
        if not mine:
            out[name] = {"pareto": None, "lafs": None, "gain": None}
            continue
        others = [p for p in points if p.name != name]
        out[name] = {"pareto": name in best, "lafs": lafs(mine, *window),
                     "gain": lafs_gain(others, mine, *window)}
    return out


def frontier_of(arms: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """``arms``: name -> {accuracy, cost_usd_per_question, latency_s_per_question} (None:
    unknown). Per arm and axis: Pareto-optimal or not, its own LAFS and its gain."""
    axes = {axis: _axis(arms, field, window) for axis, (field, window) in AXES.items()}
    return {"arms": {name: {**a, **{axis: axes[axis][name] for axis in AXES}}
                     for name, a in arms.items()},
            "windows": {axis: list(window) for axis, (_, window) in AXES.items()}}


def run_frontier(run: RunData, primary: str | None, accuracy: Mapping[str, float | None],
                 costs: Mapping[str, float | None]) -> dict[str, Any]:
    """The frontier of a run's adapters: ``accuracy`` and ``costs`` per adapter (the primary
    metric's mean, the total cost per question); latency is each adapter's mean wall time per
    question."""
    arms = {}
    for label in run.adapters:
        walls = [r.record.wall_s for r in run.rows_for(label)]
        arms[label] = {"accuracy": accuracy.get(label), "cost_usd_per_question": costs.get(label),
                       "latency_s_per_question": sum(walls) / len(walls) if walls else None}
    return {"metric": primary, **frontier_of(arms)}


def arms_frontier(arms: Sequence[Any], primary: str | None,
                  own: Mapping[str, Mapping[str, Any]],
                  costs: Mapping[str, float | None]) -> dict[str, Any]:
    """The frontier of compared arms (lens.report.figures.arm_comparison.Arm), each from its own
    run: ``own`` holds each arm's estimates and ``costs`` its total cost per question, by arm
    name."""
    points = {}
    for arm in arms:
        walls = [r.record.wall_s for r in arm.rows]
        est = own.get(arm.name, {}).get(primary) if primary else None
        points[arm.name] = {
            "accuracy": est.mean if est is not None else None,
            "cost_usd_per_question": costs.get(arm.name),
            "latency_s_per_question": sum(walls) / len(walls) if walls else None}
    return {"metric": primary, **frontier_of(points)}


def _num(x: float | None, digits: int = 3) -> str:
    return "unknown" if x is None else f"{x:.{digits}f}"


def _mark(p: bool | None) -> str:
    return "unknown" if p is None else ("yes" if p else "no")


def frontier_table(data: dict[str, Any]) -> dict[str, Any]:
    """The frontier as a section table (lens.report.sections.registry' JSON shape)."""
    rows = []
    for name, a in data["arms"].items():
        lat, cost = a["latency"], a["cost"]
        rows.append([name, _num(a["accuracy"]), _num(a["cost_usd_per_question"], 6),
                     _num(a["latency_s_per_question"], 2), _mark(cost["pareto"]),
                     _mark(lat["pareto"]), _num(cost["lafs"]), _num(cost["gain"]),
                     _num(lat["lafs"]), _num(lat["gain"])])
    metric = data.get("metric") or "accuracy"
    return {"title": f"Frontier: {metric} against cost and latency per question",
            "columns": ["adapter", metric, "total $/q", "wall s/q", "Pareto (cost)",
                        "Pareto (latency)", "cost score", "cost gain", "latency score",
                        "latency gain"],
            "rows": rows}
