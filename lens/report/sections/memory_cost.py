"""The "Memory cost and latency" report section and the accuracy–cost plot.

Per adapter: ingest seconds per episode and prepare seconds per checkpoint (from the runner's
``ingest_segment`` and ``prepare_done`` events), search and retrieve latency (from the records'
tool calls), standing-context size, the adapter's own model calls, tokens and cost (its last
cumulative ``adapter_usage`` event per unit), and the total cost per question: agent + memory +
judge, per answered question. The judge's cost is not tied to single questions, so it is shared
evenly over the scored questions. A cost any part of which has no known price is unknown, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

import numpy as np

import lens.report.documents.plots as plots
import lens.scoring.metrics as registry
from lens.report.figures.estimates import estimates, report_metrics
from lens.report.figures.frontier import frontier_table, run_frontier
from lens.report.figures.latency_warmth import warm_flags
from lens.report.foundations.data import QuestionRow, RunData
from lens.report.foundations.shapes import EstimateOut
from lens.report.sections.registry import Section, render_json_section

SECTION_ID = "memory_cost"
TITLE = "Memory cost and latency"


class Percentiles(TypedDict):
    p50: float | None
    p95: float | None
    n: int


class MemoryUsage(TypedDict):
    """An adapter's own model calls, summed over its units (its ``adapter_usage`` events)."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    truncated: int


class CostPerQuestion(TypedDict):
    """Per answered question, in USD (None: some price unknown)."""

    agent: float | None
    memory: float | None
    judge: float | None
    total: float | None


class AdapterFigures(TypedDict):
    questions: int
    ingest_s_per_episode: Percentiles
    prepare_s_per_checkpoint: Percentiles
    search_latency_s: Percentiles
    retrieve_latency_s: Percentiles
    standing_context_bytes: float | None
    memory_model: MemoryUsage | None
    latency_warm: str | None
    cost_per_question: CostPerQuestion


class MemoryCost(TypedDict):
    adapters: dict[str, AdapterFigures]
    judge_note: str
    # The section adds the adapters' accuracy–cost frontier (lens.report.figures.frontier).
    frontier: NotRequired[dict[str, Any]]


def percentiles(values: list[float]) -> Percentiles:
    if not values:
        return {"p50": None, "p95": None, "n": 0}
    arr = np.asarray(values, dtype=float)
    return {"p50": float(np.percentile(arr, 50)), "p95": float(np.percentile(arr, 95)),
            "n": len(values)}


@dataclass
class _Unit:
    adapter: str
    ingest: list[float]
    prepare: list[float]
    usage: dict[str, Any] | None


def _units(run: RunData) -> dict[str, _Unit]:
    units: dict[str, _Unit] = {}
    for e in run.events:
        key = str(e.get("key") or "")
        if "|" not in key:
            continue
        unit = units.setdefault(key, _Unit(key.rsplit("|", 2)[0], [], [], None))
        kind = e.get("kind")
        if kind == "ingest_segment":
            per = e.get("episode_seconds")
            if isinstance(per, list):
                unit.ingest += [float(x) for x in per]
            elif e.get("upto", 0) > e.get("first", 0):
                # Older runs logged only the segment: each episode gets the segment's mean.
                n = int(e["upto"]) - int(e["first"])
                unit.ingest += [float(e.get("seconds") or 0.0) / n] * n
        elif kind == "prepare_done":
            unit.prepare.append(float(e.get("seconds") or 0.0))
        elif kind == "adapter_usage":
            unit.usage = e
    return units


def _sum_usage(units: list[_Unit]) -> MemoryUsage | None:
    used = [u.usage for u in units if u.usage is not None]
    if not used:
        return None
    costs = [u.get("cost_usd") for u in used]
    return {
        "calls": sum(int(u.get("calls") or 0) for u in used),
        "prompt_tokens": sum(int(u.get("prompt_tokens") or 0) for u in used),
        "completion_tokens": sum(int(u.get("completion_tokens") or 0) for u in used),
        "cost_usd": (None if any(c is None for c in costs)
                     else float(sum(c for c in costs if c is not None))),
        "truncated": sum(int(u.get("truncated") or 0) for u in used),
    }


