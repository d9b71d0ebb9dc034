"""``lens leaderboard longmemeval-v2 RUN_DIR --out DIR``: a scored run as LongMemEval-V2's
leaderboard takes it (one run folder per adapter and domain, for its submission step 1)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("leaderboard",
                       help="write a scored run in a published leaderboard's submission format")
    p.add_argument("benchmark", choices=["longmemeval-v2"],
                   help="the leaderboard (longmemeval-v2)")
    p.add_argument("run_dir", type=Path, help="a run scored under the benchmark's protocol")
    p.add_argument("--out", type=Path, required=True,
                   help="folder to write the run folders into (<method>_<domain>_<tier>)")
    p.add_argument("--method", default=None,
                   help="the method's name on the leaderboard (default: the adapter's label)")
    p.add_argument("--force", action="store_true", help="replace folders that exist")
    p.set_defaults(handler=_leaderboard)


def _leaderboard(args: argparse.Namespace) -> int:
    from lens.runs.store import RunStore
    from lens.scoring.protocols.longmemeval_v2 import reader_note
    from lens.scoring.protocols.longmemeval_v2_submission import write_submission

    folders = write_submission(args.run_dir, args.out, method=args.method, force=args.force)
    for folder in folders:
        print(f"wrote {folder}")
    print(reader_note(RunStore.open(args.run_dir).manifest().as_dict()))
    return 0
