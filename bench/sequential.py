"""Sequential verdicts proved by simulation: thousands of comparisons resampled from recorded
runs' per-scope scores of the primary metric.

- **Null** (no true difference): each simulated comparison draws N scope blocks with
  replacement from a recorded run and, in each block, relabels the three arms at random
  ("relabel": the arms are exchangeable, every paired mean difference is 0) or shifts every
  arm's scope values to a common mean ("centered": keeps each pair's skew); the family of three
  pairs is read after every block at α/3 per pair. Reported: the rate of a wrong better/worse
  verdict by each stopping time (cumulative), which must stay at or below α, beside a fixed-n
  paired t-test read after every block, which does not.
- **True differences**: one pair's centered scope differences plus Δ (clipped to [−1, 1]),
  N blocks, alone at α and inside a 3-pair family at α/3: the share of blocks used, the share of
  comparisons settled by 40% of the run, and the verdicts.
- **Replays**: each recorded run read in its seeded order and in random orders of its scopes
  (without replacement): where the family would have stopped, and whether every verdict matches
  the full run's.

    python -m bench.sequential [--runs RUN_DIR ...] [--sims 1000] [--orders 200]

Without --runs it writes two generated datasets (24 and 40 scopes, four domains) and runs each
with the scripted retrieval policy over sqlite_fts, recency and null in a temporary directory.
Error rates and shares, not timings: machine load does not matter.
"""

from __future__ import annotations

import argparse
import math
import tempfile
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path

import numpy as np
import yaml
from scipy import stats as st

from bench.common import ROOT, machine_line
from lens.report.figures.arm_comparison import arms_of, compare_pairs, scope_table
from lens.report.figures.estimates import report_metrics
from lens.report.figures.sequential import sequential_replay
from lens.report.foundations.data import load_run
from lens.stats.resample import rng_for
from lens.stats.sequential import METHODS, family_verdicts, sequential_verdict

ALPHA = 0.05
MARGIN = 0.05
EFFECTS = (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4)


def build_runs(tmp: Path) -> list[Path]:
    """Two generated datasets, each run with the scripted policy over three memories."""
    from lens.commands.cli import main as cli
    from lens.flow.pipeline import execute

    out = []
    for scopes, seed, cycle in ((24, 7, ("ops", "clinical", "finance", "support")),
                                (40, 11, ("support", "ops", "finance", "clinical"))):
        domains = ",".join(cycle[i % 4] for i in range(scopes))
        data = tmp / f"gen{scopes}.json"
        cli(["datasets", "generate", "--domain", domains, "--seed", str(seed), "--episodes",
             "60", "--out", str(data)])
        config = yaml.safe_load((ROOT / "configs" / "compare.yaml").read_text())
        config.update(name=f"seq-gen{scopes}", out_dir=str(tmp / "runs"))
        config["dataset"] = {"path": str(data)}
        path = tmp / f"gen{scopes}.yaml"
        path.write_text(yaml.safe_dump(config))
        out.append(execute(path).run_dir)
    return out


def run_table(run_dir: Path) -> tuple[str, list[str], np.ndarray]:
    """The primary metric, the arms and the (scopes, arms) scope values of a recorded run."""
    run = load_run(run_dir)
    arms = arms_of([run])
    metric = report_metrics(run)[0]
    _, table = scope_table(arms, metric)
    table = table[np.isfinite(table).all(axis=1)]
    return metric, [a.name for a in arms], table


def pair_diffs(table: np.ndarray) -> dict[str, np.ndarray]:
    return {f"{i}-{j}": table[:, j] - table[:, i]
            for i, j in combinations(range(table.shape[1]), 2)}


def naive_t(values: np.ndarray, alpha: float) -> int | None:
    """The first block (from 3) where a fixed-n paired t-test at ``alpha`` rejects 0."""
    for n in range(3, len(values) + 1):
        head = values[:n]
        sd = head.std(ddof=1)
        if sd == 0:
            if head.mean() != 0:
                return n
            continue
        t = head.mean() / (sd / math.sqrt(n))
        if 2 * st.t.sf(abs(t), n - 1) < alpha:
            return n
    return None