def memory_model_usage(run: RunData) -> dict[str, MemoryUsage | None]:
    """Per adapter, its own model calls summed over its units (None: it reported none)."""
    units = _units(run)
    return {label: _sum_usage([u for u in units.values() if u.adapter == label])
            for label in run.adapters}


def _judge_per_question(run: RunData) -> tuple[float | None, str]:
    if run.scores is None or run.scores.judge.model is None:
        return 0.0, "no judge"
    scored = sum(1 for r in run.rows if r.record.status == "answered")
    cost = run.scores.judge.cost_usd
    if cost is None:
        return None, "judge price unknown"
    return (cost / scored if scored else 0.0), "judge cost shared evenly"


def _cost_per_question(rows: list[QuestionRow], usage: MemoryUsage | None,
                       judge_q: float | None) -> CostPerQuestion:
    """Agent, memory, judge and total cost per answered question (None: some price unknown)."""
    # Per answered question: an errored question's spend is not fully recorded.
    agent_costs = [r.cost_usd for r in rows if r.record.status == "answered"]
    answered = len(agent_costs)
    agent_q = (None if not answered or any(c is None for c in agent_costs)
               else sum(c or 0.0 for c in agent_costs) / answered)
    if usage is None:
        memory_q: float | None = 0.0
    else:
        memory_q = (None if usage["cost_usd"] is None or not answered
                    else usage["cost_usd"] / answered)
    parts = (agent_q, memory_q, judge_q)
    return {
        "agent": agent_q, "memory": memory_q, "judge": judge_q,
        "total": (None if any(p is None for p in parts)
                  else sum(p for p in parts if p is not None)),
    }


def _adapter_figures(rows: list[QuestionRow], mine: list[_Unit],
                     judge_q: float | None) -> AdapterFigures:
    """One adapter's latencies, standing context, model usage and cost per question."""
    calls = [c for r in rows for c in r.record.tool_calls]
    usage = _sum_usage(mine)
    n = len(rows)
    return {
        "questions": n,
        "ingest_s_per_episode": percentiles([x for u in mine for x in u.ingest]),
        "prepare_s_per_checkpoint": percentiles([x for u in mine for x in u.prepare]),
        "search_latency_s": percentiles([c.latency_s for c in calls
                                         if c.name == "memory_search"]),
        "retrieve_latency_s": percentiles([c.latency_s for c in calls
                                           if c.name == "memory_retrieve"]),
        "standing_context_bytes": (sum(r.record.standing_context_bytes for r in rows) / n
                                   if n else None),
        "memory_model": usage,
        # Why the latency figures may be warm (None: no shared cache lens could see).
        "latency_warm": None,
        "cost_per_question": _cost_per_question(rows, usage, judge_q),
    }


def memory_cost(run: RunData) -> MemoryCost:
    """The section's numbers, per adapter (JSON-ready)."""
    units = _units(run)
    judge_q, judge_note = _judge_per_question(run)
    out: dict[str, AdapterFigures] = {}
    for label in run.adapters:
        mine = [u for u in units.values() if u.adapter == label]
        out[label] = _adapter_figures(run.rows_for(label), mine, judge_q)
    warm = warm_flags(run, {label: d["memory_model"] for label, d in out.items()})
    for label, why in warm.items():
        out[label]["latency_warm"] = why
    return {"adapters": out, "judge_note": judge_note}


def _ms(p: Percentiles) -> str:
    p50, p95 = p["p50"], p["p95"]
    if p50 is None or p95 is None:
        return "unknown"
    return f"{p50 * 1000:.1f} / {p95 * 1000:.1f} (n={p['n']})"


def _usd(v: float | None) -> str:
    return "unknown" if v is None else f"{v:.6f}"


