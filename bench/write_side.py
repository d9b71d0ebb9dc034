"""What scoring the memory's writes costs: the write-side metrics of a run, scored again.

Reads a run directory whose arms listed their memory (``RUN_DIR/memory/``), scores every
recorded listing against the run's dataset ``--reps`` times and prints the CPU seconds of each
scoring (process time: meaningful on a loaded machine, where wall time is not), the peak memory
of the process and the size of the listing files.

    python -m lens run configs/floor-ceiling.yaml --out /tmp/fc
    python -m bench.write_side /tmp/fc/floor-ceiling-* --reps 3
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

from bench.common import machine_line, spread
from lens.data.dataset_load import load_dataset
from lens.scoring.measures.write_side import score_write_side


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    manifest = json.loads((args.run_dir / "manifest.json").read_text(encoding="utf-8"))
    dataset = load_dataset(Path(manifest["dataset"]["path"]))
    arms = [str(a.get("label") or a.get("name")) for a in manifest["condition"]["adapters"]]
    cpu = []
    for _ in range(args.reps):
        t0 = time.process_time()
        result = score_write_side(args.run_dir, dataset, arms)
        cpu.append(time.process_time() - t0)
    size = sum(p.stat().st_size for p in (args.run_dir / "memory").glob("*.jsonl"))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(machine_line())
    print(f"checkpoints scored: {len(result.checkpoints)}; listing files: {size / 1e6:.2f} MB; "
          f"peak RSS {peak_mb:.0f} MB")
    print(f"CPU seconds per scoring: {spread(cpu)}")


if __name__ == "__main__":
    main()
