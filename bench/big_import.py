"""Published sizes: LongMemEval-shaped files of hundreds of megabytes to gigabytes, imported and
run, with the time to the first answered question and the peak memory of each step.

    python bench/big_import.py --size-gb 0.3
    python bench/big_import.py --size-gb 3 --workdir /path/with/10GB/free

Steps, each in a process of its own so that its peak resident set (VmHWM) is its own:
1. make: a synthetic file of LongMemEval's shape (items of ~50 haystack sessions of user and
   assistant turns, one question each), written item by item, of about ``--size-gb``;
2. import: ``lens datasets import --format longmemeval`` (streamed: one item in memory at a time);
3. run: ``lens run`` with the scripted agent over sqlite_fts, stopped once the first question is
   answered: the time from start to that answer, and the process's peak memory until then.
Targets (issue 25): first question within 10 s at 0.3 GB; peak memory under 2x the file size.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, machine_line

WORDS = ("the a we I you my trip plan garden recipe budget meeting dog bike paper code city "
         "music train coffee weekend project report friend doctor camera book movie sister "
         "market river coast hotel laptop game team class yoga bread").split()
TYPES = ("single-session-user", "single-session-preference", "single-session-assistant",
         "multi-session", "temporal-reasoning", "knowledge-update")


def _item(i: int, rng: random.Random, sessions: int, turns: int, words: int) -> dict:
    sids = [f"s{i}_{k}" for k in range(sessions)]
    return {
        "question_id": f"q{i:06d}" + ("_abs" if i % 30 == 29 else ""),
        "question_type": TYPES[i % len(TYPES)],
        "question": f"What did I say about item {i}?",
        "answer": f"answer {i}",
        "question_date": "2023/12/31 (Sun) 23:00",
        "haystack_session_ids": sids,
        "haystack_dates": [f"2023/{1 + k % 12:02d}/{1 + k % 28:02d} (Mon) 10:00"
                           for k in range(sessions)],
        "haystack_sessions": [[{"role": "user" if t % 2 == 0 else "assistant",
                                "content": " ".join(rng.choices(WORDS, k=words)),
                                **({"has_answer": True} if k == 0 and t == 0 else {})}
                               for t in range(turns)] for k in range(sessions)],
        "answer_session_ids": [sids[0]],
    }


def make(path: Path, size_bytes: int, seed: int = 0) -> int:
    rng = random.Random(seed)
    written = 0
    with path.open("w", encoding="utf-8") as fh:
        fh.write("[")
        i = 0
        while written < size_bytes:
            text = ("," if i else "") + json.dumps(_item(i, rng, 50, 10, 60))
            fh.write(text)
            written += len(text)
            i += 1
        fh.write("]")
    return i


def _hwm_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _timed(cmd: list[str], *, stop_when: Path | None = None) -> tuple[float, float | None, int]:
    """Wall seconds, peak RSS in MB (sampled VmHWM) and return code of ``cmd``; with
    ``stop_when``, the process is stopped once that events file records a finished question."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    peak: float | None = None
    while proc.poll() is None:
        peak = max(filter(None, [peak, _hwm_mb(proc.pid)]), default=None)
        if stop_when is not None:
            events = list(stop_when.parent.glob("*/events.jsonl"))
            if events and b'"question_done"' in events[0].read_bytes():
                elapsed = time.perf_counter() - t0
                peak = max(filter(None, [peak, _hwm_mb(proc.pid)]), default=None)
                proc.terminate()
                proc.wait(30)
                return elapsed, peak, 0
        time.sleep(0.05)
    elapsed = time.perf_counter() - t0
    if proc.returncode:
        sys.stderr.write(proc.stderr.read().decode()[-2000:] if proc.stderr else "")
    return elapsed, peak, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-gb", type=float, default=0.3)
    ap.add_argument("--workdir", type=Path, default=None,
                    help="where the files go (default: a temporary folder, removed after)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        src = work / "longmemeval_synth.json"
        t0 = time.perf_counter()
        items = make(src, int(args.size_gb * 1e9))
        size_mb = src.stat().st_size / 1e6
        print(machine_line())
        print(f"make: {items} items, {size_mb:.0f} MB in {time.perf_counter() - t0:.1f} s")
        out = work / "synth.lens.json"
        secs, peak, rc = _timed([sys.executable, "-m", "lens", "datasets", "import", "--format",
                                 "longmemeval", str(src), "--out", str(out)])
        print(f"import: {secs:.1f} s, peak RSS {peak or float('nan'):.0f} MB "
              f"({(peak or 0) / size_mb:.2f}x the source), exit {rc}")
        if rc:
            return rc
        runs = work / "runs"
        config = work / "run.yaml"
        config.write_text(json.dumps({
            "name": "big", "dataset": {"path": str(out)}, "out_dir": str(runs),
            "adapters": [{"name": "sqlite_fts"}], "agent": {"model": "scripted/policy"},
            "scoring": {"enabled": False}, "report": False, "cache": {"enabled": False},
            "concurrency": {"units": 1, "questions": 1}}))
        secs, peak, rc = _timed([sys.executable, "-m", "lens", "run", str(config)],
                                stop_when=runs / "x")
        print(f"run: first question answered after {secs:.1f} s, peak RSS "
              f"{peak or float('nan'):.0f} MB ({(peak or 0) / size_mb:.2f}x the source), "
              f"exit {rc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
