"""LangMem through lens's model gateway: really LangMem (its memory manager, trustcall's tool
calls, a LangGraph store with a semantic index), with the scripted model behind the gateway in
CI and the local model on request."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.core.helpers import make_dataset, write_json
from tests.support.extras import missing_reason, skip_module_unless

skip_module_unless("langmem")

# trustcall asks for a ``Memory`` tool call (and ``PatchDoc`` once memories exist); the
# scripted model answers every first turn with a new memory.
SCRIPTED = {"model": "scripted/replay", "model_options": {"options": {"replies": [
    {"tool_calls": [{"name": "Memory",
                     "arguments": {"content": "The widget count was recorded."}}]}]}}}


def run_langmem(tmp_path: Path, options: dict[str, Any], n_episodes: int = 4,
                timeout_s: float = 60) -> Path:
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=n_episodes,
                                                       checkpoints=(n_episodes,),
                                                       questions_per_checkpoint=2))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "lm", "dataset": {"path": str(ds)}, "agent": {"model": "scripted/policy"},
        "adapters": [{"name": "langmem", "options": options, "call_timeout_s": timeout_s}],
        "out_dir": str(tmp_path / "runs"), "cache": {"enabled": False},
    }), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "lens", "run", str(cfg), "--quiet"], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return sorted((tmp_path / "runs").glob("lm-*"))[-1]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _check_run(out: Path, n_episodes: int) -> dict[str, Any]:
    records = _jsonl(out / "records.jsonl")
    events = _jsonl(out / "events.jsonl")
    assert [e for e in events if e["kind"] == "unit_error"] == []
    assert records and all(r["status"] in ("answered", "empty_answer") for r in records)
    usage = [e for e in events if e["kind"] == "adapter_usage"][-1]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    # At least one extraction call per episode through the gateway, plus the embeddings of
    # LangMem's searches and of the memories it stored.
    assert manifest["usage"]["by_role"]["adapter"]["calls"] >= n_episodes
    assert usage["calls"] > manifest["usage"]["by_role"]["adapter"]["calls"]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    cost = {s["id"]: s["data"] for s in summary["sections"]}["memory_cost"]["adapters"]
    assert cost["langmem"]["memory_model"]["calls"] == usage["calls"]
    started = next(e for e in events if e["kind"] == "unit_started")
    assert started["capabilities"]["synthetic_ref_prefixes"] == ["langmem:"]
    return {"records": records, "usage": usage}


def test_langmem_through_lens_run_with_the_scripted_model(tmp_path: Path) -> None:
    got = _check_run(run_langmem(tmp_path, SCRIPTED), 4)
    hits = [json.loads(m["content"]) for r in got["records"] for m in r["transcript"]
            if m["role"] == "tool"]
    refs = [h["ref_id"] for hit in hits for h in hit.get("results", [])]
    assert refs and all(ref.startswith("langmem:") for ref in refs)
    episode_ids = {e for hit in hits for h in hit.get("results", [])
                   for e in h["metadata"]["episode_ids"]}
    assert episode_ids and all(e.startswith("s1_ep_") for e in episode_ids)


@pytest.mark.slow
@pytest.mark.opt_in
# Several model calls per episode on a 2-core CPU: past the suite's 900 s per test.
@pytest.mark.timeout(3600)
def test_langmem_with_the_local_model(tmp_path: Path) -> None:
    """Opt-in: LangMem's extraction prompts on the packaged local model, through the gateway."""
    reason = missing_reason("local")
    if reason:
        pytest.skip(reason)
    _check_run(run_langmem(tmp_path, {"model": "llama_cpp/default", "max_tokens": 256},
                           n_episodes=2, timeout_s=1200), 2)


@pytest.mark.slow
def test_lens_adapters_check_opens_a_gateway_for_it(tmp_path: Path) -> None:
    """`lens adapters check` gives each instance a key to a model gateway of its own; the
    checks that do not depend on what the model wrote pass with the scripted model."""
    proc = subprocess.run(
        [sys.executable, "-m", "lens", "adapters", "check", "langmem", "--options",
         json.dumps(SCRIPTED), "--only", "capabilities_well_formed", "--only",
         "retrieve_returns_referenced", "--only", "unknown_ref_is_none", "--only",
         "limit_respected"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 passed, 0 failed" in proc.stdout
    assert "model gateway:" in proc.stdout and "chat calls to scripted/replay" in proc.stdout