def null_rates(tables: Sequence[np.ndarray], kind: str, method: str, n_blocks: int,
               sims: int) -> tuple[list[float], list[float]]:
    """Cumulative rate of a wrong better/worse verdict in the 3-pair family by each block, for
    the sequential rule and for a Bonferroni t-test read after every block."""
    rng = rng_for("null", kind, method, n_blocks, sims)
    wrong = np.zeros(n_blocks + 1)
    naive = np.zeros(n_blocks + 1)
    for s in range(sims):
        table = tables[s % len(tables)]
        rows = table[rng.integers(0, len(table), n_blocks)]
        if kind == "relabel":
            rows = np.take_along_axis(rows, rng.permuted(
                np.tile(np.arange(rows.shape[1]), (n_blocks, 1)), axis=1), axis=1)
        else:
            rows = rows - table.mean(axis=0) + table.mean()
        diffs = {k: np.clip(v, -1, 1) for k, v in pair_diffs(rows).items()}
        stop = family_verdicts({k: list(v) for k, v in diffs.items()}, alpha=ALPHA,
                               margin=MARGIN, method=method)  # type: ignore[arg-type]
        first = [p.blocks for p in stop.pairs.values() if p.verdict in ("better", "worse")]
        if first:
            wrong[min(first):] += 1
        if method == METHODS[0]:
            hits = [naive_t(v, ALPHA / len(diffs)) for v in diffs.values()]
            found = [h for h in hits if h is not None]
            if found:
                naive[min(found):] += 1
    return list(wrong / sims), list(naive / sims)


def effect_rows(tables: Sequence[np.ndarray], method: str, n_blocks: int,
                sims: int) -> list[dict[str, float]]:
    pools = [v - v.mean() for t in tables for v in pair_diffs(t).values()]
    out = []
    for delta in EFFECTS:
        rng = rng_for("effect", method, delta, n_blocks, sims)
        for pairs in (1, 3):
            shares, early, right, wrong, equiv = [], 0, 0, 0, 0
            for s in range(sims):
                pool = pools[s % len(pools)]
                draw = np.clip(rng.choice(pool, n_blocks) + delta, -1, 1)
                seq = sequential_verdict(list(draw), alpha=ALPHA / pairs, margin=MARGIN,
                                         method=method)  # type: ignore[arg-type]
                shares.append(seq.share or 1.0)
                early += seq.verdict != "undecided" and seq.blocks <= 0.4 * n_blocks
                right += seq.verdict == "better"
                wrong += seq.verdict == "worse"
                equiv += seq.verdict == "equivalent"
            out.append({"delta": delta, "pairs": pairs, "share": float(np.mean(shares)),
                        "median": float(np.median(shares)), "early": early / sims,
                        "better": right / sims, "worse": wrong / sims,
                        "equivalent": equiv / sims,
                        "sd": float(np.mean([p.std(ddof=1) for p in pools]))})
    return out


