"""The estimate made before the run (``lens plan CONFIG``, kept in the manifest as
``cost_estimate``) beside what the run spent: per arm for the agent, in total for the judge."""

from __future__ import annotations

from typing import Any

import lens.report.documents.fmt as fmt
from lens.report.documents.document import Block, Para, Table
from lens.report.foundations.data import RunData
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
    judge_est = [0.0, 0.0, 0.0]
    judge_priced = True
    for arm in plan.get("arms") or []:
        name = str(arm.get("arm"))
        est = _spend(arm.get("agent"))
        if est is None:
            continue
        rows = run.rows_for(name) if name in run.adapters else []
        agent = [c for r in rows for c in r.record.model_calls if c.role == "agent"]
        tokens = sum(c.prompt_tokens + c.completion_tokens for c in agent)
        costs = [r.cost_usd for r in rows]
        known = [c for c in costs if c is not None]
        cost = sum(known) if rows and len(known) == len(costs) else None
        out.append(EstimateRow(role="agent", arm=name, est_calls=est[0], est_tokens=est[1],
                               est_cost_usd=est[2], calls=len(agent), tokens=tokens,
                               cost_usd=cost,
                               unknown_usage_calls=sum(1 for c in agent if c.usage_unknown)))
        judged = _spend(arm.get("judge"))
        if judged is not None:
            judge_est[0] += judged[0]
            judge_est[1] += judged[1]
            judge_priced = judge_priced and judged[2] is not None
            judge_est[2] += judged[2] or 0.0
    judge = usage.get("judge")
    if judge_est[0] and judge is not None:
        out.append(EstimateRow(
            role="judge", arm="all", est_calls=judge_est[0], est_tokens=judge_est[1],
            est_cost_usd=judge_est[2] if judge_priced else None, calls=judge.calls,
            tokens=judge.prompt_tokens + judge.completion_tokens, cost_usd=judge.cost_usd,
            unknown_usage_calls=judge.unknown_usage_calls))
    return out


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
