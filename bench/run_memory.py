"""A scored run's peak memory against its number of scopes: synthetic files of LongMemEval's
shape (one question per item), each run whole (``lens run``: ingest, answers, scoring, reports)
over sqlite_fts with the scripted agent, then scored again alone (``lens score``) and exported
(``lens export``), each step in a process of its own.

    python -m bench.run_memory --scopes 10 100 500                 # `_s`-shaped items
    python -m bench.run_memory --scopes 20 --sessions 500          # `_m`-shaped items
    python -m bench.run_memory --scopes 10 100 --workdir DIR

An `_s` item is 50 sessions of 10 turns of about 180 words (about 0.53 MB, as the real file's
264 MB over 498 items); an `_m` item is 500 such sessions. Peak RSS is the kernel's ru_maxrss
of the step's process, CPU its user + system seconds; the 1-minute load average is printed
beside each, since wall time on a shared machine depends on the load.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.big_import import TURNS, _item, _timed
from bench.common import machine_line

# Words per turn that make an item of `_s`'s size (264 MB over 498 items of 50 sessions).
WORDS = 178


def make(path: Path, items: int, sessions: int, words: int = WORDS) -> None:
    """A LongMemEval-shaped file of ``items`` items, written one at a time."""
    rng = random.Random(items)
    with path.open("w", encoding="utf-8") as fh:
        fh.write("[")
        for i in range(items):
            fh.write(("," if i else "") + json.dumps(_item(i, rng, sessions, TURNS, words)))
        fh.write("]")


def measure(work: Path, scopes: int, sessions: int, keep: bool = False) -> int:
    src = work / f"lme_{scopes}.json"
    make(src, scopes, sessions)
    size_mb = src.stat().st_size / 1e6
    data = work / f"lme_{scopes}.lens.json"
    step = _timed([sys.executable, "-m", "lens", "datasets", "import", "--format",
                   "longmemeval", str(src), "--out", str(data)])
    src.unlink()
    print(step.line(f"{scopes} scopes: import", size_mb))
    if step.returncode:
        return step.returncode
    runs = work / f"runs_{scopes}"
    config = work / f"run_{scopes}.yaml"
    config.write_text(json.dumps({
        "name": f"mem{scopes}", "dataset": {"path": str(data)}, "out_dir": str(runs),
        "adapters": [{"name": "sqlite_fts"}], "agent": {"model": "scripted/policy"},
        "cache": {"enabled": False}}), encoding="utf-8")
    size_mb = data.stat().st_size / 1e6
    step = _timed([sys.executable, "-m", "lens", "run", str(config), "--quiet"])
    print(step.line(f"{scopes} scopes: run (ingest, answers, scoring, reports)", size_mb))
    if step.returncode:
        return step.returncode
    (run_dir,) = runs.iterdir()
    for name, cmd in (("score", ["score", str(run_dir)]),
                      ("report", ["report", str(run_dir)]),
                      ("export", ["export", str(run_dir), "--out", str(work / "b.tar.gz")])):
        step = _timed([sys.executable, "-m", "lens", *cmd])
        print(step.line(f"{scopes} scopes: {name}", size_mb))
        if step.returncode:
            return step.returncode
    if not keep:
        data.unlink()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scopes", type=int, nargs="+", default=[10, 100, 500])
    ap.add_argument("--sessions", type=int, default=50,
                    help="sessions per item: 50 as in `_s` (default), 500 as in `_m`")
    ap.add_argument("--workdir", type=Path, default=None,
                    help="where the files go (default: a temporary folder, removed after)")
    ap.add_argument("--keep", action="store_true",
                    help="keep each size's LENS file and run directory (in WORKDIR/scopes_N)")
    args = ap.parse_args()
    print(machine_line())
    for scopes in args.scopes:
        if args.keep:
            work = (args.workdir or Path(".")) / f"scopes_{scopes}"
            work.mkdir(parents=True, exist_ok=True)
            code = measure(work, scopes, args.sessions, keep=True)
        else:
            with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
                code = measure(Path(tmp), scopes, args.sessions)
        if code:
            return code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
