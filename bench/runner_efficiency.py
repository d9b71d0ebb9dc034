"""Runner efficiency: does lens keep the provider busy, and what does it cost per model call?

N questions are answered through the real runner, agent, model stack (openai backend, retry,
endpoint limits, metering, optionally the SQLite cache) and run store, against the loopback fake
server (``bench.fakeserver``, its own process) answering every call after a fixed latency with a
scripted pattern of 4 model calls and 3 tool calls per question. The memory adapter is an
in-process dictionary, so what is measured is lens itself.

For each concurrency c (questions in flight, and the endpoint's max_concurrency):

- ideal wall time ``ceil(N / c) * calls * latency``; efficiency = ideal / actual;
- CPU seconds of this process (all threads: event loop and store workers) per model call;
- the baselines, measured in the same run: bare loops doing the same calls at the same
  concurrency with no runner, agent, stack or store -- one with aiohttp posting JSON (the
  cheapest Python client of this API: what the machine and the fake server allow at all) and
  one with the openai SDK;
- the framework alone: the same lens run with the HTTP backend replaced by an in-process stub
  provider that waits out the same latency and returns ready-made completions. Its CPU per call
  is what lens itself costs (runner, agent, tools, budget, model stack, metering, store),
  excluding HTTP and the parsing of the provider's reply.

    python -m bench.runner_efficiency --questions 1000 --concurrency 8,64,256 --reps 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import openai

from bench.common import fake_server, machine_line, md_table, spread
from lens.core import eventloop, logs
from lens.data.config import CacheConfig, RunConfig
from lens.data.dataset import Dataset, Episode
from lens.data.dataset_load import load_dataset
from lens.data.prompts import AGENT_SYSTEM_PROMPT
from lens.memory.adapter import CapabilityManifest, Document, MemoryAdapter, SearchResult
from lens.models import eager_body_write
from lens.models.base import Completion, CompletionRequest, ToolCall, Usage
from lens.models.limits import EndpointLimiter, LimitSettings
from lens.models.retry import RetryPolicy
from lens.models.runtime import ModelRuntime
from lens.models.stack import StackClient
from lens.models.usage import UsageMeter
from lens.runner.agent import tool_specs
from lens.runner.orchestrator import Runner
from lens.runs.store import RunStore

CALLS_PER_QUESTION = 4
TOOLS_PER_QUESTION = 3
SCOPES = 4
_TEXT = ("Weekly operations report: the widget line ran three shifts; output rose from 10 to 40 "
         "units a day after the press was recalibrated; two suppliers were late; the audit "
         "found no safety issue. ") * 2


class DictMemory(MemoryAdapter):
    """A memory held in a dict: answers instantly, so the benchmark measures lens alone."""

    def __init__(self) -> None:
        self.docs = {f"doc-{i}": _TEXT for i in range(1, 5)}

    async def reset(self, scope_id: str) -> None:
        return None

    async def ingest(self, episode: Episode) -> None:
        return None

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        return [SearchResult(ref_id=k, text=v, score=1.0 / (i + 1))
                for i, (k, v) in enumerate(self.docs.items())][: limit or 4]

    async def retrieve(self, ref_id: str) -> Document | None:
        text = self.docs.get(ref_id)
        return None if text is None else Document(ref_id=ref_id, text=text)

    async def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(max_results=4)


def write_dataset(path: Path, questions: int) -> Path:
    scopes, qs = [], []
    per_scope = math.ceil(questions / SCOPES)
    for s in range(SCOPES):
        sid = f"bench_{s}"
        scopes.append({"scope_id": sid, "episodes": [
            {"episode_id": f"{sid}_ep_{i}", "scope_id": sid,
             "timestamp": f"2024-01-{i + 1:02d}T09:00:00", "text": f"{_TEXT} day {i}"}
            for i in range(4)]})
        for k in range(min(per_scope, questions - s * per_scope)):
            qs.append({"question_id": f"{sid}_q{k:04d}", "scope_id": sid, "checkpoint_after": 4,
                       "question_type": "longitudinal",
                       "prompt": f"How did daily widget output change over the month? ({k})",
                       "ground_truth": {"canonical_answer": "from 10 to 40",
                                        "required_evidence_refs": [f"{sid}_ep_0"],
                                        "key_facts": ["output rose to 40"]}})
    path.write_text(json.dumps({"version": "0.1.0", "scopes": scopes, "questions": qs}))
    return path


@dataclass
class Measure:
    wall_s: float
    cpu_s: float
    calls: int
    questions: int


def run_config(dataset: Path, base_url: str, c: int, out: Path, cache: Path | None,
               transport: str = "aiohttp") -> RunConfig:
    return RunConfig.model_validate({
        "name": "bench",
        "dataset": {"path": str(dataset)},
        # The factory in lens_once gives every unit a DictMemory, in this process.
        "adapters": [{"name": "null"}],
        "agent": {"model": "openai/bench-model", "base_url": base_url, "max_tokens": 200,
                  "options": {"transport": transport},
                  "max_concurrency": c, "timeout_s": 60, "max_retries": 2,
                  "budget": {"max_turns": 8, "max_tool_calls": 12,
                             "max_payload_bytes": 200_000, "max_agent_tokens": 10_000_000,
                             "max_seconds": 600}},
        "concurrency": {"units": SCOPES, "questions": c},
        "out_dir": str(out),
        "cache": {"enabled": cache is not None, "path": str(cache) if cache else None},
        "scoring": {"enabled": False},
        "report": False,
    })


async def lens_once(dataset_path: Path, dataset: Dataset, base_url: str, c: int, workdir: Path,
                    cache: bool, transport: str = "aiohttp") -> Measure:
    """One lens run; ``dataset`` is the file's content, loaded before the event loop starts,
    as ``lens run`` loads it (so that it is frozen out of the garbage collector's work)."""
    config = run_config(dataset_path, base_url, c, workdir,
                        workdir / "cache.sqlite" if cache else None, transport)
    store = RunStore.create(workdir, "bench", f"c{c}-{time.monotonic_ns()}")
    runtime = ModelRuntime(cache=config.cache if cache else CacheConfig(enabled=False))
    client = runtime.client(config.agent)
    runner = Runner(config, dataset, store, client, adapter_factory=lambda _cfg: DictMemory())
    cpu0, t0 = time.process_time(), time.perf_counter()
    summary = await runner.run()
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    store.close()
    await runtime.aclose()
    calls = runtime.usage()["total"]["calls"]
    if summary.answered != summary.questions or summary.errored:
        raise RuntimeError(f"lens run incomplete: {summary}")
    return Measure(wall, cpu, calls, summary.answered)


class StubProvider:
    """The fake server's pattern in-process: no HTTP, no JSON, only the latency."""

    provider = "stub"
    model = "bench-model"

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self._sequence = [("memory_search", '{"query": "what changed in the weekly report"}'),
                          ("memory_retrieve", '{"ref_id": "doc-1"}'),
                          ("memory_retrieve", '{"ref_id": "doc-2"}')]

    async def complete(self, request: CompletionRequest) -> Completion:
        await anyio.sleep(self.latency_s)
        turn = sum(1 for m in request.messages if m.role == "tool")
        usage = Usage(prompt_tokens=500, completion_tokens=24)
        if turn < len(self._sequence):
            name, args = self._sequence[turn]
            return Completion(text="", tool_calls=[ToolCall(id=f"call_{turn}", name=name,
                                                            arguments=args)],
                              usage=usage, finish_reason="tool_calls")
        return Completion(text="The count rose from 10 to 40 [doc-1, doc-2].", usage=usage,
                          finish_reason="stop")

    async def aclose(self) -> None:
        return None


async def stub_once(dataset_path: Path, dataset: Dataset, latency: float, c: int,
                    workdir: Path) -> Measure:
    config = run_config(dataset_path, "http://unused.invalid/v1", c, workdir, None)
    store = RunStore.create(workdir, "stub", f"c{c}-{time.monotonic_ns()}")
    meter = UsageMeter()
    client = StackClient(StubProvider(latency), meter=meter,
                         limiter=EndpointLimiter(LimitSettings(max_concurrency=c)),
                         retry=RetryPolicy(max_retries=2), timeout_s=60)
    runner = Runner(config, dataset, store, client, adapter_factory=lambda _cfg: DictMemory())
    cpu0, t0 = time.process_time(), time.perf_counter()
    summary = await runner.run()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    store.close()
    if summary.answered != summary.questions or summary.errored:
        raise RuntimeError(f"stub run incomplete: {summary}")
    return Measure(wall, cpu, meter.snapshot()["total"]["calls"], summary.answered)


def _openai_tools() -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": t.parameters}}
            for t in tool_specs(CapabilityManifest(max_results=4))]


