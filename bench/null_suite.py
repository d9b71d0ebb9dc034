"""The null suite: how often each verdict lens prints names a winner when the arms' means are
exactly equal, whatever the shape of their per-scope differences.

Each simulated comparison draws one difference per scope (B − A) with mean 0 from a shape:

- ``symmetric``: normal, sd 0.15 (clipped at ±0.5 symmetrically);
- ``skew 90/10``: 90% of scopes at +0.05, 10% at −0.45;
- ``skew 80/20``: 80% at +0.05, 20% at −0.20;
- ``heavy``: 0.05 · Student t with 2 degrees of freedom, clipped at ±0.5;
- ``one catastrophic``: one scope (placed at random) at −0.5, every other at +0.5/(N − 1);
- ``bimodal``: ±0.3, half each;

then 25 questions per scope with values in [0, 1]: A's value uniform where both arms fit, B's
A's plus the scope's difference plus a question's symmetric noise (up to ±0.2). Per number of
scopes (5, 8, 12, 24, 40, 100):

- **fixed-n**: the run goes through ``lens.report.figures.arm_comparison.compare_pairs`` (the
  function ``lens compare`` and every report use) on ``fact_recall`` as the primary metric;
  wrong = a better, worse or real-but-small verdict on it;
- **sequential**: the scope blocks' differences, in a random order, through
  ``lens.stats.sequential.sequential_verdict`` for each sequence; wrong = better or worse at any
  look;
- **family** (three arms, B − A and C − A each drawn from the shape): ``compare_pairs`` over the
  three pairs and ``family_verdicts`` for each sequence; wrong = any pair called.

Everything at α 0.05. A rate is within simulation error of α when it is at most α + 2 standard
errors of a proportion α over the comparisons.

    python -m bench.null_suite [--reps 300] [--fixed-reps 40] [--small] [--out FILE]
        [--shapes A,B] [--cells FILE.jsonl]    # a part, each cell kept as it is measured
    python -m bench.null_suite --table-from FILE.jsonl ...   # the table of parts

Error counts, not timings: machine load does not change them.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from bench.common import machine_line
from lens.report.figures.arm_comparison import arms_of, compare_pairs
from lens.report.figures.verdicts import DIFFERENT
from lens.report.foundations.shapes import ComparisonRow
from lens.stats.bounded import bounded_test
from lens.stats.resample import rng_for
from lens.stats.sequential import METHODS, Method, family_verdicts, sequential_verdict
from tests.report.runfactory import RunSpec, memory_run

ALPHA = 0.05
QUESTIONS = 25
SCOPES = (5, 8, 12, 24, 40, 100)
SMALL_SCOPES = (8, 40)
METRIC = "fact_recall"
# A question's own noise around its scope's difference, at most.
NOISE = 0.2

Shape = Callable[[np.random.Generator, int], np.ndarray]


def _catastrophic(rng: np.random.Generator, n: int) -> np.ndarray:
    out = np.full(n, 0.5 / (n - 1))
    out[rng.integers(n)] = -0.5
    return out


SHAPES: dict[str, Shape] = {
    "symmetric": lambda rng, n: np.clip(rng.normal(0.0, 0.15, n), -0.5, 0.5),
    "skew 90/10": lambda rng, n: np.where(rng.random(n) < 0.9, 0.05, -0.45),
    "skew 80/20": lambda rng, n: np.where(rng.random(n) < 0.8, 0.05, -0.20),
    "heavy": lambda rng, n: np.clip(0.05 * rng.standard_t(2, n), -0.5, 0.5),
    "one catastrophic": _catastrophic,
    "bimodal": lambda rng, n: np.where(rng.random(n) < 0.5, 0.3, -0.3),
}
SMALL_SHAPES = ("symmetric", "skew 90/10", "skew 80/20")


def question_values(rng: np.random.Generator, offsets: Sequence[float],
                    questions: int = QUESTIONS) -> np.ndarray:
    """(questions, arms) values in [0, 1] for one scope: the first arm's uniform where every
    arm fits, each other arm's offset from it plus a symmetric noise of mean 0."""
    o = np.asarray([0.0, *offsets])
    spread = float(o.max() - o.min())
    eta = max(0.0, min(NOISE, (1 - spread) / 2))
    low, high = max(0.0, eta - float(o.min())), min(1.0, 1 - eta - float(o.max()))
    high = max(low, high)  # a spread of exactly 1 leaves one point (up to rounding)
    base = rng.uniform(low, high, questions)
    noise = rng.uniform(-eta, eta, (questions, len(o)))
    noise[:, 0] = 0.0
    return np.clip(base[:, None] + o[None, :] + noise, 0.0, 1.0)


