"""Worker processes in-process: limits split, usage merged, refusals before anything is
written, and a real two-worker run through ``execute``."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from lens import shards
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


def _run_pids(run_dir: Path) -> list[int]:
    started = [e for e in RunStore(run_dir).events() if e["kind"] == "workers_started"]
    return list(started[0]["pids"])


def test_a_run_takes_the_workers_started_ahead(tmp_path: Path) -> None:
    shards.prestart(2)
    spares = [w.proc.pid for w in shards._SPARES._idle]
    assert len(spares) == 2 and all(p is not None for p in spares)
    ds = write_json(tmp_path / "d.json", make_dataset(scope_ids=("s1", "s2")))
    out = execute(write_config(tmp_path / "c.yaml", ds, report=False,
                               concurrency={"processes": 2}))
    assert out.summary.answered == out.summary.questions > 0
    assert sorted(_run_pids(out.run_dir)) == sorted(spares)
    assert shards._SPARES._idle == []


def test_a_spare_that_died_while_waiting_is_not_taken() -> None:
    shards.prestart(2)
    dead, alive = shards._SPARES._idle
    os.kill(dead.proc.pid, signal.SIGKILL)
    dead.proc.join(10)
    taken = shards._SPARES.take(2)
    pids = [w.proc.pid for w in taken]
    assert alive.proc.pid in pids and dead.proc.pid not in pids and len(pids) == 2
    for w in taken:
        w.conn.close()
        w.proc.join(10)


def test_a_worker_that_dies_before_its_job_is_replaced(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    shards.prestart(2)
    dead, alive = shards._SPARES.take(2)
    os.kill(dead.proc.pid, signal.SIGKILL)
    dead.proc.join(10)
    # Between the run taking it and sending it the job: the send fails, a new worker runs it.
    monkeypatch.setattr(shards._SPARES, "take", lambda n: [dead, alive])
    ds = write_json(tmp_path / "d.json", make_dataset(scope_ids=("s1", "s2")))
    out = execute(write_config(tmp_path / "c.yaml", ds, report=False,
                               concurrency={"processes": 2}))
    assert out.summary.answered == out.summary.questions > 0
    assert out.summary.units_failed == 0
    pids = _run_pids(out.run_dir)
    assert alive.proc.pid in pids and dead.proc.pid not in pids and len(pids) == 2


def test_a_spare_whose_run_never_comes_exits_quietly() -> None:
    shards.prestart(1)
    spare = shards._SPARES.take(1)[0]
    spare.conn.close()
    spare.proc.join(10)
    assert spare.proc.exitcode == 0
