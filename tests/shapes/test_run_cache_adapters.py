"""Adapters that build their own model client (the consolidation baselines, mem0's extraction
mode): their model's replies are cached where the run's ``cache`` section says, and not at all
when it is off, lens's default cache folder left alone; their own cost cap stops them, their
spend kept in the report; a reply cut at max_tokens is counted. Through `lens run`, with the
memory's model a hosted one on loopback (a real HTTP server that counts what reaches it)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from lens.adapters.consolidation import ConsolidationOptions
from lens.adapters.mem0 import Mem0Options
from lens.data.config import CacheConfig
from lens.memory.adapter import resolve_adapter
from lens.memory.run_cache import cache_for, wants_run_cache
from lens.models.cache import CACHE_FILE
from tests.conftest import ROOT
from tests.core.helpers import make_dataset, write_json
from tests.support.extras import EXTRAS
from tests.support.fake_openai import FakeOpenAI, Reply

MEMORY = "Memory: widget counts rose steadily [s1_ep_001]."


def _run(where: Path, adapter: dict[str, Any], cache: dict[str, Any],
         expect_status: int = 0) -> Path:
    """One `lens run` in ``where``, lens's default cache folder at ``where/default-cache``; its
    console output is kept in ``where/console.txt``."""
    where.mkdir(parents=True)
    ds = write_json(where / "ds.json", make_dataset(n_episodes=4, checkpoints=(2, 4),
                                                    questions_per_checkpoint=1))
    cfg = where / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "rc", "dataset": {"path": str(ds)}, "adapters": [adapter],
        "agent": {"model": "scripted/policy"}, "out_dir": str(where / "runs"), "cache": cache,
    }), encoding="utf-8")
    env = {**os.environ, "LENS_CACHE_DIR": str(where / "default-cache")}
    proc = subprocess.run([sys.executable, "-m", "lens", "run", str(cfg), "--quiet"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == expect_status, proc.stderr[-3000:]
    (where / "console.txt").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    return sorted((where / "runs").glob("rc-*"))[-1]


def _memory_usage(run: Path) -> dict[str, Any]:
    events = [json.loads(line) for line in
              (run / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    return [e for e in events if e["kind"] == "adapter_usage"][-1]


def _summary_adapter(fake: FakeOpenAI) -> dict[str, Any]:
    return {"name": "summary", "options": {"model": "openai/fake-model",
                                           "model_options": {"base_url": fake.base_url}}}


def test_the_baselines_replies_are_cached_in_the_runs_cache(tmp_path: Path) -> None:
    run_cache = tmp_path / "run-cache.sqlite"
    with FakeOpenAI(responder=lambda req: Reply.text(MEMORY)) as fake:
        first = _run(tmp_path / "a", _summary_adapter(fake),
                     {"enabled": True, "path": str(run_cache)})
        calls = fake.count
        assert calls > 0
        second = _run(tmp_path / "b", _summary_adapter(fake),
                      {"enabled": True, "path": str(run_cache)})
        # The second run's folds are the first's requests: all replayed from the run's cache.
        assert fake.count == calls
    assert run_cache.is_file()
    assert (_memory_usage(first)["calls"], _memory_usage(first)["cache_hits"]) == (calls, 0)
    assert (_memory_usage(second)["calls"], _memory_usage(second)["cache_hits"]) == (calls, calls)
    for where in ("a", "b"):
        assert not (tmp_path / where / "default-cache" / CACHE_FILE).exists()


def test_a_run_with_its_cache_off_caches_none_of_the_baselines_replies(tmp_path: Path) -> None:
    with FakeOpenAI(responder=lambda req: Reply.text(MEMORY)) as fake:
        first = _run(tmp_path / "a", _summary_adapter(fake), {"enabled": False})
        calls = fake.count
        _run(tmp_path / "b", _summary_adapter(fake), {"enabled": False})
        assert calls > 0 and fake.count == 2 * calls
    assert _memory_usage(first)["cache_hits"] == 0
    for where in ("a", "b"):
        assert not (tmp_path / where / "default-cache" / CACHE_FILE).exists()


@pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in EXTRAS["mem0"].modules),
                    reason="needs the mem0 extra: pip install -e '.[mem0]'")
def test_mem0s_extraction_is_cached_in_the_runs_cache(tmp_path: Path) -> None:
    run_cache = tmp_path / "run-cache.sqlite"
    reply = json.dumps({"memory": [{"text": "widget count is 5"}]})
    with FakeOpenAI(responder=lambda req: Reply.text(reply)) as fake:
        adapter = {"name": "mem0", "options": {"llm": {"model": "openai/fake-model",
                                                        "base_url": fake.base_url}}}
        _run(tmp_path / "a", adapter, {"enabled": True, "path": str(run_cache)})
        calls = fake.count
        assert calls > 0
        second = _run(tmp_path / "b", adapter, {"enabled": True, "path": str(run_cache)})
        assert fake.count == calls
    assert _memory_usage(second)["cache_hits"] == _memory_usage(second)["calls"] > 0
    assert not (tmp_path / "b" / "default-cache" / CACHE_FILE).exists()


def test_the_option_is_declared_by_the_adapters_that_build_their_own_client() -> None:
    assert all(wants_run_cache(resolve_adapter(n)) for n in ("summary", "core", "faceted", "mem0"))
    # Gateway adapters and stores without a model follow the run through the gateway or not
    # at all: they are not given it.
    assert not any(wants_run_cache(resolve_adapter(n)) for n in ("sqlite_fts", "null", "oracle"))
    assert "model_cache" in ConsolidationOptions.model_fields
    assert "model_cache" in Mem0Options.model_fields


def test_the_adapters_switch_can_only_turn_the_runs_cache_off(tmp_path: Path) -> None:
    run = {"enabled": True, "path": str(tmp_path / "c.sqlite")}
    assert cache_for(run) == CacheConfig(enabled=True, path=tmp_path / "c.sqlite")
    assert cache_for(run, enabled=False).enabled is False
    assert cache_for({"enabled": False}, enabled=True).enabled is False
    # Outside a run: lens's default cache.
    assert cache_for(None) == CacheConfig()


@pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in EXTRAS["mem0"].modules),
                    reason="needs the mem0 extra: pip install -e '.[mem0]'")
def test_mem0s_own_cost_cap_stops_its_extraction(tmp_path: Path) -> None:
    """mem0's client is its own, outside the run's cost cap: its ``max_cost_usd`` option caps
    it. The first call spends past the cap; no second call reaches the model, and the unit fails
    saying why."""
    with FakeOpenAI(responder=lambda req: Reply.text(json.dumps({"memory": []}))) as fake:
        adapter = {"name": "mem0", "options": {
            "max_cost_usd": 0.01,
            "llm": {"model": "openai/fake-model", "base_url": fake.base_url,
                    "price_input_per_mtok": 1e6, "price_output_per_mtok": 1e6}}}
        run = _run(tmp_path / "a", adapter, {"enabled": False}, expect_status=1)
        assert fake.count == 1
    events = [json.loads(line) for line in
              (run / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    failed = [e for e in events if e["kind"] == "unit_error"]
    assert len(failed) == 1 and "cost limit reached" in failed[0]["error"]
    # What it spent before failing is its memory cost, asked of the adapter as the unit failed.
    usage = _memory_usage(run)
    assert usage["calls"] == 1 and usage["cost_usd"] > 0.01
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    sections = {s["id"]: s["data"] for s in summary["sections"]}
    assert sections["memory_cost"]["adapters"]["mem0"]["memory_model"]["calls"] == 1
    # The failure shows in the exit status (above), the console, the checklist and the report.
    assert "cost limit reached" in (tmp_path / "a" / "console.txt").read_text(encoding="utf-8")
    report = (run / "report.md").read_text(encoding="utf-8")
    assert "| **FAIL** | failed or errored questions (per arm) |" in report
    assert "1 unit failure(s)" in report


def test_a_baseline_failing_at_its_cost_cap_keeps_what_it_spent_in_the_report(
        tmp_path: Path) -> None:
    with FakeOpenAI(responder=lambda req: Reply.text(MEMORY)) as fake:
        adapter = _summary_adapter(fake)
        adapter["options"].update(max_cost_usd=0.01, episodes_per_fold=1)
        adapter["options"]["model_options"].update(price_input_per_mtok=1e6,
                                                   price_output_per_mtok=1e6)
        run = _run(tmp_path / "a", adapter, {"enabled": False}, expect_status=1)
        assert fake.count == 1
    failed = [json.loads(line) for line in
              (run / "events.jsonl").read_text(encoding="utf-8").splitlines()
              if '"unit_error"' in line]
    assert len(failed) == 1 and "cost limit reached" in failed[0]["error"]
    assert (_memory_usage(run)["calls"], _memory_usage(run)["cost_usd"]) == (1, 15.0)
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    cost = {s["id"]: s["data"] for s in summary["sections"]}["memory_cost"]["adapters"]
    assert cost["summary"]["memory_model"]["calls"] == 1


def test_a_baselines_replies_cut_at_max_tokens_are_counted(tmp_path: Path) -> None:
    """Through lens's model stack (not the gateway), a reply stopped at the output limit counts
    in the adapter's own usage, and the checklist warns."""
    with FakeOpenAI(responder=lambda req: Reply.text(MEMORY, finish_reason="length")) as fake:
        run = _run(tmp_path / "a", _summary_adapter(fake), {"enabled": False})
        calls = fake.count
    assert calls > 0
    assert (_memory_usage(run)["calls"], _memory_usage(run)["truncated"]) == (calls, calls)
    report = (run / "report.md").read_text(encoding="utf-8")
    assert f"| **WARN** | memory model replies cut at max_tokens | warned by summary — summary: " \
           f"{calls} of {calls} calls |" in report