def fixed_run(diffs: np.ndarray, rng: np.random.Generator) -> list[tuple[str, bool]]:
    """The fixed-n verdicts lens prints on the primary metric for one simulated run whose
    scope differences (scopes, arms − 1) against the first arm are ``diffs``, each with
    whether the scope-clustered bootstrap alone (its Holm p below α, its interval excluding 0:
    the rule without the bounded-mean gate) would have called a difference."""
    n, others = diffs.shape
    names = tuple("abcdefgh"[: others + 1])
    values = {s: question_values(rng, list(diffs[s])) for s in range(n)}

    def metrics(adapter: str, scope: str, qid: str, rep: int) -> dict[str, float | None]:
        s, q = int(scope.split("_")[1]), int(qid.split("_")[1])
        return {METRIC: float(values[s][q, names.index(adapter)])}

    run = memory_run(RunSpec(adapters=names, scopes=n, questions_per_scope=QUESTIONS,
                             metrics=metrics, tool_calls=False))
    comps = compare_pairs(arms_of([run]), [METRIC], noise_floor=None, alpha=ALPHA)
    return [(row.verdict, _bootstrap_called(row)) for c in comps for row in c.rows
            if row.metric == METRIC]


def _bootstrap_called(row: ComparisonRow) -> bool:
    low, high = row.delta.low, row.delta.high
    return (row.p_holm is not None and row.p_holm < ALPHA and low is not None
            and high is not None and not low <= 0 <= high)


def block_differences(diffs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The scope blocks' mean differences as a run reads them (questions' noise included)."""
    n, others = diffs.shape
    out = np.empty((n, others))
    for s in range(n):
        v = question_values(rng, list(diffs[s]))
        out[s] = v[:, 1:].mean(axis=0) - v[:, 0].mean()
    return out


def draw(shape: str, n: int, arms: int, rng: np.random.Generator) -> np.ndarray:
    """(n, arms − 1) scope differences against the first arm, each column from ``shape``."""
    return np.column_stack([SHAPES[shape](rng, n) for _ in range(arms - 1)])


@dataclass
class Cell:
    shape: str
    scopes: int
    check: str
    wrong: int
    total: int

    @property
    def rate(self) -> float:
        return self.wrong / self.total if self.total else math.nan


def tolerance(total: int, alpha: float = ALPHA) -> float:
    """α plus two standard errors of a proportion α over ``total`` comparisons."""
    return alpha + 2 * math.sqrt(alpha * (1 - alpha) / total)


def sequential_cells(shape: str, n: int, reps: int, arms: int,
                     methods: Sequence[Method] = METHODS) -> list[Cell]:
    counts = dict.fromkeys(methods, 0)
    for r in range(reps):
        rng = rng_for("null-suite", "sequential", shape, n, arms, r)
        blocks = block_differences(draw(shape, n, arms, rng), rng)
        # Every pair of the family: B − A, C − A, and C − B.
        pairs = {f"{i}-{j}": list(blocks[:, j - 1] - (blocks[:, i - 1] if i else 0.0))
                 for i in range(arms) for j in range(i + 1, arms)}
        for method in methods:
            if arms == 2:
                wrong = sequential_verdict(pairs["0-1"], alpha=ALPHA, margin=0.0,
                                           method=method).verdict in ("better", "worse")
            else:
                stop = family_verdicts(pairs, alpha=ALPHA, margin=0.0, method=method)
                wrong = any(s.verdict in ("better", "worse") for s in stop.pairs.values())
            counts[method] += wrong
    check = "sequential" if arms == 2 else f"family of {arms} arms, sequential"
    return [Cell(shape, n, f"{check} {m}", counts[m], reps) for m in methods]


def fixed_cells(shape: str, n: int, reps: int, arms: int) -> list[Cell]:
    """The fixed-n verdict as lens prints it, and the bootstrap alone (without the gate)."""
    wrong = boot = 0
    for r in range(reps):
        rng = rng_for("null-suite", "fixed", shape, n, arms, r)
        verdicts = fixed_run(draw(shape, n, arms, rng), rng)
        wrong += any(v in DIFFERENT for v, _ in verdicts)
        boot += any(b for _, b in verdicts)
    check = "fixed-n" if arms == 2 else f"family of {arms} arms, fixed-n"
    return [Cell(shape, n, check, wrong, reps),
            Cell(shape, n, f"{check}: bootstrap alone (not a default)", boot, reps)]


def gate_cell(shape: str, n: int, reps: int) -> Cell:
    """The bounded-mean gate alone on the scope differences of two arms: an upper bound of the
    fixed-n verdict's error, cheap enough for many comparisons."""
    wrong = 0
    for r in range(reps):
        rng = rng_for("null-suite", "gate", shape, n, r)
        blocks = block_differences(draw(shape, n, 2, rng), rng)[:, 0]
        wrong += bounded_test(list(blocks), alpha=ALPHA).p_value < ALPHA
    return Cell(shape, n, "fixed-n: its bounded-mean gate alone", wrong, reps)


