"""The GoldEvidence section of a lens report, from ``RUN_DIR/goldevidence/grades.json``.

Declared in lens's ``lens.report_sections`` entry-point group as :func:`section`. A run graded
before (by the scenario's scoring hook or ``run_job``) is read; any other GoldEvidence run is
graded in memory, never written to: reporting does not change a run.
The section is one list of lens report blocks (:func:`blocks`) that lens renders to Markdown and
to HTML, so both formats say the same thing. ``section_markdown(run_dir)`` and
``section_html(run_dir)`` return None for a run that is not a GoldEvidence run, so a report can
call them on any run directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from goldevidence.lensrun import GradesReport, grade_run, is_goldevidence_run
from lens.plugin_api import (
    Block,
    Heading,
    Para,
    RunData,
    Section,
    Table,
    to_html,
    to_markdown,
)

SHOWN = ("value_acc", "exact_acc", "answer_correct_given_selected", "cite_f1",
         "entailment_rate", "support_bloat", "twin_consistency", "twin_flip_rate", "instr_gap",
         "instr_override_rate", "instr_conflict_present_rate", "instr_conflict_present_count",
         "state_integrity_rate", "gold_present_rate", "selection_rate",
         "accuracy_when_gold_present")


def load_grades(run_dir: str | Path) -> GradesReport | None:
    root = Path(run_dir)
    path = root / "goldevidence" / "grades.json"
    if path.is_file():
        grades: GradesReport = json.loads(path.read_text(encoding="utf-8"))
        return grades
    manifest = root / "manifest.json"
    if not manifest.is_file():
        return None
    if not is_goldevidence_run(json.loads(manifest.read_text(encoding="utf-8"))):
        return None
    return grade_run(root, write=False)


def _fmt(v: Any) -> str:
    return "unknown" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


def _table(report: GradesReport) -> tuple[list[str], list[list[str]]]:
    head = ["adapter", "cell", "n", "value_acc [95% CI]", *SHOWN[1:]]
    body = []
    for g in [*report.get("pooled", []), *report["groups"]]:
        m = g["metrics"]
        lo, hi = g["intervals"]["value_acc"]
        cell = " ".join(f"{k}={v}" for k, v in g["cell"].items())
        body.append([g["adapter"], cell, str(m["n"]),
                     f"{_fmt(m['value_acc'])} [{_fmt(lo)}, {_fmt(hi)}]",
                     *[_fmt(m.get(k)) for k in SHOWN[1:]]])
    return head, body


INTRO = ("Decomposition: gold_present_rate → selection_rate → accuracy_when_gold_present → "
         "value_acc; intervals are Wilson 95%. answer_correct_given_selected is value_acc on "
         "rows citing every gold id; instr_conflict_present_rate/count are the instruction rows "
         "whose injected value differs from gold (among those where both are known). 'unknown' "
         "means the metric has no rows to stand on.")


def blocks(report: GradesReport) -> list[Block]:
    """The section as lens report blocks: one content, rendered to Markdown and to HTML."""
    head, body = _table(report)
    out: list[Block] = [Heading("GoldEvidence"),
                        Para(f"Agent model: {report['agent_model']}. {INTRO}"),
                        Table(head, body, table_id="goldevidence")]
    errs = {g["adapter"]: g["metrics"]["errors"] for g in report["groups"] if
            g["metrics"]["errors"]}
    if errs:
        out.append(Para("Per-row prediction errors (counted, not fatal): " +
                        "; ".join(f"{a}: {e}" for a, e in errs.items())))
    return out


def section_markdown(run_dir: str | Path) -> str | None:
    report = load_grades(run_dir)
    return None if report is None else to_markdown(blocks(report))


def section_html(run_dir: str | Path) -> str | None:
    report = load_grades(run_dir)
    return None if report is None else to_html(blocks(report))


def section(run: RunData) -> Section | None:
    """The report section (a ``lens.report_sections`` provider); None for other runs."""
    report = load_grades(run.root)
    if report is None:
        return None
    parts = blocks(report)
    return Section(id="goldevidence", title="GoldEvidence", markdown=to_markdown(parts),
                   html=to_html(parts), data=dict(report))
