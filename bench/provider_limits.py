"""Does lens use what a rate-limited hosted API allows, without losing or repeating questions?

N questions go through the real runner, agent, model stack (openai backend, retry, endpoint
limits, metering) and run store against ``bench.fakeserver`` in its realistic-provider mode:
log-normal latency (median 1.5 s, p99 10 s by default), requests- and tokens-per-minute limits
booked on arrival at prompt + max_tokens, 429 with ``Retry-After`` and ``x-ratelimit-*`` headers
on every reply. The memory adapter is an in-process dictionary and the agent's config sets no
``max_tokens`` (so each turn asks for lens's default allowance), as a user's first run would.

Two modes: ``told`` (the config states the provider's limits) and ``untold`` (lens learns them
from the headers). For each:

- token rate: the tokens the provider booked per minute of the run's wall time, as a fraction
  of the tokens-per-minute limit (target >= 0.95 over a 2,000-question run);
- request rate: the same for requests per minute;
- 429 share: replies that were 429 among all replies (target <= 1%);
- lost and duplicated: questions without an answered record, and questions committed more than
  once (target 0 and 0).

    python -m bench.provider_limits --questions 2000

A short check (compressed latencies, small burst):

    python -m bench.provider_limits --questions 100 --latency-ms 150 --latency-p99-ms 1000 \\
        --tpm 3000000 --burst-s 2
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.common import fake_server, machine_line, md_table
from bench.runner_efficiency import SCOPES, DictMemory, write_dataset
from lens.core import eventloop, logs
from lens.data.config import CacheConfig, RunConfig
from lens.data.dataset_load import load_dataset
from lens.models.runtime import ModelRuntime
from lens.runner.orchestrator import Runner
from lens.runs.store import RunStore

TOKEN_RATE_TARGET = 0.95
RATE_LIMITED_TARGET = 0.01


@dataclass
class Outcome:
    mode: str
    questions: int
    wall_s: float
    answered: int
    lost: int
    duplicated: int
    calls: int
    token_rate: float
    request_rate: float
    rate_limited: int
    replies: int
    pauses: int
    cuts: int
    learned: dict[str, float]

    @property
    def rate_limited_share(self) -> float:
        return self.rate_limited / self.replies if self.replies else 0.0

    @property
    def passed(self) -> bool:
        return (self.token_rate >= TOKEN_RATE_TARGET and self.lost == 0
                and self.duplicated == 0 and self.rate_limited_share <= RATE_LIMITED_TARGET)


def run_config(dataset: Path, base_url: str, args: argparse.Namespace,
               told: tuple[float, float] | None, out: Path) -> RunConfig:
    """``told``: the (requests, tokens) per minute the config states, or None."""
    agent: dict[str, Any] = {
        "model": "openai/bench-model", "base_url": base_url,
        "max_concurrency": args.concurrency, "timeout_s": 120, "max_retries": 10,
        "budget": {"max_turns": 8, "max_tool_calls": 12, "max_payload_bytes": 200_000,
                   "max_seconds": 3600},
    }
    if told is not None:
        agent |= {"requests_per_minute": told[0], "tokens_per_minute": told[1]}
    return RunConfig.model_validate({
        "name": "bench", "dataset": {"path": str(dataset)},
        "adapters": [{"name": "null"}], "agent": agent,
        "concurrency": {"units": SCOPES, "questions": args.concurrency},
        "out_dir": str(out), "cache": {"enabled": False}, "scoring": {"enabled": False},
        "report": False,
    })


async def lens_run(dataset_path: Path, base_url: str, args: argparse.Namespace,
                   told: tuple[float, float] | None,
                   workdir: Path) -> tuple[float, dict[str, Any], RunStore, ModelRuntime]:
    config = run_config(dataset_path, base_url, args, told, workdir)
    dataset = load_dataset(dataset_path)
    store = RunStore.create(workdir, "bench", f"run-{time.monotonic_ns()}")
    runtime = ModelRuntime(cache=CacheConfig(enabled=False))
    client = runtime.client(config.agent)
    runner = Runner(config, dataset, store, client, adapter_factory=lambda _cfg: DictMemory())
    t0 = time.perf_counter()
    await runner.run()
    wall = time.perf_counter() - t0
    usage = runtime.usage()
    await runtime.aclose()
    return wall, usage, store, runtime


def count_commits(store: RunStore) -> tuple[Counter[str], dict[str, str]]:
    commits: Counter[str] = Counter()
    status: dict[str, str] = {}
    for event in store.events():
        if event.get("kind") == "question_done":
            commits[event["question_id"]] += 1
            status[event["question_id"]] = event.get("status", "answered")
    return commits, status


def one_mode(mode: str, args: argparse.Namespace, tmp: Path,
             told: tuple[float, float] | None = None) -> Outcome:
    """One run; ``told`` overrides the limits the ``told`` mode states (default: the
    provider's own)."""
    if mode == "told" and told is None:
        told = (args.rpm, args.tpm)
    extra = ["--latency-p99-ms", str(args.latency_p99_ms), "--rpm", str(args.rpm),
             "--tpm", str(args.tpm), "--burst-s", str(args.burst_s), "--seed", str(args.seed)]
    work = tmp / f"{mode}-{time.monotonic_ns()}"
    work.mkdir(parents=True)
    dataset = write_dataset(work / "dataset.json", args.questions)
    with fake_server(args.latency_ms, extra_args=extra) as server:
        wall, usage, store, runtime = eventloop.run(
            lens_run, dataset, server.base_url, args, told if mode == "told" else None, work,
            loop=args.loop)
    commits, status = count_commits(store)
    store.close()
    final = server.final
    (_, limiter), = runtime.limiters.items()
    answered = sum(1 for s in status.values() if s == "answered")
    minutes = wall / 60.0
    return Outcome(
        mode=mode, questions=args.questions, wall_s=wall, answered=answered,
        lost=args.questions - answered,
        duplicated=sum(1 for n in commits.values() if n > 1),
        calls=usage["total"]["calls"],
        token_rate=final.get("BOOKED_TOKENS", 0) / (minutes * args.tpm),
        request_rate=final.get("ADMITTED", 0) / (minutes * args.rpm),
        rate_limited=final.get("RATE_LIMITED", 0),
        replies=final.get("ADMITTED", 0) + final.get("RATE_LIMITED", 0),
        pauses=limiter.pauses, cuts=limiter.semaphore.cuts, learned=dict(limiter.learned),
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="lens against a rate-limited, heavy-tailed provider")
    p.add_argument("--questions", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=128,
                   help="questions in flight, and the endpoint's max_concurrency")
    p.add_argument("--latency-ms", type=float, default=1500.0, help="median latency")
    p.add_argument("--latency-p99-ms", type=float, default=10_000.0)
    p.add_argument("--rpm", type=float, default=6000.0)
    p.add_argument("--tpm", type=float, default=2_000_000.0)
    p.add_argument("--burst-s", type=float, default=10.0,
                   help="seconds' worth of the limits the provider lets a client spend at once")
    p.add_argument("--seed", type=int, default=0, help="seed of the provider's latency draws")
    p.add_argument("--modes", default="told,untold",
                   help="told (the config states the limits), untold (learnt from headers)")
    p.add_argument("--loop", choices=("auto", "uvloop", "asyncio"), default="auto")
    p.add_argument("--json", type=Path, help="also write the outcomes here")
    args = p.parse_args(argv)
    logs.configure()
    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - {"told", "untold"}
    if unknown:
        p.error(f"--modes: unknown {sorted(unknown)}; known: told, untold")
    print(machine_line())
    print(f"N={args.questions} questions, concurrency {args.concurrency}, latency log-normal "
          f"median {args.latency_ms:g} ms p99 {args.latency_p99_ms:g} ms, {args.rpm:g} RPM, "
          f"{args.tpm:g} TPM, burst {args.burst_s:g} s, seed {args.seed}", flush=True)
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="lens-bench-") as tmp:
        for mode in modes:
            outcome = one_mode(mode, args, Path(tmp))
            outcomes.append(outcome)
            print(f"  {mode}: {outcome.wall_s:.1f}s token rate {outcome.token_rate:.3f} "
                  f"429s {outcome.rate_limited}/{outcome.replies} lost {outcome.lost} "
                  f"duplicated {outcome.duplicated}", flush=True)
    rows = [[o.mode, f"{o.wall_s:.1f}", f"{o.token_rate:.3f}", f"{o.request_rate:.3f}",
             f"{o.rate_limited_share:.2%} ({o.rate_limited}/{o.replies})", str(o.lost),
             str(o.duplicated), str(o.pauses), str(o.cuts), "PASS" if o.passed else "FAIL"]
            for o in outcomes]
    print()
    print(md_table(["limits", "wall s", "token rate", "request rate", "429 share", "lost",
                    "duplicated", "pauses", "cuts", "targets"], rows))
    if args.json:
        args.json.write_text(json.dumps({
            "args": vars(args) | {"json": str(args.json)}, "machine": machine_line(),
            "outcomes": [asdict(o) | {"rate_limited_share": o.rate_limited_share,
                                      "passed": o.passed} for o in outcomes]}, indent=1))
    return 0 if all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
