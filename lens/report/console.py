"""The short result printed in the terminal after ``lens run`` and ``lens report``.

Everything here is read from the report's own summary (the numbers of report.md and
summary.json), so the terminal never shows a figure the report does not.
"""

from __future__ import annotations

from pathlib import Path

import lens.report.documents.fmt as fmt
import lens.scoring.metrics as registry
from lens.core.visible import visible
from lens.report.documents.document import STATUS_LABEL
from lens.report.documents.verdict_lines import verdict_lines
from lens.report.foundations.shapes import Check, ReportSummary


def headline_metrics(summary: ReportSummary) -> list[str]:
    """The metrics a reader looks at first (the registry's ``headline``, after the composite;
    docs/reports.md); the others are in the report."""
    shown = [m for m in registry.headline() if m in summary.metrics]
    if summary.primary_metric and summary.primary_metric not in shown:
        shown.insert(0, summary.primary_metric)
    return shown


def judge_range(summary: ReportSummary, adapter: str, metric: str) -> str:
    """``  judges 0.412–0.655 (2)``: a judged metric's range over the panel, when there is one."""
    panel = summary.judges
    r = panel.ranges.get(adapter, {}).get(metric) if panel else None
    if r is None:
        return ""
    if r.low is None or r.high is None:
        return f"  judges: unknown under some of {len(r.by_judge)}"
    return f"  judges {r.low:.3f}–{r.high:.3f} ({len(r.by_judge)})"


def flagged(summary: ReportSummary) -> list[Check]:
    """The checklist's FAIL lines, then its WARN lines, then the rows that cannot apply to
    this run (each says why: one scope, a control arm)."""
    return [c for status in ("fail", "warn", "na") for c in summary.checklist
            if c.status == status]


def checklist_counts(summary: ReportSummary) -> str:
    counts = {k: sum(1 for c in summary.checklist if c.status == k)
              for k in ("pass", "warn", "fail", "na")}
    na = f", {counts['na']} not applicable" if counts["na"] else ""
    return f"{counts['pass']} pass, {counts['warn']} warn, {counts['fail']} fail{na}"


def _short(text: str, limit: int = 160) -> str:
    text = visible(" ".join(text.split()))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def result_lines(summary: ReportSummary, html: Path) -> list[str]:
    """Per adapter its headline metrics with intervals and n, the paired verdicts on the primary
    metric, the checklist's FAIL and WARN lines, and where the report is."""
    metrics = headline_metrics(summary)
    width = max([len(m) for m in metrics] + [0]) + 2
    lines = [f"result ({summary.confidence:.0%} intervals, n = questions with a value):"]
    if not summary.adapters:
        lines.append("  no questions recorded")
    for label, ad in summary.adapters.items():
        counts = f"{ad.questions} questions"
        if ad.empty_answers or ad.errored or ad.no_memory:
            counts += f": {ad.empty_answers} empty answers, {ad.errored} errored"
            if ad.no_memory:
                counts += f", {ad.no_memory} answered without memory"
        if ad.usage.tool_errors:
            counts += (f"; {ad.usage.tool_errors} tool errors in "
                       f"{ad.usage.questions_with_tool_errors} questions, first: "
                       f"{_short(ad.usage.first_tool_error or '')}")
        lines.append(f"  {visible(label)} ({counts})")
        lines.extend(f"    {m:<{width}}{fmt.est(ad.metrics.get(m))}"
                     f"{judge_range(summary, label, m)}" for m in metrics)
    if not metrics and summary.adapters:
        lines.append("    no metrics: the run was not scored (lens score RUN_DIR)")
    lines.extend(verdict_lines(summary))
    lines.append(f"pre-flight: {checklist_counts(summary)}")
    lines.extend(f"  {STATUS_LABEL[c.status]:<4}  {visible(c.title)}: "
                 f"{visible(fmt.check_value(c))}" for c in flagged(summary))
    lines.append(f"report: {visible(html)}")
    lines.append(f"open it: {html.resolve().as_uri()}")
    return lines


def one_line(summary: ReportSummary, html: Path) -> str:
    """The result in a single line (``--quiet``): primary metric per adapter, the checklist's
    counts and the report's address."""
    pm = summary.primary_metric
    parts = []
    for label, ad in summary.adapters.items():
        est = ad.metrics.get(pm) if pm else None
        name = visible(label)
        parts.append(f"{name} {pm} {fmt.est(est)}" if pm else f"{name} not scored")
    fails = sum(1 for c in summary.checklist if c.status == "fail")
    warns = sum(1 for c in summary.checklist if c.status == "warn")
    parts.append(f"checklist {fails} FAIL, {warns} WARN")
    parts.append(html.resolve().as_uri())
    return " · ".join(parts)
