"""LongMemEval ``_s`` end to end on its real file: ``lens datasets import`` of the whole file, then
a complete ``lens run`` over sqlite_fts with the scripted agent (and lens's default scoring,
which calls no model for a scripted run), with the wall time, CPU seconds and peak memory of
each step.

    python bench/longmemeval_s_run.py                       # the whole file (498 items)
    python bench/longmemeval_s_run.py --items 5             # its first 5 items: a quick check
    python bench/longmemeval_s_run.py --source PATH --workdir DIR

The source defaults to ``../thirdparty/longmemeval/longmemeval_s.json`` beside the project
(assemble it with ``bench/longmemeval_files.py``). Each step runs in a process of its own, so its
peak resident set is its own (the kernel's ru_maxrss); the 1-minute load average is printed
beside it, since wall time on a shared machine depends on the load.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import ijson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.big_import import _timed
from bench.common import beside, machine_line

DEFAULT_SOURCE = beside("thirdparty", "longmemeval", "longmemeval_s.json")


def first_items(source: Path, out: Path, n: int) -> int:
    """Copy the first ``n`` items of ``source`` to ``out``, one at a time; returns how many."""
    written = 0
    with source.open("rb") as src, out.open("w", encoding="utf-8") as fh:
        fh.write("[")
        for item in ijson.items(src, "item", use_float=True):
            if written == n:
                break
            fh.write(("," if written else "") + json.dumps(item, ensure_ascii=False))
            written += 1
        fh.write("]")
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    ap.add_argument("--items", type=int, default=None,
                    help="only the first N items (a quick check; default: the whole file)")
    ap.add_argument("--workdir", type=Path, default=None,
                    help="where the files go (default: a temporary folder, removed after)")
    args = ap.parse_args()
    if not args.source.is_file():
        print(f"{args.source}: not found; assemble it with bench/longmemeval_files.py",
              file=sys.stderr)
        return 2
    print(machine_line())
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        src = args.source
        if args.items is not None:
            src = work / "longmemeval_s_part.json"
            print(f"source: the first {first_items(args.source, src, args.items)} items of "
                  f"{args.source}")
        size_mb = src.stat().st_size / 1e6
        out = work / "lme_s.lens.json"
        step = _timed([sys.executable, "-m", "lens", "datasets", "import", "--format",
                       "longmemeval", str(src), "--out", str(out)])
        print(step.line("import", size_mb) + f"; wrote {out.stat().st_size / 1e6:.0f} MB")
        if step.returncode:
            return step.returncode
        runs = work / "runs"
        config = work / "run.yaml"
        config.write_text(json.dumps({
            "name": "lme-s", "dataset": {"path": str(out)}, "out_dir": str(runs),
            "adapters": [{"name": "sqlite_fts"}], "agent": {"model": "scripted/policy"},
            "cache": {"enabled": False}}))
        t0 = time.perf_counter()
        step = _timed([sys.executable, "-m", "lens", "run", str(config), "--quiet"])
        print(step.line("run", out.stat().st_size / 1e6,
                        "complete run (ingest, answers, scoring, report) in "))
        if step.returncode:
            return step.returncode
        (run_dir,) = runs.iterdir()
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
        statuses: dict[str, int] = {}
        for line in (run_dir / "records.jsonl").read_text(encoding="utf-8").splitlines():
            status = json.loads(line).get("status", "?")
            statuses[status] = statuses.get(status, 0) + 1
        late = next((c["value"] for c in summary.get("checklist", [])
                     if c["id"] == "evidence_after_question"), "none")
        print(f"questions: {sum(statuses.values())} ({statuses}); late evidence: {late}; "
              f"run + report {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
