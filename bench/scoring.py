"""Scoring throughput: tier-1 scoring of many stored answers, and the judge at high concurrency.

The stored answers are real: one run of the scripted retrieval policy over SQLite FTS5 on a
published LENS scope, whose records are then stored again under further repeat indices, each
answer with a distinguishing last sentence, until there are N of them (each a distinct stored
question record, committed through the run store).

- tier 1: ``score_run(tiers={1})`` end to end (read every record, score, write scores.json);
  the baseline in the same run is reading the records alone (``load_run``).
- judge: ``score_run(tiers={1,2,3})`` on the first M answers with a judge client through the
  full model stack (openai backend) against the loopback fake server answering after a fixed
  latency, judge_concurrency c; ideal throughput is c / latency calls per second.

    python -m bench.scoring --answers 10000 --judge-answers 1000 --concurrency 64 --reps 3
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import yaml

from bench.common import ROOT, fake_server, machine_line, md_table, spread
from lens.data.config import CacheConfig, ModelConfig
from lens.flow.pipeline import execute
from lens.models.runtime import ModelRuntime
from lens.runs.records import unit_key
from lens.runs.store import RunStore
from lens.scoring.foundations.run_input import load_run
from lens.scoring.scorer import score_run

DATASET = ROOT.parent / "shared" / "lens-datasets" / "scope_01_with_distractors.json"


def build_run(tmp: Path, answers: int) -> Path:
    """A run directory holding ``answers`` stored question records (see the module doc)."""
    cfg = {"name": "score-bench", "dataset": {"path": str(DATASET)},
           "adapters": [{"name": "sqlite_fts"}], "agent": {"model": "scripted/policy"},
           "out_dir": str(tmp / "runs"), "cache": {"enabled": False},
           "scoring": {"enabled": False}, "report": False}
    path = tmp / "score-bench.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    run_dir = execute(path).run_dir
    store = RunStore.open(run_dir)
    base = store.load_records()
    caps = next(e["capabilities"] for e in store.events() if e.get("kind") == "unit_started")
    clones = []
    repeat = 1
    while len(base) + len(clones) < answers:
        unit = unit_key(base[0].adapter, base[0].scope_id, repeat)
        store.append_event("unit_started", unit, adapter=base[0].adapter,
                           scope_id=base[0].scope_id, repeat=repeat, capabilities=caps)
        for r in base:
            if len(base) + len(clones) >= answers:
                break
            # A distinct answer per clone, so that every judge task is a new one (the judge
            # asks once per distinct question/answer pair).
            clones.append(r.model_copy(update={"repeat": repeat, "unit_key": unit,
                                               "answer": f"{r.answer} Variant {repeat}."}))
        repeat += 1
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(store.save_question, clones))
    store.close()
    manifest = store.manifest()
    manifest["config"]["repeats"] = repeat
    store.write_manifest(manifest)
    return run_dir


def subset_run(src: Path, dst_root: Path, answers: int) -> Path:
    """A copy of ``src`` keeping its first ``answers`` committed records."""
    src_store = RunStore.open(src)
    dst = dst_root / f"{src.name}-first{answers}"
    dst.mkdir()
    store = RunStore(dst)
    store.write_manifest(src_store.manifest())
    (dst / "events.jsonl").touch()
    for e in src_store.events():
        if e.get("kind") == "unit_started":
            store.append_event("unit_started", e["key"], capabilities=e["capabilities"])
    for r in src_store.load_records()[:answers]:
        store.save_question(r)
    store.close()
    return dst


async def judge_once(run_dir: Path, base_url: str, c: int) -> tuple[float, int, float]:
    """(seconds of the judge phase, judge calls, CPU seconds of the judge phase).

    The judge phase is a full scoring minus a tier-1-only scoring of the same answers, both
    measured here, so that reading records and tier 1 are not counted as judge time."""
    cpu0, t0 = time.process_time(), time.perf_counter()
    await score_run(run_dir, tiers={1}, run_finished=True, write=False)
    base_wall, base_cpu = time.perf_counter() - t0, time.process_time() - cpu0
    runtime = ModelRuntime(cache=CacheConfig(enabled=False))
    judge = runtime.client(ModelConfig(model="openai/bench-judge", base_url=base_url,
                                       max_concurrency=c, max_retries=2, timeout_s=60))
    cpu0, t0 = time.process_time(), time.perf_counter()
    scores = await score_run(run_dir, judge=judge, tiers={1, 2, 3}, judge_concurrency=c,
                             run_finished=True)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    await runtime.aclose()
    calls = runtime.usage()["total"]["calls"]
    if not calls or scores.judge is None:
        raise RuntimeError("the judge made no call")
    return wall - base_wall, calls, cpu - base_cpu


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="scoring throughput")
    p.add_argument("--answers", type=int, default=10_000)
    p.add_argument("--judge-answers", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--latency-ms", type=float, default=100.0)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--tier1-reps", type=int, default=None,
                   help="repetitions of the tier-1 measurement (default --reps; 0 skips it)")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    print(machine_line(), flush=True)
    out: dict[str, object] = {"machine": machine_line(), "args": {k: str(v) for k, v in
                                                                  vars(args).items()}}
    with tempfile.TemporaryDirectory(prefix="lens-score-bench-") as tmp_s:
        tmp = Path(tmp_s)
        tier1_reps = args.reps if args.tier1_reps is None else args.tier1_reps
        answers = args.answers if tier1_reps else args.judge_answers
        t = time.perf_counter()
        run_dir = build_run(tmp, answers)
        print(f"built a run with {answers} stored answers in "
              f"{time.perf_counter() - t:.1f}s", flush=True)
        loads, tier1 = [], []
        rows = []
        for rep in range(tier1_reps):
            t = time.perf_counter()
            n = len(load_run(run_dir).items)
            loads.append(time.perf_counter() - t)
            t = time.perf_counter()
            scores = anyio.run(lambda: score_run(run_dir, tiers={1}, run_finished=True))
            tier1.append(time.perf_counter() - t)
            scored = sum(1 for q in scores.questions if q.metrics.get("fact_recall") is not None)
            print(f"  rep {rep + 1}: read {n} records {loads[-1]:.2f}s; tier-1 score "
                  f"{tier1[-1]:.2f}s ({scored} with a fact_recall value)", flush=True)
        if tier1:
            rows += [["tier-1 scoring (read + score + write scores.json)",
                      spread(tier1).fmt(2, " s"),
                      spread([args.answers / x for x in tier1]).fmt(0, "/s")],
                     ["baseline: reading the records only", spread(loads).fmt(2, " s"),
                      spread([args.answers / x for x in loads]).fmt(0, "/s")]]
        out["tier1_s"], out["load_s"] = tier1, loads

        ideal = args.concurrency / (args.latency_ms / 1000)
        judged = []
        with fake_server(args.latency_ms, pattern="judge") as server:
            for rep in range(args.reps):
                # A fresh copy each time: a run keeps its verdicts, and re-scoring reuses them.
                rep_dir = tmp / f"judge-{rep}"
                rep_dir.mkdir()
                judge_dir = subset_run(run_dir, rep_dir, args.judge_answers)
                wall, calls, cpu = anyio.run(judge_once, judge_dir, server.base_url,
                                             args.concurrency)
                judged.append((wall, calls, cpu))
                print(f"  judge rep {rep + 1}: {calls} calls in {wall:.2f}s = "
                      f"{calls / wall:.0f}/s (ideal {ideal:.0f}/s), "
                      f"CPU {cpu / calls * 1e3:.2f} ms/call", flush=True)
        rows.append([f"judge phase, {args.judge_answers} answers, c={args.concurrency}, "
                     f"{args.latency_ms:g} ms latency (calls/s; ideal {ideal:.0f}/s)",
                     spread([w for w, _, _ in judged]).fmt(2, " s"),
                     spread([c / w for w, c, _ in judged]).fmt(0, "/s")])
        rows.append(["judge efficiency (calls/s ÷ ideal)", "",
                     spread([c / w / ideal for w, c, _ in judged]).fmt(3)])
        rows.append(["judge: CPU per call (ms)", "",
                     spread([cpu / c * 1e3 for _, c, cpu in judged]).fmt(3)])
        out["judge"] = judged
    print()
    print(md_table(["what", "time", "throughput"], rows))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
