"""The estimate made before the run (``lens plan CONFIG``, kept in the manifest as
``cost_estimate``) beside what the run spent: per arm for the agent, in total for the judge."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import lens.report.documents.fmt as fmt
from lens.report.documents.document import Block, Para, Table
from lens.report.foundations.data import QuestionRow, RunData
from lens.report.foundations.shapes import EstimateRow, RoleUsage


def _spend(part: Any) -> tuple[float, float, float | None] | None:
    if not isinstance(part, dict):
        return None
    tokens = float(part.get("prompt_tokens") or 0) + float(part.get("completion_tokens") or 0)
    cost = part.get("cost_usd")
    return float(part.get("calls") or 0), tokens, None if cost is None else float(cost)


def estimate_rows(run: RunData, usage: dict[str, RoleUsage]) -> list[EstimateRow]:
    """One row per arm's agent and one for the judge, where the manifest has an estimate."""
    plan = run.manifest.get("cost_estimate")
    if not isinstance(plan, dict):
        return []
    out: list[EstimateRow] = []
    judged: list[tuple[float, float, float | None]] = []
    for arm in plan.get("arms") or []:
        name = str(arm.get("arm"))
        est = _spend(arm.get("agent"))
        if est is None:
            continue
        out.append(_agent_row(run, name, est))
        judge_part = _spend(arm.get("judge"))
        if judge_part is not None:
            judged.append(judge_part)
    judge_row = _judge_row(judged, usage.get("judge"))
    return out if judge_row is None else [*out, judge_row]


def _agent_row(run: RunData, name: str, est: tuple[float, float, float | None]) -> EstimateRow:
    """An arm's agent: the estimate beside its calls, tokens and cost (the cost unknown
    unless every question's is known)."""
    rows = run.rows_for(name) if name in run.adapters else []
    agent = [c for r in rows for c in r.record.model_calls if c.role == "agent"]
    tokens = sum(c.prompt_tokens + c.completion_tokens for c in agent)
    return EstimateRow(role="agent", arm=name, est_calls=est[0], est_tokens=est[1],
                       est_cost_usd=est[2], calls=len(agent), tokens=tokens,
                       cost_usd=_complete_cost(rows),
                       unknown_usage_calls=sum(1 for c in agent if c.usage_unknown))


def _complete_cost(rows: Sequence[QuestionRow]) -> float | None:
    """The questions' cost together, unknown without questions or when any one's is."""
    costs = [r.cost_usd for r in rows]
    known = [c for c in costs if c is not None]
    return sum(known) if rows and len(known) == len(costs) else None


def _judge_row(judged: list[tuple[float, float, float | None]],
               judge: RoleUsage | None) -> EstimateRow | None:
    """The judge over every arm: the arms' judge estimates added up (the cost unknown when
    any is) beside what the judge spent; None without an estimate of calls or a judge."""
    est_calls = sum(j[0] for j in judged)
    if not est_calls or judge is None:
        return None
    priced = all(j[2] is not None for j in judged)
    return EstimateRow(
        role="judge", arm="all", est_calls=est_calls, est_tokens=sum(j[1] for j in judged),
        est_cost_usd=sum(j[2] or 0.0 for j in judged) if priced else None, calls=judge.calls,
        tokens=judge.prompt_tokens + judge.completion_tokens, cost_usd=judge.cost_usd,
        unknown_usage_calls=judge.unknown_usage_calls)


def _ratio(r: EstimateRow) -> str:
    """Estimate over actual tokens; over an actual that is an upper bound, a lower bound."""
    if not r.tokens:
        return "unknown"
    return f"{'≥ ' if r.unknown_usage_calls else ''}{r.est_tokens / r.tokens:.2f}"


def estimate_blocks(rows: list[EstimateRow]) -> list[Block]:
    if not rows:
        return []
    table = [[r.role, r.arm, f"{r.est_calls:,.0f}", f"{r.calls:,}", f"{r.est_tokens:,.0f}",
              fmt.at_most(f"{r.tokens:,}", r.unknown_usage_calls),
              _ratio(r),
              fmt.money(r.est_cost_usd), fmt.at_most(fmt.money(r.cost_usd), r.unknown_usage_calls)]
             for r in rows]
    return [Para("The estimate made when the run started (lens plan CONFIG) beside what it "
                 "spent; a run that stopped early spent less than its whole-run estimate:",
                 "meta"),
            Table(["role", "arm", "calls (est.)", "calls", "tokens (est.)", "tokens",
                   "estimate / actual", "cost (est.)", "cost"], table, table_id="estimate")]
