"""Each paired comparison's verdict on the primary metric, in one line: what the terminal prints
after the results and what the report puts right after them."""

from __future__ import annotations

import lens.report.documents.fmt as fmt
from lens.core.visible import visible
from lens.report.foundations.shapes import ReportSummary


def verdict_lines(summary: ReportSummary) -> list[str]:
    """Each paired comparison's verdict on the primary metric (the confirmatory one), as the
    report's "Paired comparisons" table gives it."""
    lines = []
    for comp in summary.comparisons:
        row = next((r for r in comp.rows if r.metric == summary.primary_metric), None)
        if row is None:
            continue
        caveat = (f" [{fmt.not_comparable_label(comp.not_comparable)}]"
                  if comp.not_comparable else "")
        # The verdict in words, then its reason on the same line (docs/reports.md, "Verdicts").
        lines.append(f"compared: {visible(comp.arm_b)} vs {visible(comp.arm_a)} on {row.metric}: "
                     f"Δ {fmt.est(row.delta)}, "
                     f"{visible(fmt.verdict(row, comp.arm_a, comp.arm_b))}: "
                     f"{visible(row.reason)}{caveat}")
    return lines