def suite(*, reps: int, fixed_reps: int, shapes: Sequence[str], scopes: Sequence[int],
          methods: Sequence[Method] = METHODS, family: bool = True,
          done: Callable[[Sequence[Cell]], None] | None = None) -> list[Cell]:
    """Every cell; ``done`` gets each group of cells as soon as it is measured."""
    cells: list[Cell] = []
    for shape in shapes:
        for n in scopes:
            group = [*fixed_cells(shape, n, fixed_reps, 2), gate_cell(shape, n, 4 * reps),
                     *sequential_cells(shape, n, reps, 2, methods)]
            if family:
                group += [*fixed_cells(shape, n, max(1, fixed_reps // 2), 3),
                          *sequential_cells(shape, n, max(1, reps // 2), 3, methods)]
            if done is not None:
                done(group)
            cells.extend(group)
    return cells


def table(cells: Sequence[Cell]) -> list[str]:
    """One row per check and shape, one column per number of scopes; a rate above α plus two
    standard errors is marked ✗."""
    scopes = sorted({c.scopes for c in cells})
    checks = list(dict.fromkeys(c.check for c in cells))
    shapes = list(dict.fromkeys(c.shape for c in cells))
    index = {(c.check, c.shape, c.scopes): c for c in cells}
    lines = ["| verdict | shape | " + " | ".join(f"{n} scopes" for n in scopes) + " |",
             "|---|---|" + "---:|" * len(scopes)]
    for check in checks:
        for shape in shapes:
            row = []
            for n in scopes:
                c = index.get((check, shape, n))
                if c is None:
                    row.append("")
                    continue
                mark = " ✗" if c.rate > tolerance(c.total) else ""
                row.append(f"{c.rate:.3f} ({c.wrong}/{c.total}){mark}")
            lines.append(f"| {check} | {shape} | " + " | ".join(row) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=300, help="comparisons per sequential cell "
                   "(half that for three arms, four times that for the gate alone)")
    p.add_argument("--fixed-reps", type=int, default=40, help="runs per fixed-n cell (half "
                   "that for three arms; each is a whole comparison with its bootstraps)")
    p.add_argument("--small", action="store_true",
                   help="three shapes at 8 and 40 scopes, 60 comparisons a cell")
    p.add_argument("--out", help="also write the table to this file")
    p.add_argument("--shapes", help="a comma-separated part of the shapes (default all)")
    p.add_argument("--cells", help="append each cell to this JSON-lines file as it is measured")
    p.add_argument("--table-from", nargs="+", metavar="CELLS",
                   help="print the table of cells measured before (JSON-lines files), no run")
    args = p.parse_args(argv)
    shapes = args.shapes.split(",") if args.shapes else list(SHAPES)
    unknown = [x for x in shapes if x not in SHAPES]
    if unknown:
        p.error(f"unknown shape(s) {', '.join(unknown)}; the shapes: {', '.join(SHAPES)}")

    def keep(group: Sequence[Cell]) -> None:
        if args.cells:
            with open(args.cells, "a", encoding="utf-8") as fh:
                fh.writelines(json.dumps(asdict(c)) + "\n" for c in group)

    if args.table_from:
        cells = [Cell(**json.loads(line)) for path in args.table_from
                 for line in Path(path).read_text(encoding="utf-8").splitlines()
                 if line.strip()]
    elif args.small:
        cells = suite(reps=60, fixed_reps=10, shapes=SMALL_SHAPES, scopes=SMALL_SCOPES,
                      done=keep)
    else:
        cells = suite(reps=args.reps, fixed_reps=args.fixed_reps, shapes=shapes, scopes=SCOPES,
                      done=keep)
    lines = [machine_line(), f"α {ALPHA}, {QUESTIONS} questions per scope; ✗: above α + 2 "
             "standard errors", "", *table(cells)]
    print("\n".join(lines))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
