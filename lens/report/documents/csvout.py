"""The per-question CSV: one row per question record, joined with its scores."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping, Sequence

from lens.core.visible import visible
from lens.report.foundations.context import row_context
from lens.report.foundations.data import QuestionRow
from lens.runs.records import is_scored

BASE_COLUMNS = ["key", "adapter", "scope_id", "repeat", "question_id", "question_type",
                "checkpoint", "status", "tool_calls", "tool_errors", "search_results",
                "agent_tokens", "cost_usd",
                # Model calls whose reply gave no readable usage: their tokens and cost above are
                # the most each call can have cost, not what it cost.
                "usage_unknown_calls", "stop_reason", "budget_compliant", "wall_s",
                "cited_refs", "error",
                # What the memory handed the agent (lens/report/checks/parity.py).
                "context_chars", "context_tokens", "standing_context_chars",
                "search_scope_share"]


def _safe(text: str) -> str:
    """Neutralise spreadsheet formulas in free text (a cell starting with = + - @)."""
    text = visible(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def questions_csv(rows: Sequence[QuestionRow], metrics: Sequence[str],
                  synthetic_prefixes: Mapping[str, Sequence[str]] | None = None) -> str:
    """``synthetic_prefixes``: each unit's declared synthetic ref prefixes (refs that name no
    episode, left out of the search scope share)."""
    return "".join(csv_lines(rows, metrics, synthetic_prefixes))


def csv_lines(rows: Iterable[QuestionRow], metrics: Sequence[str],
              synthetic_prefixes: Mapping[str, Sequence[str]] | None = None) -> Iterator[str]:
    """:func:`questions_csv` a line at a time (``rows`` may be read one at a time)."""
    prefixes = synthetic_prefixes or {}
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")

    def line(cells: Sequence[object]) -> str:
        writer.writerow(cells)
        text = buf.getvalue()
        buf.seek(0)
        buf.truncate()
        return text

    yield line([*BASE_COLUMNS, *metrics])
    for row in rows:
        r = row.record
        cost = row.cost_usd
        ctx = row_context(row, prefixes)
        searched = any(c.name == "memory_search" for c in r.tool_calls)
        share = ctx.scope_share if searched else None
        # A failed question has no session, so no context to measure (blank, not 0).
        context = ([ctx.chars, ctx.tokens, ctx.standing_chars] if is_scored(r.status)
                   else ["", "", ""])
        yield line([
            _safe(r.key), _safe(r.adapter), _safe(r.scope_id), r.repeat, _safe(r.question_id),
            _safe(row.question_type), r.checkpoint, r.status, row.tool_calls,
            row.tool_errors, row.search_results, row.agent_tokens,
            "" if cost is None else f"{cost:.6f}",
            sum(1 for c in r.model_calls if c.usage_unknown),
            _safe(r.budget.stop_reason) if r.budget else "",
            "" if r.budget is None else int(r.budget.compliant), f"{r.wall_s:.3f}",
            _safe(" ".join(r.cited_refs)), _safe(r.error or ""),
            *context, "" if share is None else f"{share:.4f}",
            *("" if (v := row.metric(m)) is None else f"{v:.6f}" for m in metrics),
        ])
