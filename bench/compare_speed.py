"""How long `lens compare` takes on a 3-arm, 1,000-question comparison.

Three run directories (one adapter each, 10 scopes × 100 questions, scored metrics of both
kinds: continuous, 0/1 and the composite) are written through the real run store, then
``compare_runs`` is timed end to end: loading, every arm's estimates, all three pairs with
10,000 scope-clustered resamples each, Holm across pairs × metrics, and Friedman's test.

    python -m bench.compare_speed --questions 1000 --reps 3
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.common import machine_line, spread
from lens.report.run_comparison import compare_runs
from tests.report.runfactory import RunSpec, make_run, unit_draw


def _metrics(shift: float):
    def metrics(adapter: str, scope: str, qid: str, rep: int) -> dict[str, float | None]:
        u = unit_draw("q", scope, qid)
        v = min(1.0, max(0.0, 0.2 + 0.4 * u + 0.2 * unit_draw("s", scope)
                         + 0.1 * unit_draw("n", adapter, scope, qid) + shift))
        return {"composite": v, "fact_recall": v, "evidence_coverage": 1 - v,
                "budget_compliance": 1.0 if u + shift > 0.2 else 0.0}
    return metrics


def build(tmp: Path, questions: int, scopes: int = 10) -> list[Path]:
    per_scope = max(1, questions // scopes)
    return [make_run(tmp, RunSpec(name=name, adapters=(name,), scopes=scopes,
                                  questions_per_scope=per_scope, metrics=_metrics(shift)))
            for name, shift in (("a", 0.0), ("b", 0.03), ("c", -0.03))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="lens compare speed")
    p.add_argument("--questions", type=int, default=1000)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        runs = build(Path(tmp), args.questions)
        times = []
        for _ in range(args.reps):
            start = time.perf_counter()
            compare_runs(runs)
            times.append(time.perf_counter() - start)
    print(machine_line(["numpy", "scipy"]))
    print(f"3 arms x {args.questions} questions, 3 pairs x 4 metrics, 10,000 resamples: "
          f"{spread(times).fmt(2, ' s')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
