"""The per-question CSV: one row per question record, joined with its scores."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from lens.report.data import QuestionRow
from lens.visible import visible

BASE_COLUMNS = ["key", "adapter", "scope_id", "repeat", "question_id", "question_type",
                "checkpoint", "status", "tool_calls", "tool_errors", "search_results",
                "agent_tokens", "cost_usd", "stop_reason", "budget_compliant", "wall_s",
                "cited_refs", "error"]


def _safe(text: str) -> str:
    """Neutralise spreadsheet formulas in free text (a cell starting with = + - @)."""
    text = visible(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def questions_csv(rows: Sequence[QuestionRow], metrics: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*BASE_COLUMNS, *metrics])
    for row in rows:
        r = row.record
        cost = row.cost_usd
        writer.writerow([
            _safe(r.key), _safe(r.adapter), _safe(r.scope_id), r.repeat, _safe(r.question_id),
            _safe(row.question_type), r.checkpoint, r.status, row.tool_calls,
            row.tool_errors, row.search_results, row.agent_tokens,
            "" if cost is None else f"{cost:.6f}",
            _safe(r.budget.stop_reason) if r.budget else "",
            "" if r.budget is None else int(r.budget.compliant), f"{r.wall_s:.3f}",
            _safe(" ".join(r.cited_refs)), _safe(r.error or ""),
            *("" if (v := row.metric(m)) is None else f"{v:.6f}" for m in metrics),
        ])
    return buf.getvalue()
