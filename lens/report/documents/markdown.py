"""The Markdown report: the blocks of :mod:`lens.report.documents.layout` rendered as Markdown
(the same content as the HTML report, minus plots and transcripts)."""

from __future__ import annotations

from collections.abc import Sequence

import lens.report.documents.layout as layout
from lens.report.documents.document import to_markdown
from lens.report.foundations.shapes import ReportSummary
from lens.report.sections.registry import Section


def render_markdown(summary: ReportSummary, sections: Sequence[Section] = ()) -> str:
    return to_markdown(layout.report_blocks(summary, sections))
