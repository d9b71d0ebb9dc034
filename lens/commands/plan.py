"""``lens plan --baseline P --delta D [--power 0.8]``: how many questions a result needs."""

from __future__ import annotations

import argparse
import json
from typing import Any

from lens.errors import UserError
from lens.stats import margin_table, planning_table, sample_size_two_proportions

REFERENCE_DELTAS = (0.05, 0.10, 0.15)
MARGIN_SIZES = (20, 50, 100, 200, 500, 1000)


def register(sub: Any) -> None:
    p = sub.add_parser("plan", help="sample sizes and margins of error for planning a run")
    p.add_argument("--baseline", type=float, required=True,
                   help="the rate you expect from the baseline arm, e.g. 0.85")
    p.add_argument("--delta", type=float, required=True,
                   help="the smallest difference worth detecting, e.g. 0.05")
    p.add_argument("--power", type=float, default=0.8, help="statistical power (default 0.8)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="two-sided significance level (default 0.05)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(handler=_plan)


def _check(args: argparse.Namespace) -> None:
    if not 0 < args.baseline < 1:
        raise UserError(f"--baseline {args.baseline}: must be a rate strictly between 0 and 1")
    if not 0 < args.delta < 1:
        raise UserError(f"--delta {args.delta}: must be strictly between 0 and 1")
    if not (0 < args.baseline + args.delta < 1 or 0 < args.baseline - args.delta < 1):
        raise UserError(f"--delta {args.delta}: baseline ± delta leaves (0, 1)")
    if not 0 < args.power < 1:
        raise UserError(f"--power {args.power}: must be strictly between 0 and 1")
    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha {args.alpha}: must be strictly between 0 and 1")


def _plan(args: argparse.Namespace) -> int:
    _check(args)
    rows = planning_table(args.baseline, [args.delta], alpha=args.alpha, power=args.power)
    # The reference table of the LENS method sets each arm against a 90% system.
    reference = [{"low": round(0.9 - d, 6), "high": 0.9, "delta": d,
                  "per_arm": sample_size_two_proportions(0.9 - d, 0.9, alpha=args.alpha,
                                                         power=args.power)}
                 for d in REFERENCE_DELTAS]
    needed = max((int(r["per_arm"]) for r in rows), default=0)
    sizes = sorted({*MARGIN_SIZES, needed} - {0})
    margins = margin_table(args.baseline, sizes)
    if args.json:
        print(json.dumps({"alpha": args.alpha, "power": args.power, "rows": rows,
                          "reference": reference, "margins": margins}, indent=2))
        return 0
    print(f"Questions per arm to detect a difference (two-sided alpha {args.alpha:g}, "
          f"power {args.power:.0%}):")
    print(f"  {'baseline':>8}  {'other':>6}  {'delta':>6}  {'per arm':>8}")
    for r in rows:
        print(f"  {r['baseline']:>8.2f}  {r['other']:>6.2f}  {r['delta']:>6.2f}  "
              f"{r['per_arm']:>8d}")
    print("\nReference (against a 90% system):")
    for r in reference:
        print(f"  {r['delta'] * 100:>4.0f} points ({r['low']:.0%} vs {r['high']:.0%}): "
              f"{r['per_arm']} per arm")
    print(f"\nMargin of error (Wilson, 95%) at a rate of {args.baseline:.2f}:")
    print(f"  {'n':>6}  {'margin':>8}")
    for m in margins:
        print(f"  {int(m['n']):>6d}  ±{m['margin'] * 100:>5.1f} pts")
    return 0