def memory_cost_section(run: RunData) -> Section | None:
    if not run.rows:
        return None
    data = memory_cost(run)
    adapters = data["adapters"]
    data["frontier"] = _frontier(run, adapters)
    rows = []
    for label, d in adapters.items():
        u = d["memory_model"]
        c = d["cost_per_question"]
        rows.append([
            label, _ms(d["ingest_s_per_episode"]), _ms(d["prepare_s_per_checkpoint"]),
            _ms(d["search_latency_s"]), _ms(d["retrieve_latency_s"]),
            "none" if d["standing_context_bytes"] in (None, 0)
            else f"{d['standing_context_bytes']:.0f}",
            "none" if u is None
            else f"{u['calls']} / {u['prompt_tokens'] + u['completion_tokens']}"
            + (f", {u['truncated']} cut at max_tokens" if u["truncated"] else ""),
            _usd(c["agent"]), _usd(c["memory"]), _usd(c["judge"]), _usd(c["total"]),
            (f"may be warm: {d['latency_warm']}" if d["latency_warm"]
             else "cold as far as lens sees"),
        ])
    doc = {"title": TITLE, "tables": [{
        "columns": ["adapter", "ingest ms/episode p50 / p95", "prepare ms/checkpoint p50 / p95",
                    "search ms p50 / p95", "retrieve ms p50 / p95", "standing context bytes/q",
                    "memory model calls / tokens", "agent $/q", "memory $/q", "judge $/q",
                    "total $/q", "latency caches"],
        "rows": rows}, frontier_table(data["frontier"])],
        "notes": [
            "memory model calls are the adapter's own (role adapter), metered apart from the "
            "agent; a cost with any unpriced call is unknown; a reply cut at max_tokens is "
            "counted beside them (usually broken JSON or a tool call never made)",
            f"judge $/q: {data['judge_note']}",
            FRONTIER_NOTE,
            LATENCY_NOTE,
        ]}
    base = render_json_section(SECTION_ID, doc)
    plot = _frontier_plot(run, adapters)
    return Section(id=SECTION_ID, title=TITLE, markdown=base.markdown,
                   html=base.html + f"<div class='plots'>{plot}</div>", data=dict(data))


LATENCY_NOTE = (
    "latency caches: an arm running the same code as another in the run shares what that code "
    "caches outside its unit (lens's embedding cache among them), and memory model replies "
    "from lens's model cache take no model time; compare latency between arms from cold "
    "caches (separate runs, cache.enabled: false, a fresh embedding_cache) or read a flagged "
    "figure as possibly warm")


FRONTIER_NOTE = (
    "frontier: Pareto = no other adapter is at least as accurate for at most the cost and "
    "better in one; score = LongMemEval-V2's LAFS (mean over a log-uniform budget of the best "
    "accuracy within it; latency 1–200 s, cost $0.0001–$1 per question); gain = the score of "
    "all adapters minus the score without this one (what the frontier owes it); unknown cost "
    "stays unknown")


def _frontier(run: RunData, adapters: dict[str, AdapterFigures]) -> dict[str, Any]:
    metrics = report_metrics(run)
    pm = metrics[0] if metrics else None
    accuracy = ({label: estimates(run, run.rows_for(label), [pm], confidence=0.95)[pm].mean
                 for label in adapters} if pm else {})
    costs = {label: d["cost_per_question"]["total"] for label, d in adapters.items()}
    return run_frontier(run, pm, accuracy, costs)


def _frontier_plot(run: RunData, adapters: dict[str, AdapterFigures]) -> str:
    metrics = report_metrics(run)
    if not metrics:
        return plots.empty_plot("accuracy against total cost per question",
                                "the run is not scored")
    pm = metrics[0]
    points = []
    optimal = {name for name, a in _frontier(run, adapters)["arms"].items()
               if a["cost"]["pareto"]}
    for label, d in adapters.items():
        est = estimates(run, run.rows_for(label), [pm], confidence=0.95)[pm]
        # The Pareto-optimal adapters are marked in the legend.
        name = f"{label} ★ Pareto" if label in optimal else label
        points.append((name, d["cost_per_question"]["total"], EstimateOut.of(est)))
    return plots.scatter(f"{pm} against total cost per question", points,
                         xlabel="total cost per question (USD: agent + memory + judge)",
                         ylabel=pm, unit=registry.bounds(pm) == (0.0, 1.0))
