"""``lens compare RUN_DIR… [--arms A,B] [--baseline ARM] [--force]``: paired comparison of
runs under one condition."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from lens.claims.output import claims_condition, is_claims_dir
from lens.core.errors import UserError
from lens.core.redact import shown
from lens.core.safenames import folder_problems
from lens.data.config import MIN_ALPHA
from lens.report.arm_selection import parse_names
from lens.report.figures.sequential import SequentialSettings
from lens.report.run_comparison import compare_runs
from lens.runs.store import atomic_write_text
from lens.stats.sequential import METHODS


def register(sub: Any) -> None:
    p = sub.add_parser("compare", help="compare runs (or the adapters of one run) pairwise")
    p.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR",
                   help="run directories; the same adapter in two runs under one condition "
                        "is one arm (name both with --arms to compare them)")
    p.add_argument("--arms", metavar="A,B,...",
                   help="compare only these arms, every pair of them (the confirmatory family "
                        "is exactly these pairs); an arm is named by its label, or RUN:label "
                        "where several runs have it (RUN: the run id or directory name)")
    p.add_argument("--baseline", metavar="ARM",
                   help="compare this arm against each other arm (of --arms when given) "
                        "instead of every pair")
    p.add_argument("--force", action="store_true",
                   help="compare runs whose conditions differ; every table is labelled "
                        "'not comparable: <fields>'")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="also write compare.md, compare.html and compare.json into DIR")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="confidence level of every interval (default 0.95)")
    p.add_argument("--sequential", action="store_true",
                   help="add where a run answering scope by scope in the seeded order would "
                        "have settled the primary metric's verdicts (anytime-valid)")
    p.add_argument("--margin", type=float, default=0.0, metavar="M",
                   help="with --sequential: equivalence margin on the primary metric's Δ "
                        "(default 0: equivalence is never declared)")
    p.add_argument("--look-every", type=int, default=1, metavar="K",
                   help="with --sequential: read the verdicts every K scope blocks (default 1)")
    p.add_argument("--sequential-method", choices=METHODS, default="betting",
                   help="with --sequential: the confidence sequence (default betting: valid "
                        "for any scope differences within [-1, 1]; symmetric assumes "
                        "symmetric ones, t-mixture normal ones; see docs/reports.md)")
    p.set_defaults(handler=_compare)


def _compare(args: argparse.Namespace) -> int:
    refuse_claims(args.run_dirs)
    problems = []
    if not (math.isfinite(args.confidence) and 0 < args.confidence < 1
            and 1 - args.confidence >= MIN_ALPHA):
        problems.append(f"--confidence {args.confidence}: must be a level between 0 and 1 "
                        "(e.g. 0.95)")
    if args.arms is not None and not parse_names(args.arms):
        problems.append("--arms: name at least one arm (labels, or RUN:label, separated by "
                        "commas)")
    if args.out is not None:
        problems += folder_problems(args.out, "--out")
    if problems:
        raise UserError(problems)
    sequential = None
    if args.sequential:
        problems = []
        if not 0 <= args.margin < 1:
            problems.append(f"--margin {args.margin}: must be at least 0 and below 1")
        if args.look_every < 1:
            problems.append(f"--look-every {args.look_every}: must be at least 1")
        if problems:
            raise UserError(problems)
        sequential = SequentialSettings(alpha=1 - args.confidence, margin=args.margin,
                                        look_every=args.look_every,
                                        method=args.sequential_method)
    result = compare_runs(args.run_dirs, force=args.force, confidence=args.confidence,
                          sequential=sequential, arms=parse_names(args.arms),
                          baseline=args.baseline)
    if args.out is not None:
        atomic_write_text(args.out / "compare.md", result.markdown)
        atomic_write_text(args.out / "compare.html", result.html)
        atomic_write_text(args.out / "compare.json",
                          json.dumps(result.summary.model_dump(mode="json"), indent=2,
                                     ensure_ascii=False, default=str))
    print(result.markdown, end="")
    return 0


def refuse_claims(dirs: list[Path]) -> None:
    """A re-scored published claim is not a run: its answers are a publisher's file, scored
    under the conditions it records, so it is never set beside a run's figures."""
    claims = [d for d in dirs if is_claims_dir(d)]
    if claims:
        raise UserError([f"{shown(d, 300)}: a re-scored published claim (lens claims check), "
                         f"not a run: {shown(claims_condition(d), 600)}. Its figures are not "
                         "comparable with a run's (another system's answers, another dataset "
                         "file, other scorers); compare claims by checking both files with "
                         "the same scorers"
                         for d in claims])
