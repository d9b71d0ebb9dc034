"""The Markdown report: the blocks of :mod:`lens.report.layout` rendered as Markdown (the same
content as the HTML report, minus plots and transcripts)."""

from __future__ import annotations

from collections.abc import Sequence

import lens.report.layout as layout
from lens.report.document import to_markdown
from lens.report.sections import Section
from lens.report.shapes import ReportSummary


def render_markdown(summary: ReportSummary, sections: Sequence[Section] = ()) -> str:
    return to_markdown(layout.report_blocks(summary, sections))