async def raw_once(n: int, base_url: str, c: int, transport: str = "sdk") -> Measure:
    """The same calls from a bare loop with no framework: the openai SDK (``sdk``), or aiohttp
    posting JSON (``aiohttp``), the cheapest Python client of this API."""
    tools = _openai_tools()
    memory = DictMemory()
    sem = asyncio.Semaphore(c)
    calls = 0
    if transport == "sdk":
        client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0,
                                    timeout=60)

        async def post(messages: list[dict[str, Any]]) -> dict[str, Any]:
            r = await client.chat.completions.create(
                model="bench-model", messages=messages, tools=tools,  # type: ignore[arg-type]
                tool_choice="auto", temperature=0.0, max_tokens=200)
            msg = r.choices[0].message
            return {"content": msg.content,
                    "tool_calls": [{"id": t.id, "function": {"name": t.function.name,
                                                             "arguments": t.function.arguments}}
                                   for t in msg.tool_calls or []]}

        close = client.close
    else:
        # The body written in the turn that sends it, as lens's transport writes it (on Python
        # 3.11 through lens.models.eager_body_write): the bare loop stays lens's ceiling.
        eager_body_write.install(asyncio.get_running_loop())
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            headers={"Authorization": "Bearer bench", "Content-Type": "application/json"})
        url = f"{base_url}/chat/completions"

        async def post(messages: list[dict[str, Any]]) -> dict[str, Any]:
            body = {"model": "bench-model", "messages": messages, "tools": tools,
                    "tool_choice": "auto", "temperature": 0.0, "max_tokens": 200}
            async with session.post(url, data=json.dumps(body).encode()) as resp:
                reply = json.loads(await resp.read())
            return reply["choices"][0]["message"]  # type: ignore[no-any-return]

        close = session.close

    async def one(i: int) -> None:
        nonlocal calls
        async with sem:
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": AGENT_SYSTEM_PROMPT},
                {"role": "user", "content": f"How did daily widget output change? ({i})"}]
            while True:
                msg = await post(messages)
                calls += 1
                tcs = msg.get("tool_calls") or []
                messages.append({"role": "assistant", "content": msg.get("content") or "",
                                 "tool_calls": [{"id": t["id"], "type": "function",
                                                 "function": t["function"]} for t in tcs]})
                if not tcs:
                    return
                for t in tcs:
                    args = json.loads(t["function"]["arguments"])
                    if t["function"]["name"] == "memory_search":
                        hits = await memory.search(args["query"])
                        payload: Any = {"results": [h.model_dump(mode="json") for h in hits]}
                    else:
                        doc = await memory.retrieve(args["ref_id"])
                        payload = doc.model_dump(mode="json") if doc else {"error": "none"}
                    messages.append({"role": "tool", "tool_call_id": t["id"],
                                     "content": json.dumps(payload)})

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    await close()
    return Measure(wall, cpu, calls, n)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="lens runner efficiency against a loopback server")
    p.add_argument("--questions", type=int, default=1000)
    p.add_argument("--concurrency", default="1,8,64,256")
    p.add_argument("--latency-ms", type=float, default=100.0)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--cache", action="store_true",
                   help="run lens with the SQLite model cache on (cold: every call a miss)")
    p.add_argument("--baselines", default="aiohttp,sdk",
                   help="bare loops to measure beside lens: aiohttp, sdk (comma-separated; "
                        "empty for none)")
    p.add_argument("--no-baseline", action="store_true", help="same as --baselines ''")
    p.add_argument("--json", type=Path, help="also write the raw measurements here")
    p.add_argument("--loop", choices=("auto", "uvloop", "asyncio"), default="auto",
                   help="event loop of every variant (auto: uvloop where installed, as `lens "
                        "run` does)")
    p.add_argument("--transport", choices=("aiohttp", "sdk"), default="aiohttp",
                   help="the openai backend's transport for the lens variant")
    p.add_argument("--server-loop", choices=("auto", "uvloop", "asyncio"), default="auto",
                   help="event loop of the fake provider")
    args = p.parse_args(argv)
    logs.configure()
    levels = [int(x) for x in args.concurrency.split(",")]
    baselines = [] if args.no_baseline else [b for b in args.baselines.split(",") if b]
    unknown = set(baselines) - {"aiohttp", "sdk"}
    if unknown:
        p.error(f"--baselines: unknown {sorted(unknown)}; known: aiohttp, sdk")
    latency = args.latency_ms / 1000.0
    print(machine_line())
    print(f"N={args.questions} questions, {CALLS_PER_QUESTION} model calls + "
          f"{TOOLS_PER_QUESTION} tool calls each, latency {args.latency_ms:g} ms, "
          f"reps={args.reps}, cache={'on (cold)' if args.cache else 'off'}, "
          f"loop={eventloop.loop_in_use(args.loop)}, transport={args.transport}, "
          f"server loop={eventloop.loop_in_use(args.server_loop)}", flush=True)
    rows, raw_json = [], []
    with tempfile.TemporaryDirectory(prefix="lens-bench-") as tmp, \
            fake_server(args.latency_ms, loop=args.server_loop) as server:
        dataset = write_dataset(Path(tmp) / "bench.json", args.questions)
        for c in levels:
            ideal = math.ceil(args.questions / c) * CALLS_PER_QUESTION * latency
            runs: dict[str, list[Measure]] = {"lens": [], **{b: [] for b in baselines},
                                              "framework alone": []}
            for rep in range(args.reps):
                work = Path(tmp) / f"c{c}-r{rep}"
                work.mkdir()
                for b in baselines:
                    runs[b].append(eventloop.run(raw_once, args.questions, server.base_url, c,
                                                 b, loop=args.loop))
                runs["lens"].append(eventloop.run(lens_once, dataset, load_dataset(dataset),
                                                  server.base_url, c, work, args.cache,
                                                  args.transport, loop=args.loop))
                runs["framework alone"].append(eventloop.run(
                    stub_once, dataset, load_dataset(dataset), latency, c, work,
                    loop=args.loop))
                print(f"  c={c} rep {rep + 1}: " + " | ".join(
                    f"{name} {ms[-1].wall_s:.2f}s eff {ideal / ms[-1].wall_s:.3f} "
                    f"cpu/call {ms[-1].cpu_s / ms[-1].calls * 1e3:.3f}ms"
                    for name, ms in runs.items()), flush=True)
            row = [str(c), f"{ideal:.2f}"]
            for ms in runs.values():
                row += [spread([ideal / m.wall_s for m in ms]).fmt(3),
                        spread([m.cpu_s / m.calls * 1e3 for m in ms]).fmt(3)]
            rows.append(row)
            raw_json.append({"c": c, "ideal_s": ideal,
                             "runs": {k: [vars(m) for m in v] for k, v in runs.items()}})
    header = ["c", "ideal s"]
    for name in ["lens", *(f"bare {b}" for b in baselines), "framework alone"]:
        header += [f"{name} efficiency", f"{name} CPU ms/call"]
    print()
    print(md_table(header, rows))
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)},
                                         "machine": machine_line(), "results": raw_json},
                                        indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
