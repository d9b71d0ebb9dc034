"""The model gateway through `lens run`: an adapter in a process of its own calls lens's gateway
with the openai SDK; its calls show as the unit's memory cost, under the run's cost cap."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.core.helpers import make_dataset, write_json
from tests.support.extras import EXTRAS

ADAPTER = "tests.gateway.gateway_adapter:GatewayNotesAdapter"
HAS_VECTOR = all(importlib.util.find_spec(m) for m in EXTRAS["vector"].modules)


def _fixture(tmp_path: Path) -> Path:
    path = tmp_path / "facts.yaml"
    path.write_text(yaml.safe_dump({"rules": [
        {"contains": "act", "text": json.dumps({"facts": ["a fact"]})}]}), encoding="utf-8")
    return path


def run(tmp_path: Path, options: dict[str, Any], quiet: bool = True,
        **extra: Any) -> subprocess.CompletedProcess[str]:
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=6, checkpoints=(3, 6),
                                                       questions_per_checkpoint=1))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "gw", "dataset": {"path": str(ds)}, "agent": {"model": "scripted/policy"},
        "adapters": [{"name": ADAPTER, "label": "notes", "options": options},
                     {"name": "sqlite_fts"}],
        "out_dir": str(tmp_path / "runs"), "cache": {"enabled": False}, **extra,
    }), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "lens", "run", str(cfg),
                           *(["--quiet"] if quiet else [])], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_gateway_calls_are_the_units_memory_cost(tmp_path: Path) -> None:
    proc = run(tmp_path, {"model": f"scripted/{_fixture(tmp_path)}"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = sorted((tmp_path / "runs").glob("gw-*"))[-1]
    records = _jsonl(out / "records.jsonl")
    assert records and all(r["status"] == "answered" for r in records)
    usage = [e for e in _jsonl(out / "events.jsonl") if e["kind"] == "adapter_usage"]
    assert {e["key"].split("|")[0] for e in usage} == {"notes"}
    last = usage[-1]
    searches = sum(1 for r in records if r["adapter"] == "notes"
                   for c in r["tool_calls"] if c["name"] == "memory_search")
    # One extraction per episode, and one query embedding per search when the gateway has the
    # local embedding model; the last usage event comes after the last answers.
    assert last["calls"] == 6 + (searches if HAS_VECTOR else 0)
    assert last["prompt_tokens"] > 0 and last["completion_tokens"] > 0
    assert last["cost_usd"] == 0.0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    cost = {s["id"]: s["data"] for s in summary["sections"]}["memory_cost"]["adapters"]
    assert cost["notes"]["memory_model"]["calls"] == last["calls"]
    assert cost["sqlite_fts"]["memory_model"] is None
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["usage"]["by_role"]["adapter"]["calls"] == 6
    # The per-unit key never reaches the run's files.
    text = "".join(p.read_text(encoding="utf-8", errors="replace")
                   for p in out.rglob("*") if p.is_file() and p.suffix in {".json", ".jsonl"})
    assert "lens-gw-" not in text


def test_the_runs_cost_cap_stops_the_memory_systems_calls(tmp_path: Path) -> None:
    proc = run(tmp_path, {"model": f"scripted/{_fixture(tmp_path)}",
                          "model_options": {"price_input_per_mtok": 1e6,
                                            "price_output_per_mtok": 1e6}},
               max_cost_usd=0.01)
    out = sorted((tmp_path / "runs").glob("gw-*"))[-1]
    events = _jsonl(out / "events.jsonl")
    failed = [e for e in events if e["kind"] == "unit_error"]
    assert [e["key"].split("|")[0] for e in failed] == ["notes"], proc.stderr[-2000:]
    assert "cost limit reached" in failed[0]["error"]
    records = _jsonl(out / "records.jsonl")
    assert all(r["status"] == "error" for r in records if r["adapter"] == "notes")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    # The first call spent past the cap; no second call reached the model.
    assert manifest["usage"]["by_role"]["adapter"]["calls"] == 1
    # What it spent before failing is its memory cost in the report.
    usage = [e for e in events if e["kind"] == "adapter_usage"]
    assert [e["key"].split("|")[0] for e in usage] == ["notes"]
    assert usage[-1]["calls"] == 1 and usage[-1]["cost_usd"] > 0.01
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    cost = {s["id"]: s["data"] for s in summary["sections"]}["memory_cost"]["adapters"]
    assert cost["notes"]["memory_model"]["calls"] == 1


def test_an_unreachable_gateway_model_stops_the_run_before_any_work(tmp_path: Path) -> None:
    proc = run(tmp_path, {"model": "scripted/no-such-fixture.yaml"})
    assert proc.returncode == 2, proc.stderr
    assert "adapters.0.options.model" in proc.stderr and "fixture file not found" in proc.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.slow
def test_the_guides_gateway_example_runs(tmp_path: Path) -> None:
    """docs/writing-an-adapter.md section 2c's adapter, as written, through `lens run`."""
    from tests.adapters.test_adapters_guide_example import guide_files

    (tmp_path / "extracting_memory.py").write_text(guide_files()["extracting_memory.py"],
                                                   encoding="utf-8")
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=3, checkpoints=(3,),
                                                       questions_per_checkpoint=1))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "guide", "dataset": {"path": str(ds)}, "agent": {"model": "scripted/policy"},
        "adapters": [{"name": "extracting_memory:ExtractingMemory",
                      "options": {"model": f"scripted/{_fixture(tmp_path)}"}}],
        "out_dir": str(tmp_path / "runs"), "cache": {"enabled": False},
    }), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "lens", "run", str(cfg), "--quiet"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = sorted((tmp_path / "runs").glob("guide-*"))[-1]
    assert all(r["status"] == "answered" for r in _jsonl(out / "records.jsonl"))
    usage = [e for e in _jsonl(out / "events.jsonl") if e["kind"] == "adapter_usage"][-1]
    assert usage["calls"] == 3


