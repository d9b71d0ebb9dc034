"""Running a memory system that calls a model through lens's gateway, the way a user does
(``python -m lens run`` in a subprocess), and the checks every such system's run must pass."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT
from tests.core.helpers import make_dataset, write_json


def run_system(tmp_path: Path, adapter: str, options: dict[str, Any], n_episodes: int = 4,
               timeout_s: float = 60) -> Path:
    """One scope of ``n_episodes`` with two questions at the end, the scripted agent, and the
    adapter ``adapter``; the run directory."""
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=n_episodes,
                                                       checkpoints=(n_episodes,),
                                                       questions_per_checkpoint=2))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": adapter, "dataset": {"path": str(ds)}, "agent": {"model": "scripted/policy"},
        "adapters": [{"name": adapter, "options": options, "call_timeout_s": timeout_s}],
        "out_dir": str(tmp_path / "runs"), "cache": {"enabled": False},
    }), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "lens", "run", str(cfg), "--quiet"], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return sorted((tmp_path / "runs").glob(f"{adapter}-*"))[-1]


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@dataclass
class GatewayRun:
    records: list[dict[str, Any]]
    events: list[dict[str, Any]]
    usage: dict[str, Any]  # the adapter's last usage event: every call through the gateway
    chat_calls: int  # the memory model's chat calls, from the manifest

    def hits(self) -> list[dict[str, Any]]:
        """Every search result the agent received."""
        return [h for r in self.records for m in r["transcript"] if m["role"] == "tool"
                for h in json.loads(m["content"]).get("results", [])]


def check_gateway_run(out: Path, adapter: str) -> GatewayRun:
    """The run answered without a unit error, its memory system's model calls went through the
    gateway (chat calls in the manifest, embeddings on top of them in the usage event), and the
    report's memory-cost section shows the same number of calls."""
    records = jsonl(out / "records.jsonl")
    events = jsonl(out / "events.jsonl")
    assert [e for e in events if e["kind"] == "unit_error"] == []
    assert records and all(r["status"] in ("answered", "empty_answer") for r in records)
    usage = [e for e in events if e["kind"] == "adapter_usage"][-1]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    chat_calls = manifest["usage"]["by_role"]["adapter"]["calls"]
    assert usage["calls"] > chat_calls
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    cost = {s["id"]: s["data"] for s in summary["sections"]}["memory_cost"]["adapters"]
    assert cost[adapter]["memory_model"]["calls"] == usage["calls"]
    return GatewayRun(records, events, usage, chat_calls)
