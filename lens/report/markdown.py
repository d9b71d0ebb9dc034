"""The Markdown report: the blocks of :mod:`lens.report.layout` rendered as Markdown (the same
content as the HTML report, minus plots and transcripts)."""

from __future__ import annotations

from collections.abc import Sequence

import lens.report.layout as layout
from lens.report.document import (
    STATUS_LABEL,
    Raw,
    md_table,
    md_text,
    to_markdown,
    to_markdown_lines,
)
from lens.report.layout import HOW_TO_READ
from lens.report.sections import Section
from lens.report.shapes import Check, Comparison, ManyArms, ReportSummary

STATUS = STATUS_LABEL
__all__ = ["HOW_TO_READ", "STATUS", "checklist_md", "comparison_md", "many_arms_md",
           "render_markdown", "t", "table"]

t = md_text
table = md_table


def checklist_md(checks: Sequence[Check]) -> list[str]:
    return to_markdown_lines(layout.checklist(checks))


def comparison_md(comp: Comparison) -> list[str]:
    return to_markdown_lines(layout.comparison(comp))


def many_arms_md(items: Sequence[ManyArms], label: Sequence[str] = ()) -> list[str]:
    """Friedman's test and Kendall's W per metric (three or more arms)."""
    extra = [Raw(markdown="\n".join(label), formats=frozenset({"markdown"}))] if label else []
    return to_markdown_lines(layout.many_arms(items, extra))


def render_markdown(summary: ReportSummary, sections: Sequence[Section] = ()) -> str:
    return to_markdown(layout.report_blocks(summary, sections))
