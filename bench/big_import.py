"""Published sizes: LongMemEval-shaped files of hundreds of megabytes to gigabytes, imported and
run, with the time to the first answered question and the peak memory of each step.

    python bench/big_import.py --size-gb 0.3
    python bench/big_import.py --size-gb 3 --workdir /path/with/10GB/free

Steps, each in a process of its own so that its peak resident set (the kernel's ru_maxrss for
the child) is its own; each step also reports its CPU seconds and the 1-minute load average,
since wall time on a shared machine depends on the load:
1. make: a synthetic file of LongMemEval's shape, written item by item, of about ``--size-gb``:
   500 items (one question each) of 50 haystack sessions (as ``_s``) or, from 1 GB, 500
   sessions (as ``_m``), each of 10 user and assistant turns whose length makes up the size;
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
from dataclasses import dataclass
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


ITEMS = 500
TURNS = 10
# Bytes a word of WORDS takes in the JSON, with its space (measured: 5.6 on average).
WORD_BYTES = 5.6


def shape(size_bytes: int) -> tuple[int, int]:
    """Sessions per item and words per turn for a file of about ``size_bytes``."""
    sessions = 500 if size_bytes >= 1e9 else 50
    words = max(1, round(size_bytes / (ITEMS * sessions * TURNS * WORD_BYTES)) - 10)
    return sessions, words


def make(path: Path, size_bytes: int, seed: int = 0) -> int:
    """Write the file; returns its number of items (more than ITEMS if the turns came out short
    of the size)."""
    rng = random.Random(seed)
    sessions, words = shape(size_bytes)
    written = 0
    with path.open("w", encoding="utf-8") as fh:
        fh.write("[")
        i = 0
        while written < size_bytes:
            text = ("," if i else "") + json.dumps(_item(i, rng, sessions, TURNS, words))
            fh.write(text)
            written += len(text)
            i += 1
        fh.write("]")
    return i


@dataclass
class Step:
    seconds: float
    cpu_seconds: float
    peak_mb: float
    load: float
    returncode: int

    def line(self, name: str, size_mb: float, what: str = "") -> str:
        return (f"{name}: {what}{self.seconds:.1f} s wall, {self.cpu_seconds:.1f} s CPU, "
                f"load(1m) {self.load:.2f}, peak RSS {self.peak_mb:.0f} MB "
                f"({self.peak_mb / size_mb:.2f}x the source), exit {self.returncode}")


def _timed(cmd: list[str], *, stop_when: Path | None = None) -> Step:
    """Wall and CPU seconds, peak RSS (the kernel's ru_maxrss of the child) and return code of
    ``cmd``; with ``stop_when``, the process is stopped once an events file under that folder
    records a finished question."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    # stderr to a file: a pipe nobody reads would stall a chatty child.
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err)
        elapsed: float | None = None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if elapsed is None and stop_when is not None:
                events = list(stop_when.glob("*/events.jsonl"))
                if events and b'"question_done"' in events[0].read_bytes():
                    elapsed = time.perf_counter() - t0
                    proc.terminate()
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        code = 0 if elapsed is not None else proc.returncode
        if code:
            err.seek(0)
            sys.stderr.write(err.read().decode(errors="replace")[-2000:])
    return Step(seconds=elapsed if elapsed is not None else time.perf_counter() - t0,
                cpu_seconds=usage.ru_utime + usage.ru_stime, peak_mb=usage.ru_maxrss / 1024,
                load=max(load, os.getloadavg()[0]), returncode=code)


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
        step = _timed([sys.executable, "-m", "lens", "datasets", "import", "--format",
                       "longmemeval", str(src), "--out", str(out)])
        print(step.line("import", size_mb) + f"; wrote {out.stat().st_size / 1e6:.0f} MB")
        if step.returncode:
            return step.returncode
        src.unlink()
        runs = work / "runs"
        config = work / "run.yaml"
        config.write_text(json.dumps({
            "name": "big", "dataset": {"path": str(out)}, "out_dir": str(runs),
            "adapters": [{"name": "sqlite_fts"}], "agent": {"model": "scripted/policy"},
            "scoring": {"enabled": False}, "report": False, "cache": {"enabled": False},
            "concurrency": {"units": 1, "questions": 1}}))
        step = _timed([sys.executable, "-m", "lens", "run", str(config)], stop_when=runs)
        # The run's peak against the file it loads (the imported one).
        print(step.line("run", out.stat().st_size / 1e6, "first question answered after "))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
