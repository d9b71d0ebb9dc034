"""Reports of a run: ``report.md``, a self-contained ``report.html``, ``summary.json`` and a
per-question ``questions.csv``. The runner calls :func:`write_reports` after scoring."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from lens.report.checks.parity import synthetic_prefixes
from lens.report.documents.csvout import questions_csv
from lens.report.documents.html import render_html
from lens.report.documents.markdown import render_markdown
from lens.report.foundations.data import RunData, load_run
from lens.report.foundations.shapes import ReportSummary
from lens.report.sections.memory_cost import memory_cost_section
from lens.report.sections.registry import Section, collect_sections, register_section_provider
from lens.report.sections.retrieval_section import retrieval_section
from lens.report.sections.write_side_section import write_side_section
from lens.report.summary import summarize
from lens.runs.store import atomic_write_text

# lens's own extra sections: memory cost and latency, retrieval quality.
register_section_provider(memory_cost_section)
register_section_provider(retrieval_section)
# What the memory wrote, for arms that list their memory.
register_section_provider(write_side_section)

REPORT_FILES = ("report.md", "report.html", "summary.json", "questions.csv")

__all__ = ["REPORT_FILES", "ReportPaths", "RunData", "Section", "build_summary", "load_run",
           "register_section_provider", "write_reports"]


@dataclass(frozen=True)
class ReportPaths:
    markdown: Path
    html: Path
    summary: Path
    csv: Path
    summary_data: ReportSummary


def build_summary(run_dir: str | Path, *, confidence: float = 0.95) -> ReportSummary:
    return summarize(load_run(run_dir), confidence=confidence)


def write_reports(run_dir: str | Path, *, out_dir: str | Path | None = None,
                  confidence: float = 0.95) -> ReportPaths:
    """Compute everything first, then write each file atomically: a failure leaves no
    half-written report behind."""
    run = load_run(run_dir)
    return write_run_reports(run, out_dir=out_dir, confidence=confidence)


def write_run_reports(run: RunData, *, out_dir: str | Path | None = None,
                      confidence: float = 0.95) -> ReportPaths:
    target = Path(out_dir) if out_dir is not None else run.root
    sections = collect_sections(run)
    summary = summarize(run, confidence=confidence, sections=sections)
    md = render_markdown(summary, sections)
    page = render_html(summary, run.rows, sections)
    data = json.dumps(summary.model_dump(mode="json", by_alias=True), indent=2,
                      ensure_ascii=False, allow_nan=False)
    table = questions_csv(run.rows, summary.metrics, synthetic_prefixes(run))
    paths = ReportPaths(markdown=target / "report.md", html=target / "report.html",
                        summary=target / "summary.json", csv=target / "questions.csv",
                        summary_data=summary)
    target.mkdir(parents=True, exist_ok=True)
    for path, text in ((paths.markdown, md), (paths.html, page), (paths.summary, data),
                       (paths.csv, table)):
        atomic_write_text(path, text)
    return paths
