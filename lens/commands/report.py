"""``lens report RUN_DIR``: write report.md, report.html, summary.json and questions.csv."""

from __future__ import annotations

import argparse
import webbrowser
from pathlib import Path
from typing import Any

from lens.core.errors import UserError
from lens.core.visible import visible
from lens.report import write_reports
from lens.report.console import result_lines


def register(sub: Any) -> None:
    p = sub.add_parser("report", help="write the reports of a run (markdown, HTML, JSON, CSV)")
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run directory")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="write the reports here instead of into RUN_DIR")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="confidence level of every interval (default 0.95)")
    p.add_argument("--open", action="store_true",
                   help="open report.html in the default web browser")
    p.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    if not 0.5 <= args.confidence < 1:
        raise UserError(f"--confidence {args.confidence}: must be in [0.5, 1)")
    paths = write_reports(args.run_dir, out_dir=args.out, confidence=args.confidence)
    for path in (paths.markdown, paths.html, paths.summary, paths.csv):
        print(f"wrote {visible(path)}")
    for line in result_lines(paths.summary_data, paths.html):
        print(line)
    if args.open and not webbrowser.open(paths.html.resolve().as_uri()):
        print("lens: no web browser could be started; open the file:// address above")
    return 0
