"""``lens run CONFIG [--out DIR] [--resume RUN_DIR]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lens.pipeline import execute
from lens.progress import RichRunProgress


def register(sub: Any) -> None:
    p = sub.add_parser("run", help="run an evaluation from a YAML config")
    p.add_argument("config", help="path of the run config (YAML)")
    p.add_argument("--out", type=Path, help="parent folder of the run directory "
                   "(default: the config's out_dir)")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR",
                   help="continue an interrupted run; only unfinished units run again")
    p.add_argument("--retry-errors", action="store_true",
                   help="with --resume, also re-run questions that ended in an error")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    if args.retry_errors and args.resume is None:
        print("lens: --retry-errors needs --resume RUN_DIR", file=sys.stderr)
        return 2
    if args.quiet:
        outcome = execute(args.config, out=args.out, resume=args.resume,
                          retry_errors=args.retry_errors)
    else:
        with RichRunProgress() as progress:
            outcome = execute(args.config, out=args.out, resume=args.resume,
                              retry_errors=args.retry_errors, progress=progress)
    s = outcome.summary
    rate = (s.answered + s.errored) / s.wall_s if s.wall_s else 0.0
    print(f"run directory: {outcome.run_dir}")
    print(f"questions: {s.questions} ({s.answered} answered now, {s.errored} errored, "
          f"{s.skipped} done before) in {s.wall_s:.1f} s, {rate:.2f} questions/s")
    for failure in s.failures:
        print(f"unit failed: {failure}", file=sys.stderr)
    return 0
