"""``lens plan --baseline P --delta D [--power 0.8] [--icc R --per-scope M]``: how many
questions, and how many scopes, a result needs; ``lens plan CONFIG``: what a run will cost."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TypedDict

from lens.commands.plan_from import read_run
from lens.commands.run import add_config_changes, overrides_of
from lens.core.errors import UserError
from lens.data.config import MIN_ALPHA
from lens.stats import (
    clustered_size,
    design_effect,
    margin_table,
    planning_table,
    sample_size_two_proportions,
)
from lens.stats.bounded import scopes_needed
from lens.stats.planning import MarginRow, PlanningRow

REFERENCE_DELTAS = (0.05, 0.10, 0.15)
MARGIN_SIZES = (20, 50, 100, 200, 500, 1000)


def register(sub: Any) -> None:
    p = sub.add_parser("plan", help="sample sizes and margins of error for planning a run")
    p.add_argument("config", nargs="?", default=None,
                   help="a run config: estimate its calls, tokens and cost per role and arm "
                        "instead (lens.flow.plan_cost)")
    p.add_argument("--baseline", type=float,
                   help="the rate you expect from the baseline arm, e.g. 0.85 (or --from RUN)")
    p.add_argument("--from", type=Path, dest="from_run", metavar="RUN_DIR",
                   help="read the baseline rate, the ICC and the questions per scope from a "
                        "finished run's summary.json (its first arm and primary metric, or "
                        "--arm and --metric); --baseline, --icc and --per-scope still win")
    p.add_argument("--arm", help="with --from: the arm whose numbers to read")
    p.add_argument("--metric", help="with --from: the metric to read (default the primary)")
    p.add_argument("--delta", type=float,
                   help="the smallest difference worth detecting, e.g. 0.05")
    p.add_argument("--power", type=float, default=0.8, help="statistical power (default 0.8)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="two-sided significance level (default 0.05)")
    p.add_argument("--icc", type=float, default=None,
                   help="intra-scope correlation of the metric (default 0: independent "
                        "questions); summary.json records it with each estimate ('icc'), "
                        "and --from RUN reads it from there")
    p.add_argument("--per-scope", type=int, default=None, metavar="M",
                   help="questions per scope; with it the answer is also given in scopes "
                        "(needed when --icc is above 0)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    # With CONFIG: price what `lens run CONFIG` with the same flags would run.
    add_config_changes(p)
    p.set_defaults(handler=_plan)


def _from_run(args: argparse.Namespace) -> None:
    """Fill what the user did not give from ``--from RUN``."""
    if args.from_run is None:
        _refuse_run_flags(args)
        return
    found = read_run(args.from_run, args.arm, args.metric)
    # With --json the plan alone goes to stdout.
    out = sys.stderr if args.json else sys.stdout
    print(found.describe(), file=out)
    if args.baseline is None:
        args.baseline = round(found.baseline, 4)
    if args.icc is None and found.icc is not None:
        args.icc = max(0.0, float(found.icc))
    if args.per_scope is None and found.per_scope is not None and args.icc:
        args.per_scope = found.per_scope
    if args.icc is None:
        print(f"  the run's ICC is unknown ({found.scopes} scope(s)): planned as independent "
              "questions; give --icc to plan for correlated ones", file=out)


def _refuse_run_flags(args: argparse.Namespace) -> None:
    """Without ``--from``: refuse the flags that read a run, and a missing ``--baseline``."""
    if args.arm is not None or args.metric is not None:
        raise UserError("--arm and --metric read a run: give --from RUN_DIR too")
    if args.baseline is None:
        raise UserError("give --baseline P (the rate you expect from the baseline arm), "
                        "or --from RUN_DIR to read it from a finished run")


# The smallest difference planned for: a smaller one needs more questions than any dataset has
# (1e-6 needs 10^12 per arm), and below it the two rates are one float.
MIN_DELTA = 1e-6


def _check(args: argparse.Namespace) -> None:
    missing = [f for f in ("baseline", "delta") if getattr(args, f) is None]
    if missing:
        raise UserError(f"lens plan: give {' and '.join('--' + f for f in missing)} (sample "
                        "sizes; --from RUN reads the baseline), or a run config (its cost)")
    if args.icc is None:
        args.icc = 0.0
    for holds, message in _rules(args):
        if not holds:
            raise UserError(message)


def _rules(args: argparse.Namespace) -> list[tuple[bool, str]]:
    """Each rule the sample-size flags keep, in the order they are checked, and the message
    when it is broken."""
    b, d, icc, m = args.baseline, args.delta, args.icc, args.per_scope
    return [
        (0 < b < 1, f"--baseline {b}: must be a rate strictly between 0 and 1"),
        (MIN_DELTA <= d < 1, f"--delta {d}: must be at least {MIN_DELTA:g} and below 1"),
        (0 < b + d < 1 or 0 < b - d < 1, f"--delta {d}: baseline ± delta leaves (0, 1)"),
        (0 < args.power < 1, f"--power {args.power}: must be strictly between 0 and 1"),
        (MIN_ALPHA <= args.alpha < 1,
         f"--alpha {args.alpha}: must be at least {MIN_ALPHA:g} and below 1"),
        (0 <= icc <= 1, f"--icc {icc}: must be within 0 and 1 (0: independent questions)"),
        (m is None or m >= 1, f"--per-scope {m}: must be at least 1"),
        (not icc > 0 or m is not None, f"--icc {icc}: give --per-scope M too (questions per "
         "scope); the design effect 1 + (M − 1)·ICC depends on it"),
    ]


def _in_scopes(scopes: int | None) -> str:
    return "" if scopes is None else f" in {scopes} scopes"


def _plan(args: argparse.Namespace) -> int:
    if args.config is not None:
        if args.baseline is not None or args.delta is not None or args.from_run is not None:
            raise UserError(f"lens plan {args.config}: a config's cost takes no --baseline, "
                            "--delta or --from (those plan sample sizes); give one or the other")
        return _plan_config(args)
    _refuse_config_changes(args)
    _from_run(args)
    _check(args)
    icc, m = args.icc, args.per_scope
    rows = planning_table(args.baseline, [args.delta], alpha=args.alpha, power=args.power,
                          icc=icc, per_scope=m)
    reference = _reference(args.alpha, args.power, icc, m)
    needed = max((int(r["per_arm"] or 0) for r in rows), default=0)
    sizes = sorted({*MARGIN_SIZES, needed} - {0})
    margins = margin_table(args.baseline, sizes, icc=icc, per_scope=m)
    deff = design_effect(icc, m) if m is not None else 1.0
    verdict_scopes = scopes_needed(args.delta, alpha=args.alpha)
    if args.json:
        print(json.dumps({"alpha": args.alpha, "power": args.power, "icc": icc, "per_scope": m,
                          "design_effect": deff, "rows": rows, "reference": reference,
                          "margins": margins, "verdict_scopes": verdict_scopes}, indent=2))
        return 0
    _print_sizes(args, rows, deff)
    _print_reference(reference)
    _print_verdict_scopes(args.delta, args.alpha, verdict_scopes)
    _print_margins(args.baseline, icc, margins)
    return 0


def _refuse_config_changes(args: argparse.Namespace) -> None:
    """Refuse the flags that change a run config, given without the config to price."""
    changes = [flag for flag, given in (("--set", args.sets), ("--arms", args.arms is not None),
                                        ("--limit", args.limit is not None),
                                        ("--drop-invalid-questions",
                                         args.drop_invalid_questions)) if given]
    if changes:
        raise UserError(f"lens plan: {', '.join(changes)} change a run config: give the "
                        "CONFIG whose run to price")


class ReferenceRow(TypedDict):
    """One line of the reference table: a system at ``low`` against one at ``high``."""

    low: float
    high: float
    delta: float
    per_arm: int
    independent: int
    scopes: int | None


def _reference(alpha: float, power: float, icc: float,
               per_scope: int | None) -> list[ReferenceRow]:
    """The reference table of the LENS method: each arm set against a 90% system."""
    reference: list[ReferenceRow] = []
    for d in REFERENCE_DELTAS:
        independent = sample_size_two_proportions(0.9 - d, 0.9, alpha=alpha, power=power)
        questions, scopes = clustered_size(independent, icc, per_scope)
        reference.append({"low": round(0.9 - d, 6), "high": 0.9, "delta": d,
                          "per_arm": questions, "independent": independent, "scopes": scopes})
    return reference


def _print_sizes(args: argparse.Namespace, rows: list[PlanningRow], deff: float) -> None:
    """The questions per arm for the asked difference, with scopes under clustering."""
    icc, m = args.icc, args.per_scope
    clustered = icc > 0
    print(f"Questions per arm to detect a difference (two-sided alpha {args.alpha:g}, "
          f"power {args.power:.0%}):")
    if clustered:
        print(f"  ICC {icc:g} with {m} questions per scope: design effect {deff:.2f}, so one "
              f"scope carries {m / deff:.1f} independent questions")
    head = f"  {'baseline':>8}  {'other':>6}  {'delta':>6}  {'per arm':>8}"
    if m is not None:
        head += f"  {'scopes':>6}"
    if clustered:
        head += f"  {'(independent)':>13}"
    print(head)
    for r in rows:
        line = (f"  {r['baseline']:>8.2f}  {r['other']:>6.2f}  {r['delta']:>6.2f}  "
                f"{r['per_arm']:>8d}")
        if m is not None:
            line += f"  {r['scopes']:>6d}"
        if clustered:
            line += f"  {r['independent']:>13d}"
        print(line)


def _print_reference(reference: list[ReferenceRow]) -> None:
    print("\nReference (against a 90% system):")
    for ref in reference:
        print(f"  {ref['delta'] * 100:>4.0f} points ({ref['low']:.0%} vs {ref['high']:.0%}): "
              f"{ref['per_arm']} per arm{_in_scopes(ref['scopes'])}")


def _print_verdict_scopes(delta: float, alpha: float, verdict_scopes: int | None) -> None:
    """How many scopes a better/worse verdict needs, and why no number of questions helps."""
    shown = verdict_scopes if verdict_scopes is not None else "more than 100,000"
    print(f"\nScopes a better/worse verdict needs at Δ {delta:g} (alpha {alpha:g}, one "
          f"pair): at least {shown}, however many questions each holds.")
    print("  lens names a winner only when a bounded-mean test over the scopes agrees (valid\n"
          "  however skewed the scope differences are); on fewer scopes it cannot rule out a\n"
          "  minority of scopes far behind, and says undecided. That is the best case (every\n"
          "  scope differing alike): spread across scopes needs more.")


def _print_margins(baseline: float, icc: float, margins: list[MarginRow]) -> None:
    """The Wilson margin of error at each sample size (at the effective n under clustering)."""
    clustered = icc > 0
    title = "Margin of error (Wilson, 95%"
    title += f", at the effective n under ICC {icc:g})" if clustered else ")"
    print(f"\n{title} at a rate of {baseline:.2f}:")
    print(f"  {'n':>6}  {'n_eff':>6}  {'margin':>8}" if clustered else f"  {'n':>6}  {'margin':>8}")
    for row in margins:
        eff = f"  {row['n_eff']:>6.0f}" if clustered else ""
        print(f"  {int(row['n']):>6d}{eff}  ±{row['margin'] * 100:>5.1f} pts")


def _plan_config(args: argparse.Namespace) -> int:
    from lens.flow.pipeline import check_reader, check_run, check_scoring, load_run_config
    from lens.flow.plan_cost import cost_lines, plan_cost
    from lens.flow.stopping import check_stopping

    # The checks `lens run` makes before any work, with the same command-line changes: a
    # config that run refuses has no price.
    overrides = overrides_of(args)
    config = load_run_config(args.config, overrides)
    check_reader(config, args.config)
    check_scoring(config, args.config)
    check_stopping(config, args.config)
    dataset, _ = check_run(config, args.config, overrides,
                           drop_invalid=args.drop_invalid_questions)
    plan = plan_cost(config, dataset)
    if args.json:
        print(json.dumps(plan.as_dict(), indent=2))
        return 0
    for line in cost_lines(plan):
        print(line)
    return 0