def replays(run_dir: Path, method: str, orders: int) -> dict[str, object]:
    """The seeded order of the recorded run, and ``orders`` random orders of its scopes."""
    run = load_run(run_dir)
    arms = arms_of([run])
    metric = report_metrics(run)[0]
    comps = compare_pairs(arms, [metric], noise_floor=None)
    seeded = sequential_replay(arms, metric, comps, alpha=ALPHA, margin=MARGIN,
                               method=method)  # type: ignore[arg-type]
    assert seeded is not None
    full = {f"{i}-{j}": c.rows[0].verdict
            for (i, j), c in zip(combinations(range(len(arms)), 2), comps, strict=True)}
    _, table = scope_table(arms, metric)
    table = table[np.isfinite(table).all(axis=1)]
    rng = rng_for("orders", str(run_dir.name), method, orders)
    shares, same, wrong = [], 0, 0
    want = {"b": "better", "a": "worse", "tie": "equivalent"}
    for _ in range(orders):
        rows = table[rng.permutation(len(table))]
        stop = family_verdicts({k: list(v) for k, v in pair_diffs(rows).items()}, alpha=ALPHA,
                               margin=MARGIN, method=method)  # type: ignore[arg-type]
        shares.append(stop.share or 1.0)
        same += all(p.verdict == want.get(full[k] or "", "?") for k, p in stop.pairs.items())
        wrong += any(p.verdict in ("better", "worse") and p.verdict != want.get(full[k] or "")
                     for k, p in stop.pairs.items())
    return {"run": run_dir.name, "scopes": len(table), "arms": [a.name for a in arms],
            "seeded_blocks": seeded.blocks, "seeded_share_q": seeded.questions_used
            / max(1, seeded.questions_total), "seeded_tokens": seeded.tokens_share,
            "seeded_same": all(p.agrees for p in seeded.pairs),
            "full": full, "mean_share": float(np.mean(shares)),
            "max_share": float(np.max(shares)), "same": same / orders,
            "wrong": wrong / orders}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="sequential verdicts by simulation")
    p.add_argument("--runs", type=Path, nargs="*", default=None, metavar="RUN_DIR")
    p.add_argument("--sims", type=int, default=1000)
    p.add_argument("--orders", type=int, default=200)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        runs = args.runs or build_runs(Path(tmp))
        loaded = [run_table(r) for r in runs]
        tables = [t for _, _, t in loaded]
        print(machine_line(["numpy", "scipy"]))
        for r, (metric, arms, t) in zip(runs, loaded, strict=True):
            print(f"run {Path(r).name}: {metric}, arms {', '.join(arms)}, {len(t)} scopes")
        print(f"\nNull: rate of a wrong better/worse verdict in a 3-pair family (α={ALPHA}, "
              f"α/3 per pair), cumulative by block")
        looks = (3, 6, 10, 16, 24)
        print("| null | sequence | blocks | comparisons | " + " | ".join(f"by {k}" for k in looks)
              + " | by the end | repeated t-test, by the end |")
        print("|---|---|---|---|" + "---|" * len(looks) + "---|---|")
        for kind in ("relabel", "centered"):
            for method in METHODS:
                for n_blocks in ((24, 96) if method != "betting" else (24,)):
                    sims = args.sims if n_blocks == 24 else args.sims // 4
                    wrong, naive = null_rates(tables, kind, method, n_blocks, sims)
                    cells = [f"{wrong[min(k, n_blocks)]:.4f}" for k in looks]
                    naive_end = f"{naive[-1]:.4f}" if method == METHODS[0] else "—"
                    print(f"| {kind} | {method} | {n_blocks} | {sims} | " + " | ".join(cells)
                          + f" | {wrong[-1]:.4f} | {naive_end} |", flush=True)
        print(f"\nTrue differences: share of 24 blocks used (margin ±{MARGIN}); "
              f"{max(200, args.sims // 5)} comparisons per row")
        print("| sequence | Δ | pairs (α each) | mean share | median share | settled by 40% "
              "| better | worse | equivalent |")
        print("|---|---|---|---|---|---|---|---|---|")
        for method in METHODS:
            for row in effect_rows(tables, method, 24, max(200, args.sims // 5)):
                print(f"| {method} | {row['delta']:.2f} | {int(row['pairs'])} "
                      f"({ALPHA / row['pairs']:.3g}) | {row['share']:.2f} | "
                      f"{row['median']:.2f} | {row['early']:.2f} | {row['better']:.3f} | "
                      f"{row['worse']:.3f} | {row['equivalent']:.3f} |", flush=True)
        print("\nReplays of the recorded runs (3-pair family, seeded order and random orders)")
        print("| run | sequence | scopes | seeded: blocks | seeded: questions | seeded: tokens "
              "| seeded: same verdicts | random orders: mean share | max share | all same "
              "| any wrong |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in runs:
            for method in METHODS:
                x = replays(Path(r), method, args.orders)
                tokens = x["seeded_tokens"]
                print(f"| {x['run']} | {method} | {x['scopes']} | {x['seeded_blocks']} | "
                      f"{x['seeded_share_q']:.0%} | "
                      f"{'—' if tokens is None else f'{tokens:.0%}'} | "
                      f"{'yes' if x['seeded_same'] else 'no'} | {x['mean_share']:.2f} | "
                      f"{x['max_share']:.2f} | {x['same']:.2f} | {x['wrong']:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