@pytest.mark.slow
def test_a_repeated_run_replays_the_memory_systems_calls_from_the_cache(tmp_path: Path) -> None:
    """A hosted model behind the gateway, lens's model cache on: a second run of the same
    config (as a resumed unit would) is answered from the cache; the model sees no new call,
    and the unit's memory usage counts the replays as cache hits."""
    from tests.support.fake_openai import FakeOpenAI, Reply

    with FakeOpenAI(responder=lambda req: Reply.text(json.dumps({"facts": ["a fact"]}))) as fake:
        options = {"model": "openai/fake-model",
                   "model_options": {"base_url": fake.base_url}, "embed_queries": False}
        cache = {"cache": {"enabled": True, "path": str(tmp_path / "models.sqlite")}}
        usages = []
        for i in range(2):
            where = tmp_path / f"run{i}"
            where.mkdir()
            proc = run(where, options, **cache)
            assert proc.returncode == 0, proc.stderr[-3000:]
            out = sorted((where / "runs").glob("gw-*"))[-1]
            usages.append([e for e in _jsonl(out / "events.jsonl")
                           if e["kind"] == "adapter_usage"][-1])
        assert fake.count == 6
        # What reaches the model is what the memory system sent: episodes, never the gold
        # fields (make_dataset marks every one of them GOLDSECRET).
        sent = json.dumps([r.body for r in fake.requests])
        assert "widget count" in sent and "GOLDSECRET" not in sent
    assert usages[0]["calls"] == usages[1]["calls"] == 6
    assert (usages[0]["cache_hits"], usages[1]["cache_hits"]) == (0, 6)
    assert usages[1]["prompt_tokens"] == usages[0]["prompt_tokens"]


