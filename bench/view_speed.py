"""How fast ``lens view`` answers on a 10,000-question run, on two cores.

A run directory of that size (2 adapters × 20 scopes × 250 questions, each record with a
transcript, a tool call and its returned refs; ``scores.json`` with per-fact detail) is written
through the real run store, then ``lens view`` is started on it in a subprocess pinned to two
cores (``taskset -c 0,1`` where available) and every page is fetched over loopback HTTP: the
first request of each page (cold: the run is read and the report computed), then ``--reps``
more (warm: the server's cache answers, re-reading only what the run appended).

    python -m bench.view_speed --questions 10000 --reps 5
    python -m bench.view_speed --keep /tmp/viewbench   # keep the run directory to look at
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.common import ROOT, machine_line, spread
from lens.runs.store import RunStore
from tests.report.runfactory import RunSpec, build

DETAIL = {
    "fact_recall": {"facts": [
        {"fact": "p99 latency rose to 410ms", "matched": True, "coverage": 1.0,
         "reason": "stated"},
        {"fact": "retries doubled", "matched": False, "coverage": 0.0,
         "reason": "not stated"}]},
    "evidence_grounding": {"cited": 1, "grounded": 1},
}


def synthesize(parent: Path, questions: int) -> Path:
    """A scored run of ``questions`` questions, written through RunStore in batches."""
    adapters = ("sqlite_fts", "bm25s")
    scopes = 20
    per_scope = max(1, questions // (len(adapters) * scopes))
    spec = RunSpec(name="view-bench", adapters=adapters, scopes=scopes,
                   questions_per_scope=per_scope, error_every=97, detail=DETAIL)
    store = RunStore.create(parent, spec.name, "view-bench-id")
    manifest, records, scores = build(spec, str(store.root))
    store.write_manifest(manifest)
    for i in range(0, len(records), 500):
        store.save_questions(records[i:i + 500])
    store.close()
    assert scores is not None
    (store.root / "scores.json").write_text(scores.model_dump_json(), encoding="utf-8")
    return store.root


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> float:
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=120) as resp:
            resp.read()
    except urllib.error.HTTPError as err:
        raise RuntimeError(f"{url}: HTTP {err.code}") from None
    return time.perf_counter() - t0


def measure(runs_dir: Path, run_name: str, reps: int) -> list[tuple[str, float, list[float]]]:
    port = _free_port()
    cmd = [sys.executable, "-m", "lens", "view", str(runs_dir), "--port", str(port)]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "0,1", *cmd]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                _get(base + "/static/view.css")
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("lens view did not start") from None
                time.sleep(0.2)
        run = f"{base}/runs/{run_name}"
        key = "sqlite_fts%7Cscope_07%7Cr0%7Cq07_123"
        pages = [
            ("run list", f"{base}/"),
            ("run page (report content in)", run),
            ("live progress (JSON)", f"{base}/api/runs/{run_name}/progress"),
            ("questions, page 1", f"{run}/questions"),
            ("questions, sorted by fact_recall, type filter",
             f"{run}/questions?sort=fact_recall&order=asc&type=temporal"),
            ("questions, free text", f"{run}/questions?q=q07_12"),
            ("question drill-down", f"{run}/question?key={key}"),
            ("side by side (2 arms; first: verdicts pending)", f"{base}/compare?run={run_name}"),
        ]
        out = [("run list, first request (reads the whole run)", _get(f"{base}/"), [])]
        t0 = time.perf_counter()
        job = f"{base}/api/job?name=report:{run_name}"
        _get(run)  # starts the report's computation in the worker
        while json.loads(urllib.request.urlopen(job, timeout=60).read())["ready"] is not True:
            time.sleep(0.2)
        out.append(("report computed in the worker (not a request)",
                    time.perf_counter() - t0, []))
        for name, url in pages:
            cold = _get(url)
            warm = [_get(url) for _ in range(reps)]
            out.append((name, cold, warm))
        return out
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=10_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="write the run here and keep it")
    args = ap.parse_args()
    parent = args.keep or Path(tempfile.mkdtemp(prefix="lens-view-bench-"))
    parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    existing = [p for p in parent.iterdir() if (p / "manifest.json").is_file()]
    if existing:
        root = existing[0]
        print(f"using {root}")
    else:
        root = synthesize(parent, args.questions)
        print(f"wrote {root} in {time.perf_counter() - t0:.1f} s")
    print(machine_line(("starlette", "uvicorn")))
    for name, cold, warm in measure(parent, root.name, args.reps):
        then = f"; then {spread(warm).fmt(3, ' s')}" if warm else ""
        print(f"  {name:50s} first {cold:.3f} s{then}")
    if args.keep is None:
        shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    main()
