"""What sequential stopping saves with the default sequence: the share of the scope blocks a
comparison of two arms reads before its verdict settles, by true effect and number of scopes.

- **Scopes of many questions**: each block's difference normal with mean Δ and sd 0.15 across
  scopes (clipped to [−1, 1]).
- **LongMemEval's shape**: 500 scopes of one question each; a block's difference is one
  question's correct-or-not of B minus A's (A correct with probability 0.6, B with 0.6 + Δ,
  independently: the widest spread a pair of 0/1 outcomes has).

Every comparison goes through ``lens.stats.sequential.sequential_verdict`` at α 0.05, margin 0,
a look after every block, with the default sequence (``--method`` for another). Reported: the
mean share of blocks read, and the share of comparisons that settled before the last block.

    python -m bench.sequential_share [--reps 40] [--method betting]

Shares, not timings: machine load does not change them.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

from bench.common import machine_line
from lens.stats.resample import rng_for
from lens.stats.sequential import DEFAULT_METHOD, METHODS, Method, fewest_blocks, sequential_verdict

ALPHA = 0.05
DELTAS = (0.05, 0.1, 0.2, 0.3)
SCOPES = (6, 12, 24, 40, 100, 500)
SPREAD = 0.15
LONGMEMEVAL_BASE = 0.6


def share(draws: Sequence[np.ndarray], method: Method) -> tuple[float, float]:
    """(mean share of blocks read, share of comparisons settled before the last block)."""
    used, early = 0.0, 0
    for x in draws:
        seq = sequential_verdict(list(x), alpha=ALPHA, margin=0.0, method=method)
        used += seq.blocks / len(x)
        early += seq.verdict != "undecided" and seq.blocks < len(x)
    return used / len(draws), early / len(draws)


def scope_draws(delta: float, n: int, reps: int) -> list[np.ndarray]:
    rng = rng_for("sequential-share", "scopes", delta, n)
    return [np.clip(rng.normal(delta, SPREAD, n), -1.0, 1.0) for _ in range(reps)]


def longmemeval_draws(delta: float, reps: int, n: int = 500) -> list[np.ndarray]:
    rng = rng_for("sequential-share", "longmemeval", delta, n)
    return [(rng.random(n) < LONGMEMEVAL_BASE + delta).astype(float)
            - (rng.random(n) < LONGMEMEVAL_BASE).astype(float) for _ in range(reps)]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=40)
    p.add_argument("--method", choices=METHODS, default=DEFAULT_METHOD)
    args = p.parse_args(argv)
    print(machine_line())
    print(f"{args.method} sequence, α {ALPHA}, margin 0; fewest blocks that can settle a pair: "
          f"{fewest_blocks(alpha=ALPHA, method=args.method)} (every block +0.5)")
    head = "| scopes | " + " | ".join(f"Δ {d:g}" for d in DELTAS) + " |"
    print("\nScopes of many questions (sd 0.15 across scopes): mean share read (settled early)")
    print(head)
    print("|---:|" + "---:|" * len(DELTAS))
    for n in SCOPES:
        cells = [share(scope_draws(d, n, args.reps), args.method) for d in DELTAS]
        print(f"| {n} | " + " | ".join(f"{u:.0%} ({e:.0%})" for u, e in cells) + " |")
    print(f"\nLongMemEval's shape: 500 scopes of one question (A correct at {LONGMEMEVAL_BASE})")
    print(head)
    print("|---:|" + "---:|" * len(DELTAS))
    cells = [share(longmemeval_draws(d, args.reps), args.method) for d in DELTAS]
    print("| 500 | " + " | ".join(f"{u:.0%} ({e:.0%})" for u, e in cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