@pytest.mark.slow
def test_a_remote_ray_cluster_is_refused_for_gateway_adapters(tmp_path: Path) -> None:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("needs the ray extra: pip install -e '.[ray]'")
    proc = run(tmp_path, {"model": f"scripted/{_fixture(tmp_path)}"},
               executor={"kind": "ray", "address": "ray://127.0.0.1:1"})
    assert proc.returncode == 2, proc.stderr
    assert "executor.address" in proc.stderr and "listens on this machine only" in proc.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.slow
def test_a_resumed_unit_replays_its_memory_systems_calls_from_the_cache(tmp_path: Path) -> None:
    """The unit fails at its fifth episode; `lens run --resume --retry-errors` runs it again:
    the four extractions it made before come from lens's model cache, the rest reach the
    model, and the unit's memory usage says so."""
    from tests.support.fake_openai import FakeOpenAI, Reply

    with FakeOpenAI(responder=lambda req: Reply.text(json.dumps({"facts": ["a fact"]}))) as fake:
        options = {"model": "openai/fake-model", "model_options": {"base_url": fake.base_url},
                   "embed_queries": False, "fail_once_at": 5,
                   "marker": str(tmp_path / "failed-once")}
        cache = {"cache": {"enabled": True, "path": str(tmp_path / "models.sqlite")}}
        first = run(tmp_path, options, **cache)
        out = sorted((tmp_path / "runs").glob("gw-*"))[-1]
        assert [e["kind"] for e in _jsonl(out / "events.jsonl")].count("unit_error") == 1, \
            first.stderr[-2000:]
        assert fake.count == 4
        resumed = subprocess.run(
            [sys.executable, "-m", "lens", "run", str(tmp_path / "cfg.yaml"), "--quiet",
             "--resume", str(out), "--retry-errors"],
            cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert fake.count == 6
    usage = [e for e in _jsonl(out / "events.jsonl") if e["kind"] == "adapter_usage"
             and e["key"].startswith("notes|")][-1]
    assert (usage["calls"], usage["cache_hits"]) == (6, 4)
    records = [r for r in _jsonl(out / "records.jsonl") if r["adapter"] == "notes"]
    assert records and records[-1]["status"] == "answered"


def test_replies_cut_at_max_tokens_are_counted_and_warned(tmp_path: Path) -> None:
    """The memory system's model stops two of its six replies at the output limit: the unit's
    memory usage counts them, the memory-cost section shows them, and the checklist warns (in
    the report and the console); the run itself is not failed by it."""
    from tests.support.fake_openai import FakeOpenAI, Reply

    replies = iter(range(100))

    def reply(req: Any) -> Reply:
        cut = next(replies) in (1, 4)
        return Reply.text(json.dumps({"facts": ["a fact"]}),
                          finish_reason="length" if cut else "stop")

    with FakeOpenAI(responder=reply) as fake:
        proc = run(tmp_path, {"model": "openai/fake-model",
                              "model_options": {"base_url": fake.base_url},
                              "embed_queries": False}, quiet=False)
        assert fake.count == 6
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = sorted((tmp_path / "runs").glob("gw-*"))[-1]
    usage = [e for e in _jsonl(out / "events.jsonl") if e["kind"] == "adapter_usage"][-1]
    assert (usage["calls"], usage["truncated"]) == (6, 2)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["usage"]["by_role"]["adapter"]["truncated"] == 2
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    sections = {s["id"]: s["data"] for s in summary["sections"]}
    assert sections["memory_cost"]["adapters"]["notes"]["memory_model"]["truncated"] == 2
    report = (out / "report.md").read_text(encoding="utf-8")
    assert ("| **WARN** | memory model replies cut at max_tokens | warned by notes — notes: 2 of 6 "
            "calls |") in report
    assert "2 cut at max_tokens" in report
    console = [line for line in (proc.stdout + proc.stderr).splitlines() if "WARN" in line]
    assert any("memory model replies cut at max_tokens" in line and "notes: 2 of 6" in line
               for line in console), console
