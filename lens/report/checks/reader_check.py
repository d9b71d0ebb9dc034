"""The checklist row of the fixed reader (``agent.mode: fixed_reader``, lens/runner/reader.py):
how many results its one search returned against its ``top_k``, and where its history was cut.

A memory that returns fewer results than ``top_k`` gives the reader less than the setting says
(``longmemeval_bm25`` returns at most its ``max_results``, 10 by default, whatever the reader
asks for): the row WARNs and counts the questions, so a figure under "top 50" is never read as
one when the memory returned 10. A control arm returning nothing is expected. The row also says
which cut applied: the reader model's context window less the answer and 1,000 tokens (the
official generation's rule, lens's default), or ``agent.budget.max_payload_bytes`` set in the
config. Absent for a run of the tool-using agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lens.data.reader_prompts import LLAMA_N_CTX, OFFICIAL_MARGIN_TOKENS, counted_by, window_of
from lens.memory.oracle import FLOOR
from lens.report.checks.parity import adapter_names
from lens.report.foundations.data import RunData
from lens.report.foundations.shapes import Check, Status

CONTROL = "expected for a control arm"


def _agent(run: RunData) -> dict[str, Any]:
    config = run.manifest.get("config")
    agent = config.get("agent") if isinstance(config, dict) else None
    return agent if isinstance(agent, dict) else {}


def window_text(run: RunData, tokens: int, window: int) -> str:
    """The window's rule as this run applied it, in words."""
    agent = _agent(run)
    model = str(agent.get("model", ""))
    options = agent.get("options")
    n_ctx = options.get("n_ctx", LLAMA_N_CTX) if isinstance(options, dict) else LLAMA_N_CTX
    budget = agent.get("budget")
    configured = budget.get("context_window") if isinstance(budget, dict) else None
    _, source = window_of(model, n_ctx if isinstance(n_ctx, int) else None,
                          configured if isinstance(configured, int) else None)
    answer = window - tokens - OFFICIAL_MARGIN_TOKENS
    return (f"{tokens:,} tokens (the context window {window:,} less {answer:,} for the answer "
            f"and {OFFICIAL_MARGIN_TOKENS:,}; window: {source}; tokens {counted_by(model)})")


def _arm(run: RunData, label: str, control: bool) -> tuple[Status, str]:
    rows = [r.record for r in run.rows_for(label)]
    searches = [(r, c) for r in rows for c in r.tool_calls[:1] if c.name == "memory_search"]
    fewer = []
    top_k = None
    for _, call in searches:
        limit = call.arguments.get("limit") if isinstance(call.arguments, dict) else None
        if isinstance(limit, int):
            top_k = limit
            if call.ok and call.result_count < limit:
                fewer.append(call.result_count)
    parts = []
    status: Status = "pass"
    if top_k is not None and fewer:
        most = max(fewer)
        parts.append(f"memory returned fewer results than top_k ({top_k}) on {len(fewer)} of "
                     f"{len(searches)} questions (at most {most})")
        if control and most == 0:
            parts[-1] += f" ({CONTROL})"
            status = "na"
        else:
            status = "warn"
    elif top_k is not None:
        parts.append(f"top_k ({top_k}) results on every question")
    cut = sum(1 for _, c in searches if c.truncated)
    budgets = [r.budget for r in rows if r.budget is not None]
    limits = budgets[0].limits if budgets else {}
    if "max_history_tokens" in limits:
        rule = window_text(run, int(limits["max_history_tokens"]),
                           int(limits.get("context_window", 0)))
    elif "max_payload_bytes" in limits:
        rule = (f"{int(limits['max_payload_bytes']):,} bytes (agent.budget.max_payload_bytes, "
                "set in the config)")
    else:
        rule = "unknown"
    parts.append(f"history cut on {cut} of {len(searches)} questions, at {rule}")
    return status, "; ".join(parts)


def check_fixed_reader(runs: Sequence[RunData]) -> Check | None:
    """WARN when a fixed reader's memory returned fewer results than ``top_k``; the row also
    says where the history was cut. None when no run is a fixed reader's."""
    readers = [run for run in runs if run.condition.get("answerer")]
    if not readers:
        return None
    parts: list[str] = []
    each: dict[str, Status] = {}
    for run in readers:
        names = adapter_names(run)
        for label in run.adapters:
            name = f"{run.run_id}:{label}" if len(runs) > 1 else label
            status, text = _arm(run, label, names.get(label) == FLOOR)
            each[name] = status
            parts.append(f"{name}: {text}")
    flagged = [n for n, s in each.items() if s == "warn"]
    return Check(
        id="fixed_reader_results", title="the fixed reader got top_k results",
        status="warn" if flagged else "pass", failing=flagged,
        value="; ".join(parts) or "no questions",
        detail="the fixed reader gives the model the top_k results of one search; a memory "
               "that returns fewer (its own limit, such as longmemeval_bm25's max_results, or "
               "all it holds) gives the reader less than the setting says, so a figure under "
               "this top_k is not the published setting's; the history is cut at the reader's "
               "context window less the answer's max_tokens and 1,000 tokens, as LongMemEval's "
               "generation cuts it, unless agent.budget.max_payload_bytes is set "
               "(docs/datasets.md, 'The fixed reader')")
