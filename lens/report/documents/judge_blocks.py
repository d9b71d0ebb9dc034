"""The "Judges" part of a run report: each judged metric per judge with its range, and the
judges' agreement with each other (blocks of :mod:`lens.report.documents.document`)."""

from __future__ import annotations

import lens.report.documents.fmt as fmt
from lens.report.documents.document import Block, Bullets, Heading, Para, Table
from lens.report.foundations.judge_shapes import JudgePanelOut

SENSITIVITY = (
    "Every judged metric under each judge of the panel (a judge is a model and a prompt "
    "version), and its range over them. The headline numbers are the first judge's; a "
    "comparison's verdict holds only when every judge gives it."
)


def _range(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "unknown (a judge left it unknown)"
    return f"{low:.3f}–{high:.3f} (spread {high - low:.3f})"


def judge_panel_blocks(panel: JudgePanelOut | None) -> list[Block]:
    if panel is None:
        return []
    out: list[Block] = [Heading("Judges")]
    if len(panel.judges) >= 2:
        out.append(Para(SENSITIVITY, "meta"))
        rows = []
        for adapter, metrics in panel.ranges.items():
            for metric, r in metrics.items():
                rows.append([adapter, metric,
                             *(fmt.num(r.by_judge.get(j)) for j in panel.judges),
                             _range(r.low, r.high)])
        out.append(Table(["adapter", "metric", *panel.judges, "range"], rows,
                         table_id="judge-ranges"))
        if panel.agreement:
            out.append(Para("Agreement between judges on the same judged items (pairwise "
                            "outcomes and fact grades): the share identical, and Cohen's "
                            "kappa (agreement beyond chance; unknown when undefined).", "meta"))
            out.append(Table(
                ["judge A", "judge B", "items", "agreement", "kappa", "by kind"],
                [[p.judge_a, p.judge_b, str(p.items), fmt.num(p.rate), fmt.num(p.kappa),
                  "; ".join(f"{k}: {fmt.num(v.get('rate'))} (κ {fmt.num(v.get('kappa'))}, "
                            f"n={v.get('items')})" for k, v in p.by_kind.items()) or "none"]
                 for p in panel.agreement], table_id="judge-agreement"))
    if panel.notes:
        out.append(Bullets(list(panel.notes), style="meta"))
    return out
