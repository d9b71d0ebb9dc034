"""``lens report RUN_DIR``: write report.md, report.html, summary.json and questions.csv."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lens.errors import UserError
from lens.report import write_reports
from lens.visible import visible


def register(sub: Any) -> None:
    p = sub.add_parser("report", help="write the reports of a run (markdown, HTML, JSON, CSV)")
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run directory")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="write the reports here instead of into RUN_DIR")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="confidence level of every interval (default 0.95)")
    p.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    if not 0.5 <= args.confidence < 1:
        raise UserError(f"--confidence {args.confidence}: must be in [0.5, 1)")
    paths = write_reports(args.run_dir, out_dir=args.out, confidence=args.confidence)
    s = paths.summary_data
    for path in (paths.markdown, paths.html, paths.summary, paths.csv):
        print(f"wrote {visible(path)}")
    counts = {k: sum(1 for c in s.checklist if c.status == k) for k in ("pass", "warn", "fail")}
    print(f"pre-flight: {counts['pass']} pass, {counts['warn']} warn, {counts['fail']} fail")
    for c in s.checklist:
        if c.status != "pass":
            print(f"  {c.status.upper()}: {visible(c.title)}: {visible(c.value)}")
    pm = s.primary_metric
    if pm:
        for name, ad in s.adapters.items():
            label = visible(name)
            est = ad.metrics[pm]
            if est.mean is None:
                print(f"{label}: {pm} unknown")
            elif est.low is None or est.high is None:
                print(f"{label}: {pm} {est.mean:.3f} (no interval) n={est.n}")
            else:
                print(f"{label}: {pm} {est.mean:.3f} [{est.low:.3f}, {est.high:.3f}] "
                      f"n={est.n}")
    return 0
