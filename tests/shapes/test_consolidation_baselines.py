"""The consolidating baselines: folds see episodes in time order and never a later one, their
memory is the standing context, their model usage is reported apart from the agent's, raw search
still works, and each passes the conformance suite; through the CLI with a scripted model."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
import yaml

from lens.adapters.consolidators import CoreAdapter, FacetedAdapter, SummaryAdapter
from lens.data.dataset import Episode
from lens.data.standing import HEADING
from lens.memory.adapter import create_adapter, resolve_adapter
from lens.testing.conformance import CHECKS, run_check
from tests.conftest import ROOT
from tests.core.helpers import make_dataset, write_json
from tests.shapes.fakes import EchoClient
from tests.shapes.test_standing_context import events, records, run_cli

CLASSES = {"summary": SummaryAdapter, "core": CoreAdapter, "faceted": FacetedAdapter}
_ID = re.compile(r"\[(ep\d)\]")


def _episodes() -> list[Episode]:
    t0 = datetime(2024, 5, 1, tzinfo=UTC)
    return [Episode(episode_id=f"ep{i}", scope_id="s", timestamp=t0 + timedelta(hours=i),
                    text=f"Sensor {i} read {i * 11} units at dock {i}.") for i in range(1, 7)]


async def _stream(cls: type, client: EchoClient) -> tuple[object, list[tuple[int, str]]]:
    adapter = cls(client=client, episodes_per_fold=2)
    eps = _episodes()
    await adapter.reset("s")
    contexts = []
    for checkpoint in (3, 6):
        for ep in eps[len(contexts) * 3:checkpoint]:
            await adapter.ingest(ep)
        await adapter.prepare("s", checkpoint)
        contexts.append((checkpoint, await adapter.standing_context("s", checkpoint) or ""))
    hits = await adapter.search("sensor dock 5 units")
    usage = await adapter.model_usage()
    await adapter.aclose()
    return adapter, contexts, hits, usage


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_folds_follow_time_and_never_see_a_later_episode(name: str) -> None:
    client = EchoClient()
    adapter, contexts, hits, usage = anyio.run(_stream, CLASSES[name], client)
    log = adapter.fold_log
    assert log, "no model call was made"
    seen_before_3 = set()
    seen_order: list[str] = []
    for _fold, ids in log:
        seen_order += [i for i in ids if i not in seen_order]
    assert seen_order == [f"ep{i}" for i in range(1, 7)], "folds not in timestamp order"
    cp3 = contexts[0][1]
    cp3_ids = set(_ID.findall(cp3))
    assert cp3_ids and cp3_ids <= {"ep1", "ep2", "ep3"}, cp3_ids
    # Every call before the first that shows a later episode saw episodes 1-3 only.
    for request in client.requests:
        prompt = request.messages[-1].content
        ids = set(_ID.findall(prompt))
        if "ep4" in ids or "ep5" in ids or "ep6" in ids:
            break
        seen_before_3 |= ids
    assert seen_before_3 <= {"ep1", "ep2", "ep3"}
    assert {"ep4", "ep5", "ep6"} & set(_ID.findall(contexts[1][1]))
    assert all(r.role == "adapter" for r in client.requests)
    assert usage["calls"] == len(client.requests) and usage["prompt_tokens"] > 0
    assert usage["cost_usd"] == pytest.approx(0.001 * len(client.requests))
    assert "ep5" in [h.ref_id for h in hits], "raw-episode search must still work"
    assert client.closed


def test_fold_counts() -> None:
    """summary: a call per group of 2 plus a reduce; core: a call per group of 2;
    faceted: 4 facets per group plus a merge, per checkpoint of 3 episodes."""
    counts = {}
    for name, cls in CLASSES.items():
        adapter, *_ = anyio.run(_stream, cls, EchoClient())
        counts[name] = len(adapter.fold_log)
    assert counts == {"summary": 2 * (2 + 1), "core": 2 * 2, "faceted": 2 * (2 * 4 + 1)}


def test_unknown_price_makes_the_adapter_cost_unknown() -> None:
    _, _, _, usage = anyio.run(_stream, CoreAdapter, EchoClient(cost=None))
    assert usage["cost_usd"] is None and usage["calls"] == 4


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_conformance(name: str) -> None:
    failed = []
    for check in CHECKS:
        result = anyio.run(run_check, check, lambda: CLASSES[name](client=EchoClient()))
        if result.status == "failed":
            failed.append(f"{check}: {result.detail}")
    assert not failed


def test_registered_and_options_validated() -> None:
    from lens.core.errors import ConfigError

    for name, cls in CLASSES.items():
        assert resolve_adapter(name) is cls
    with pytest.raises(ConfigError, match="episodes_per_fold"):
        create_adapter("core", {"episodes_per_fold": 0})
    adapter = create_adapter("faceted", {"model": "scripted/replay",
                                         "facets": {"who": "people"}})
    assert adapter.opts.facets == {"who": "people"}
    with pytest.raises(ConfigError, match="unknown model setting 'call_timeout_s'"):
        create_adapter("core", {"model_options": {"call_timeout_s": 3000}})
    with pytest.raises(ConfigError, match="model setting 'timeout_s'"):
        create_adapter("summary", {"model_options": {"timeout_s": -1}})
    with pytest.raises(ConfigError, match="unknown provider 'opnai'"):
        create_adapter("faceted", {"model": "opnai/gpt-4o-mini"})


def test_a_misspelt_model_setting_stops_the_run_before_any_work(tmp_path: Path) -> None:
    """The adapter's own model settings are checked with the config: exit 2, one message naming
    the field, no run directory (not a unit failure once the first fold calls the model)."""
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=4, checkpoints=(4,),
                                                       questions_per_checkpoint=1))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "bad", "dataset": {"path": str(ds)}, "agent": {"model": "scripted/policy"},
        "adapters": [{"name": "core", "options": {"model": "scripted/replay",
                                                  "model_options": {"call_timeout_s": 3000}}}],
        "out_dir": str(tmp_path / "runs")}), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "lens", "run", str(cfg), "--quiet"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(cfg) in lines[0], proc.stderr
    assert "adapters.0.options.model_options" in lines[0]
    assert "unknown model setting 'call_timeout_s'" in lines[0]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_baselines_through_the_cli_with_a_scripted_model(tmp_path: Path) -> None:
    model = {"model": "scripted/replay",
             "model_options": {"options": {"replies": [{"text": "Memory: widget counts rose "
                                                                "steadily [s1_ep_001]."}]}}}
    baselines = [{"name": n, "options": copy.deepcopy(model)}
                 for n in ("summary", "core", "faceted")]
    run = run_cli(tmp_path, [*baselines, {"name": "sqlite_fts"}])
    recs = records(run)
    assert all(r["status"] == "answered" for r in recs)
    for r in recs:
        has = HEADING in r["transcript"][0]["content"]
        assert has == (r["adapter"] != "sqlite_fts")
        if has:
            assert "widget counts rose steadily" in r["transcript"][0]["content"]
            assert r["standing_context_bytes"] > 0
        # The agent's own calls are all the record holds: adapter calls are metered apart.
        assert all(c["role"] == "agent" for c in r["model_calls"])
    usage = {}
    for e in events(run):
        if e["kind"] == "adapter_usage":
            usage[e["key"].split("|")[0]] = e
    assert set(usage) == {"summary", "core", "faceted"}
    assert all(u["calls"] > 0 and u["cost_usd"] == 0.0 for u in usage.values())
    report = (run / "report.md").read_text(encoding="utf-8")
    assert "## Memory cost and latency" in report and "## Retrieval quality" in report
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    sections = {s["id"]: s["data"] for s in summary["sections"]}
    cost = sections["memory_cost"]["adapters"]
    assert cost["sqlite_fts"]["memory_model"] is None
    assert cost["faceted"]["memory_model"]["calls"] == usage["faceted"]["calls"]
    assert cost["core"]["ingest_s_per_episode"]["n"] == 6
    assert cost["core"]["search_latency_s"]["n"] > 0
    assert cost["core"]["cost_per_question"]["total"] == 0.0
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "against total cost per question" in page
    assert "evidence retrieved" in sections["retrieval"]["core"]


@pytest.mark.slow
@pytest.mark.opt_in
@pytest.mark.parametrize("name", sorted(CLASSES))
def test_with_the_local_model(name: str) -> None:
    """Opt-in (-m opt_in): each baseline folds with the packaged local model."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from lens.models.local_models import LOCAL_MODELS, resolve_model_path

    local = "qwen2.5-coder-0.5b"
    try:
        resolve_model_path(local)
    except Exception as exc:
        pytest.skip(f"local model {local} unavailable: {exc} ({LOCAL_MODELS[local].pip_command()})")

    async def go() -> tuple[str | None, dict[str, object] | None]:
        adapter = create_adapter(name, {"model": f"llama_cpp/{local}", "max_tokens": 160,
                                        "episodes_per_fold": 3, "cache": False})
        await adapter.reset("s")
        for ep in _episodes()[:3]:
            await adapter.ingest(ep)
        await adapter.prepare("s", 3)
        context = await adapter.standing_context("s", 3)
        usage = await adapter.model_usage()
        await adapter.aclose()
        return context, usage

    context, usage = anyio.run(go)
    assert context and context.strip()
    assert usage is not None and usage["calls"] >= 1 and usage["completion_tokens"] > 0
