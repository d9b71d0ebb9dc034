"""GoldEvidence throughput at a preset: rows/s for generation and for grading.

Generation is ``goldevidence.generate.generate`` at the preset (distinct seed per repetition).
Grading grades the ledger baseline's predictions (the exact reader: every row answerable) of
those rows with ``goldevidence.grade.grade``; prediction is timed apart and not counted.
The baseline in the same run is serialising the generated rows to JSONL, the least any tool
that writes them out must do.

    python -m bench.goldevidence_rows --preset standard --reps 5
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench.common import machine_line, md_table, spread
from goldevidence.baselines import predictions
from goldevidence.config import PRESETS, preset
from goldevidence.generate import generate
from goldevidence.grade import grade


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="GoldEvidence generation and grading rows/s")
    p.add_argument("--preset", default="standard", choices=sorted(PRESETS))
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    print(machine_line(), flush=True)
    cfg = preset(args.preset)
    gen, grd, pred, dump, sizes = [], [], [], [], []
    for rep in range(args.reps):
        t = time.perf_counter()
        rows = generate(cfg, seed=1000 + rep)
        gen.append(time.perf_counter() - t)
        t = time.perf_counter()
        blob = "\n".join(json.dumps(r) for r in rows)
        dump.append(time.perf_counter() - t)
        t = time.perf_counter()
        preds = {pr["id"]: pr for pr in predictions(rows, "ledger")}
        pred.append(time.perf_counter() - t)
        t = time.perf_counter()
        result = grade(rows, preds)
        grd.append(time.perf_counter() - t)
        sizes.append(len(rows))
        print(f"  rep {rep + 1}: {len(rows)} rows ({len(blob) / 1e6:.1f} MB JSONL); generate "
              f"{gen[-1]:.2f}s, grade {grd[-1]:.2f}s, ledger predict {pred[-1]:.2f}s; "
              f"ledger value_acc {result.value_acc}", flush=True)
    rows_out = [
        ["generate", spread(gen).fmt(2, " s"),
         spread([n / t for n, t in zip(sizes, gen, strict=True)]).fmt(0)],
        ["grade (ledger predictions)", spread(grd).fmt(2, " s"),
         spread([n / t for n, t in zip(sizes, grd, strict=True)]).fmt(0)],
        ["baseline: JSON-serialise the rows", spread(dump).fmt(2, " s"),
         spread([n / t for n, t in zip(sizes, dump, strict=True)]).fmt(0)],
    ]
    print()
    print(f"preset {args.preset}: {PRESETS[args.preset]}, {sizes[0]} rows per generation")
    print(md_table(["step", "seconds", "rows/s"], rows_out))
    if args.json:
        args.json.write_text(json.dumps({"machine": machine_line(), "preset": args.preset,
                                         "rows": sizes, "generate_s": gen, "grade_s": grd,
                                         "dump_s": dump}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
