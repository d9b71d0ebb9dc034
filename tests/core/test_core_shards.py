"""Worker processes in-process: limits split, usage merged, refusals before anything is
written, and a real two-worker run through ``execute``."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from lens.config import RunConfig
from lens.errors import ConfigError
from lens.execute import execute
from lens.models.scripted import ScriptedClient
from lens.runner import Runner
from lens.shards import merge_usage, scaled_config
from lens.store import RunStore
from tests.core.helpers import make_dataset, write_config, write_json


def config(**over: object) -> RunConfig:
    base: dict[str, object] = {
        "name": "t", "dataset": {"path": "d.json"}, "adapters": [{"name": "sqlite_fts"}],
        "agent": {"model": "scripted/policy", "max_concurrency": 9,
                  "requests_per_minute": 600, "tokens_per_minute": 90_000},
        "concurrency": {"units": 3, "questions": 10, "processes": 4},
        "max_cost_usd": 2.0}
    base.update(over)
    return RunConfig.model_validate(base)


def test_each_worker_gets_its_share_of_every_limit() -> None:
    part = scaled_config(config(), 4)
    assert part.concurrency.processes == 1
    assert (part.concurrency.questions, part.concurrency.units) == (3, 1)
    assert part.agent.max_concurrency == 3
    assert part.agent.requests_per_minute == 150 and part.agent.tokens_per_minute == 22_500
    assert part.max_cost_usd == 0.5
    # What results depend on is untouched.
    assert part.agent.model == "scripted/policy" and part.adapters == config().adapters


def test_worker_usage_adds_up_but_settings_stay() -> None:
    base = {"total": {"calls": 2, "cost_usd": 0.5}, "max_cost_usd": 2.0,
            "cache": {"enabled": True, "path": "/c", "hits": 1},
            "by_role": {"agent": {"calls": 2}}}
    worker = {"total": {"calls": 3, "cost_usd": 0.25}, "max_cost_usd": 0.5,
              "cache": {"enabled": True, "path": "/c", "hits": 4},
              "by_role": {"agent": {"calls": 3}, "judge": {"calls": 1}}}
    merged = merge_usage(base, [worker, worker])
    assert merged["total"] == {"calls": 8, "cost_usd": 1.0}
    assert merged["max_cost_usd"] == 2.0 and merged["cache"]["path"] == "/c"
    assert merged["cache"]["hits"] == 9 and merged["cache"]["enabled"] is True
    assert merged["by_role"] == {"agent": {"calls": 8}, "judge": {"calls": 2}}
    assert base["total"] == {"calls": 2, "cost_usd": 0.5}


def test_a_model_object_cannot_cross_processes(tmp_path: Path) -> None:
    ds = write_json(tmp_path / "d.json", make_dataset())
    cfg = write_config(tmp_path / "c.yaml", ds, concurrency={"processes": 2})
    with pytest.raises(ConfigError, match=r"concurrency\.processes"):
        execute(cfg, model=ScriptedClient("policy"))
    assert not (tmp_path / "runs").exists()


def test_a_custom_adapter_factory_cannot_cross_processes(tmp_path: Path) -> None:
    ds = write_json(tmp_path / "d.json", make_dataset())
    cfg = config(dataset={"path": str(ds)})
    store = RunStore.create(tmp_path, "t", "x")
    from lens.dataset import load_dataset

    runner = Runner(cfg, load_dataset(ds), store, ScriptedClient("policy"),
                    adapter_factory=lambda _c: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="adapter factory"):
        anyio.run(runner.run)


def test_two_workers_through_execute(tmp_path: Path) -> None:
    ds = write_json(tmp_path / "d.json", make_dataset(scope_ids=("s1", "s2")))
    one = execute(write_config(tmp_path / "one.yaml", ds, name="one", report=False))
    two = execute(write_config(tmp_path / "two.yaml", ds, name="two", report=False,
                               concurrency={"processes": 2}))
    assert two.summary.answered == one.summary.answered == one.summary.questions > 0
    assert two.summary.units_failed == 0

    def answers(run_dir: Path) -> dict[str, tuple[str, list[str]]]:
        return {r.key: (r.answer, r.cited_refs) for r in RunStore.open(run_dir).load_records()}

    assert answers(two.run_dir) == answers(one.run_dir)
    assert sorted(p.name for p in two.run_dir.glob("records*.jsonl")) == [
        "records-0.jsonl", "records-1.jsonl"]
    # Resuming a finished run starts no worker and redoes nothing.
    again = execute(tmp_path / "two.yaml", resume=two.run_dir)
    assert again.summary.skipped == two.summary.questions and again.summary.answered == 0
    started = [e for e in RunStore(two.run_dir).events() if e["kind"] == "workers_started"]
    assert len(started) == 1
