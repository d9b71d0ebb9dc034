"""End to end on the local model: the quickstart's questions per minute, prompt and generation
tokens/s, and what reusing the evaluated prompt prefix across an agent's turns saves.

Each repetition runs the quickstart config (``configs/quickstart.yaml``) through ``lens run``'s
own code path (``lens.flow.pipeline.execute``) twice, alternating: with prefix reuse (the backend's
behaviour) and without it (the bench forgets the evaluated prefix before every call, so every
prompt is evaluated from its first token). The model cache is off so every call is computed;
scoring and reports are off so the clock measures answering. The model is loaded before the
clock starts. Token counts and times come from llama.cpp's own performance counters:
multi-token batches count as prompt evaluation, single-token steps as generation.

    python -m bench.e2e_local --reps 2
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.common import ROOT, machine_line, md_table, spread
from lens.data.config import load_config

QUICKSTART = ROOT / "configs" / "quickstart.yaml"


@dataclass
class E2E:
    reuse: bool
    questions: int
    wall_s: float
    prompt_tokens_sent: int
    n_p_eval: int
    t_p_eval_s: float
    n_eval: int
    t_eval_s: float

    @property
    def per_minute(self) -> float:
        return self.questions / self.wall_s * 60


def bench_config(tmp: Path, questions: int | None, max_seconds: float | None) -> Path:
    raw = yaml.safe_load(QUICKSTART.read_text(encoding="utf-8"))
    dataset = (QUICKSTART.parent / raw["dataset"]["path"]).resolve()
    if questions is not None:
        # The first questions in checkpoint order, with every episode: a shorter run of the
        # same kind of work.
        data = json.loads(dataset.read_text(encoding="utf-8"))
        data["questions"] = sorted(data["questions"], key=lambda q: (
            q["checkpoint_after"], q["question_id"]))[:questions]
        dataset = tmp / "quickstart-subset.json"
        dataset.write_text(json.dumps(data), encoding="utf-8")
    raw["dataset"]["path"] = str(dataset)
    if max_seconds is not None:
        # A loaded machine can be slower than the budget the quickstart sets for a session;
        # a session cut by its budget would not measure the model's speed.
        raw["agent"].setdefault("budget", {})["max_seconds"] = max_seconds
    raw.update(out_dir=str(tmp / "runs"), cache={"enabled": False},
               scoring={"enabled": False}, report=False)
    path = tmp / "quickstart-bench.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


@contextmanager
def prefix_reuse(enabled: bool) -> Iterator[None]:
    """With ``enabled`` False, make every call evaluate its whole prompt."""
    import lens.models.llama_backend as backend

    original = backend.greedy_constrained
    if enabled:
        yield
        return

    def from_scratch(llm: Any, *args: Any, **kwargs: Any) -> Any:
        llm.n_tokens = 0
        return original(llm, *args, **kwargs)

    backend.greedy_constrained = from_scratch
    try:
        yield
    finally:
        backend.greedy_constrained = original


def load_model(config_path: Path) -> Any:
    from lens.models.llama_backend import LlamaCppClient

    client = LlamaCppClient(load_config(config_path).agent)
    return client._loaded().llm


def run_once(config_path: Path, llm: Any, reuse: bool) -> E2E:
    import llama_cpp

    from lens.flow.pipeline import execute
    from lens.runs.store import RunStore

    ctx = llm._ctx.ctx
    llm.n_tokens = 0  # no run may profit from the previous run's last prompt
    llama_cpp.llama_perf_context_reset(ctx)
    t0 = time.perf_counter()
    with prefix_reuse(reuse):
        outcome = execute(config_path)
    wall = time.perf_counter() - t0
    perf = llama_cpp.llama_perf_context(ctx)
    records = RunStore(outcome.run_dir).load_records()
    sent = sum(c.prompt_tokens for r in records for c in r.model_calls)
    if outcome.summary.errored or outcome.summary.units_failed:
        raise RuntimeError(f"quickstart run had errors: {outcome.summary}")
    cut = [r.question_id for r in records if r.budget and r.budget.stop_reason == "max_seconds"]
    if cut:
        print(f"  warning: {len(cut)} session(s) stopped by max_seconds: {cut}", flush=True)
    return E2E(reuse=reuse, questions=outcome.summary.answered,
               wall_s=outcome.summary.wall_s or wall, prompt_tokens_sent=sent,
               n_p_eval=int(perf.n_p_eval), t_p_eval_s=perf.t_p_eval_ms / 1000,
               n_eval=int(perf.n_eval), t_eval_s=perf.t_eval_ms / 1000)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="the quickstart on the local model, timed")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--questions", type=int, default=None,
                   help="only the first K questions of the quickstart (default: all)")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="override the agent's per-question time budget")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    print(machine_line(), flush=True)
    results: list[E2E] = []
    with tempfile.TemporaryDirectory(prefix="lens-e2e-") as tmp:
        config_path = bench_config(Path(tmp), args.questions, args.max_seconds)
        t = time.perf_counter()
        llm = load_model(config_path)
        print(f"model loaded in {time.perf_counter() - t:.1f}s "
              f"(n_threads {llm.n_threads}, n_ctx {llm.n_ctx()})", flush=True)
        for rep in range(args.reps):
            for reuse in (True, False):
                r = run_once(config_path, llm, reuse)
                results.append(r)
                print(f"  rep {rep + 1} reuse={'on' if reuse else 'off'}: {r.questions} q in "
                      f"{r.wall_s:.1f}s = {r.per_minute:.2f} q/min; prompt eval {r.n_p_eval} tok "
                      f"in {r.t_p_eval_s:.1f}s ({r.n_p_eval / r.t_p_eval_s:.0f} tok/s) of "
                      f"{r.prompt_tokens_sent} sent; generation {r.n_eval} tok in "
                      f"{r.t_eval_s:.1f}s ({r.n_eval / r.t_eval_s:.1f} tok/s)", flush=True)
    rows = []
    for reuse in (True, False):
        rs = [r for r in results if r.reuse == reuse]
        rows.append([
            "on" if reuse else "off",
            spread([r.per_minute for r in rs]).fmt(2),
            spread([r.wall_s for r in rs]).fmt(1),
            spread([r.n_p_eval / r.t_p_eval_s for r in rs]).fmt(0),
            spread([r.n_eval / r.t_eval_s for r in rs]).fmt(1),
            spread([r.n_p_eval / r.prompt_tokens_sent for r in rs]).fmt(3),
            spread([r.t_p_eval_s for r in rs]).fmt(1),
        ])
    on = [r for r in results if r.reuse]
    off = [r for r in results if not r.reuse]
    gain = spread([b.wall_s / a.wall_s for a, b in zip(on, off, strict=True)])
    eval_gain = spread([b.t_p_eval_s / a.t_p_eval_s for a, b in zip(on, off, strict=True)])
    print()
    print(md_table(["prefix reuse", "questions/min", "answering wall s", "prompt tok/s",
                    "generation tok/s", "prompt tokens evaluated / sent",
                    "prompt-eval s"], rows))
    print(f"\nprefix reuse: prompt evaluation {eval_gain.fmt(2, 'x')} faster, "
          f"answering wall time {gain.fmt(2, 'x')} shorter (same run, paired by repetition)")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine_line(),
                                         "results": [vars(r) for r in results]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
