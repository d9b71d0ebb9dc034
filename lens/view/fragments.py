"""The report's and ``lens compare``'s content as HTML fragments, from lens.report's own blocks.

These run in the viewer's worker process (:mod:`lens.view.jobs`): on a large run the statistics
take seconds, and the pages must keep answering meanwhile.
"""

from __future__ import annotations

import lens.report  # noqa: F401  (registers lens's own report sections)
import lens.report.documents.layout as layout
from lens.core.errors import UserError
from lens.report.documents.document import to_html
from lens.report.documents.html import _plots
from lens.report.foundations.data import load_run
from lens.report.run_comparison import compare_blocks, compare_runs
from lens.report.sections.registry import collect_sections
from lens.report.summary import summarize

Outcome = tuple[bool, str]


def report_fragment(run_dir: str) -> Outcome:
    """(True, html) of the run report's blocks and plots, or (False, why not)."""
    try:
        run = load_run(run_dir)
        sections = collect_sections(run)
        summary = summarize(run, sections=sections)
        return True, to_html(layout.report_blocks(summary, sections, _plots(summary)))
    except UserError as exc:
        return False, why(exc)


def compare_fragment(run_dirs: list[str], arms: list[str] | None = None,
                     baseline: str | None = None) -> Outcome:
    """(True, html) of what ``lens compare`` says about these runs (the ``arms``, each against
    ``baseline`` when given), or (False, why not)."""
    try:
        return True, to_html(compare_blocks(compare_runs(run_dirs, arms=arms or (),
                                                         baseline=baseline).summary))
    except UserError as exc:
        return False, why(exc)


def why(exc: UserError) -> str:
    """The error's message and problems as plain text (escaped where it is shown)."""
    return "\n".join([str(exc.args[0]), *(f"  - {p}" for p in exc.problems)])


def warm_up() -> bool:
    """Nothing: importing this module in the worker is the point."""
    return True
