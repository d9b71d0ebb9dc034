"""``lens compare RUN_DIR RUN_DIR… [--force]``: paired comparison under one condition."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from lens.report.run_comparison import compare_runs
from lens.runs.store import atomic_write_text


def register(sub: Any) -> None:
    p = sub.add_parser("compare", help="compare runs (or the adapters of one run) pairwise")
    p.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR",
                   help="run directories; the first run's first adapter is the baseline")
    p.add_argument("--force", action="store_true",
                   help="compare runs whose conditions differ; every table is labelled "
                        "'not comparable: <fields>'")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="also write compare.md, compare.html and compare.json into DIR")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="confidence level of every interval (default 0.95)")
    p.set_defaults(handler=_compare)


def _compare(args: argparse.Namespace) -> int:
    result = compare_runs(args.run_dirs, force=args.force, confidence=args.confidence)
    if args.out is not None:
        atomic_write_text(args.out / "compare.md", result.markdown)
        atomic_write_text(args.out / "compare.html", result.html)
        atomic_write_text(args.out / "compare.json",
                          json.dumps(result.summary.model_dump(mode="json"), indent=2,
                                     ensure_ascii=False, default=str))
    print(result.markdown, end="")
    return 0
