"""Worker processes (``concurrency.processes``) through the real CLI: the same results as one
process, workers that die with a killed run, a worker killed alone, and --resume after both."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from lens.store import RunStore
from tests.reliability.test_reliability_crashes import (
    deterministic_model,
    find_run,
    scores_by_key,
    start,
    wait_for,
    wait_for_run,
    write_config,
)
from tests.support.fake_openai import FakeOpenAI

QUESTIONS = 36


def sharded(cfg: Path, processes: int = 2) -> Path:
    data = yaml.safe_load(cfg.read_text())
    data["concurrency"]["processes"] = processes
    # Two adapters: four units to spread over the workers.
    data["adapters"] = [{"name": "sqlite_fts"}, {"name": "recency"}]
    cfg.write_text(yaml.safe_dump(data))
    return cfg


def events(run_dir: Path) -> list[dict[str, object]]:
    return list(RunStore(run_dir).events())


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (dead, not yet reaped by its parent) counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def worker_pids(run_dir: Path) -> list[int]:
    found = [e for e in events(run_dir) if e["kind"] == "workers_started"]
    return [int(p) for p in found[-1]["pids"]] if found else []  # type: ignore[union-attr]


def start_until_first_answer(cfg: Path, runs: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """A run started, with a question committed: its workers are busy."""
    proc = start(cfg, None)
    run_dir = wait_for_run(runs, proc)
    assert run_dir is not None
    assert wait_for(lambda: any(e["kind"] == "question_done" for e in events(run_dir)), 60)
    return proc, run_dir


def assert_complete_once(run_dir: Path) -> None:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    done = Counter(e["key"] for e in events(run_dir) if e["kind"] == "question_done")
    assert len(done) == 2 * QUESTIONS and set(done.values()) == {1}


@pytest.mark.slow
def test_two_workers_give_the_results_of_one_process(tmp_path: Path) -> None:
    with FakeOpenAI(deterministic_model) as server:
        one = sharded(write_config(tmp_path, server.base_url, "one"), processes=1)
        two = sharded(write_config(tmp_path, server.base_url, "two"), processes=2)
        for cfg in (one, two):
            proc = start(cfg, None)
            assert proc.wait(timeout=300) == 0, proc.stderr.read() if proc.stderr else ""
    one_dir, two_dir = find_run(tmp_path / "runs-one"), find_run(tmp_path / "runs-two")
    assert one_dir is not None and two_dir is not None
    assert scores_by_key(two_dir) == scores_by_key(one_dir)
    assert_complete_once(two_dir)
    # Each worker wrote its own records; the events name them.
    names = {e["record"] for e in events(two_dir) if e["kind"] == "question_done"}
    assert names == {"records-0.jsonl", "records-1.jsonl"}
    usage = [json.loads((d / "manifest.json").read_text())["usage"]["by_role"]["agent"]["calls"]
             for d in (one_dir, two_dir)]
    assert usage[0] == usage[1] > 0


@pytest.mark.slow
def test_killed_run_takes_its_workers_and_resumes(tmp_path: Path) -> None:
    with FakeOpenAI(deterministic_model) as server:
        cfg = sharded(write_config(tmp_path, server.base_url, "killed"))
        proc, run_dir = start_until_first_answer(cfg, tmp_path / "runs-killed")
        pids = worker_pids(run_dir)
        assert len(pids) == 2 and all(alive(p) for p in pids)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert wait_for(lambda: not any(alive(p) for p in pids), 10), "workers outlived the run"
        served = len(server.requests)
        time.sleep(0.5)
        assert len(server.requests) == served, "calls went on after the run was killed"
        proc = start(cfg, run_dir)
        assert proc.wait(timeout=300) == 0, proc.stderr.read() if proc.stderr else ""
    assert_complete_once(run_dir)


@pytest.mark.slow
def test_a_worker_killed_alone_fails_its_units_and_resume_finishes_them(tmp_path: Path) -> None:
    with FakeOpenAI(deterministic_model) as server:
        cfg = sharded(write_config(tmp_path, server.base_url, "worker"))
        proc, run_dir = start_until_first_answer(cfg, tmp_path / "runs-worker")
        victim = worker_pids(run_dir)[0]
        assert alive(victim)
        os.kill(victim, signal.SIGKILL)
        assert proc.wait(timeout=300) == 0, proc.stderr.read() if proc.stderr else ""
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["status"] == "complete_with_errors"
        errors = [e for e in events(run_dir) if e["kind"] == "unit_error"]
        assert errors and all("worker 0" in str(e["error"]) for e in errors)
        # The other worker's units all finished.
        shards = [e for e in events(run_dir) if e["kind"] == "workers_started"][-1]["units"]
        finished = {e["key"] for e in events(run_dir) if e["kind"] == "unit_done"}
        assert set(shards[1]) <= finished
        proc = start(cfg, run_dir)
        assert proc.wait(timeout=300) == 0, proc.stderr.read() if proc.stderr else ""
    assert_complete_once(run_dir)
