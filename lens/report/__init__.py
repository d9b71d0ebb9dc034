"""Reports of a run: ``report.md``, a self-contained ``report.html``, ``summary.json`` and a
per-question ``questions.csv``. The runner calls :func:`write_reports` after scoring."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from lens.report.checks.parity import synthetic_prefixes
from lens.report.documents.csvout import csv_lines
from lens.report.documents.html import html_chunks
from lens.report.documents.markdown import render_markdown
from lens.report.foundations.data import RunData, load_run
from lens.report.foundations.shapes import ReportSummary
from lens.report.sections.memory_cost import memory_cost_section
from lens.report.sections.registry import Section, collect_sections, register_section_provider
from lens.report.sections.retrieval_section import retrieval_section
from lens.report.sections.write_side_section import write_side_section
from lens.report.summary import summarize
from lens.runs.store import staged_chunks

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
    run = load_run(run_dir)
    return write_run_reports(run, out_dir=out_dir, confidence=confidence)


def write_run_reports(run: RunData, *, out_dir: str | Path | None = None,
                      confidence: float = 0.95) -> ReportPaths:
    """Every file is written whole under a temporary name before any replaces its old version:
    a failure leaves no half-written report, nor a new report beside an old one. The per-question
    parts (the HTML's drill-downs, the CSV's rows) are written as they are produced."""
    target = Path(out_dir) if out_dir is not None else run.root
    sections = collect_sections(run)
    summary = summarize(run, confidence=confidence, sections=sections)
    paths = ReportPaths(markdown=target / "report.md", html=target / "report.html",
                        summary=target / "summary.json", csv=target / "questions.csv",
                        summary_data=summary)
    files: list[tuple[Path, Callable[[], Iterable[str]]]] = [
        (paths.markdown, lambda: [render_markdown(summary, sections)]),
        (paths.html, lambda: html_chunks(summary, run.page_rows(), len(run.rows), sections)),
        (paths.summary, lambda: [json.dumps(summary.model_dump(mode="json", by_alias=True),
                                            indent=2, ensure_ascii=False, allow_nan=False)]),
        (paths.csv, lambda: csv_lines(run.page_rows(), summary.metrics,
                                      synthetic_prefixes(run)))]
    staged: list[tuple[Path, Path]] = []
    try:
        for path, chunks in files:
            staged.append((staged_chunks(path, chunks()), path))
    except BaseException:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, path in staged:
        os.replace(tmp, path)
    return paths
