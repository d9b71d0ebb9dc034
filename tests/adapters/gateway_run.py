"""One `lens run` of a memory system that calls models through lens's gateway, and the checks
every such run must pass (no unit error, the adapter's calls metered and reported as its memory
cost). Shared by the tests of the gateway adapters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT
from tests.core.helpers import make_dataset, write_json


def lens_run(tmp_path: Path, adapter: str, options: dict[str, Any], n_episodes: int = 4,
             timeout_s: float = 60, env: dict[str, str] | None = None,
             ) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`lens run` of one arm of ``adapter`` over a small dataset: the process and its run
    folder (``env``: variables to change for that process)."""
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
                          capture_output=True, text=True, timeout=3600,
                          env={**os.environ, **env} if env else None)
    runs = sorted((tmp_path / "runs").glob(f"{adapter}-*"))
    assert runs, f"lens run wrote no run folder (exit {proc.returncode}): {proc.stderr[-3000:]}"
    return proc, runs[-1]


def run_gateway_adapter(tmp_path: Path, adapter: str, options: dict[str, Any],
                        n_episodes: int = 4, timeout_s: float = 60,
                        env: dict[str, str] | None = None) -> Path:
    proc, out = lens_run(tmp_path, adapter, options, n_episodes, timeout_s, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def check_gateway_run(out: Path, adapter: str, min_chat_calls: int,
                      synthetic_refs: bool = True) -> dict[str, Any]:
    """The run's records, events and the adapter's metered usage, after the common checks:
    at least ``min_chat_calls`` chat calls through the gateway, embeddings besides, all of them
    in the report's memory-cost section, and (``synthetic_refs``) the adapter's own ref prefix
    declared."""
    records = jsonl(out / "records.jsonl")
    events = jsonl(out / "events.jsonl")
    assert [e for e in events if e["kind"] == "unit_error"] == []
    assert records and all(r["status"] in ("answered", "empty_answer") for r in records)
    usage = [e for e in events if e["kind"] == "adapter_usage"][-1]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    chat_calls = manifest["usage"]["by_role"].get("adapter", {}).get("calls", 0)
    assert chat_calls >= min_chat_calls
    assert usage["calls"] > chat_calls
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    cost = {s["id"]: s["data"] for s in summary["sections"]}["memory_cost"]["adapters"]
    assert cost[adapter]["memory_model"]["calls"] == usage["calls"]
    started = next(e for e in events if e["kind"] == "unit_started")
    expected = [f"{adapter}:"] if synthetic_refs else []
    assert started["capabilities"]["synthetic_ref_prefixes"] == expected
    return {"records": records, "events": events, "usage": usage, "manifest": manifest}


def search_hits(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every search result the answering agent saw, in the order it saw them."""
    return [h for r in records for m in r["transcript"] if m["role"] == "tool"
            for h in json.loads(m["content"]).get("results", [])]
