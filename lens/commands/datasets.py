"""``lens datasets …``: validate (and, as they arrive, generate, stats, import) datasets."""

from __future__ import annotations

import argparse
from typing import Any

from lens.dataset import check_dataset_file


def register(sub: Any) -> None:
    p = sub.add_parser("datasets", help="validate, inspect and build datasets")
    dsub = p.add_subparsers(dest="datasets_command", metavar="ACTION", required=True)
    v = dsub.add_parser("validate", help="check LENS dataset files and list every problem")
    v.add_argument("paths", nargs="+", metavar="PATH")
    v.set_defaults(handler=_validate)


def _validate(args: argparse.Namespace) -> int:
    bad = 0
    for path in args.paths:
        problems = check_dataset_file(path)
        if problems:
            bad += 1
            print(f"{path}: {len(problems)} problem(s)")
            for pr in problems:
                print(f"  - {pr}")
        else:
            print(f"{path}: ok")
    return 2 if bad else 0
