"""The Ray executor on a real local Ray cluster (several nodes on this machine): the same scores
as the local executor, a node killed mid-run loses and duplicates nothing, and a driver killed
with SIGKILL resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lens.core.distribution import install_hint
from tests.core.helpers import make_dataset, write_json

ray = pytest.importorskip("ray", reason="the Ray executor needs the ray extra: "
                                        f"{install_hint('ray')}")
from ray.cluster_utils import Cluster  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MOD = "tests.isolation.hostile_adapters"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    # The head takes no adapter actors (0 CPUs) and each worker node room for one actor of
    # one CPU, so while a run of such adapters is busy every worker node hosts one.
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    c.add_node(num_cpus=1)
    c.add_node(num_cpus=1)
    c.wait_for_nodes()
    try:
        yield c
    finally:
        c.shutdown()


def _config(tmp_path: Path, name: str, adapters: list[dict[str, Any]],
            executor: Any = None, n_scopes: int = 2) -> Path:
    ds = tmp_path / "ds.json"
    if not ds.exists():
        write_json(ds, make_dataset(n_episodes=6, checkpoints=(3, 6), questions_per_checkpoint=2,
                                    scope_ids=tuple(f"s{i}" for i in range(1, n_scopes + 1))))
    data: dict[str, Any] = {
        "name": name, "dataset": {"path": str(ds)}, "adapters": adapters,
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs"),
        "concurrency": {"units": 8, "questions": 8}, "cache": {"enabled": False},
    }
    if executor is not None:
        data["executor"] = executor
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _lens(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def _run_dir(tmp_path: Path, name: str) -> Path:
    return sorted((tmp_path / "runs").glob(f"{name}-*"))[-1]


def _committed(run: Path) -> dict[str, int]:
    """How many times each question was committed (its question_done event)."""
    counts: dict[str, int] = {}
    for line in (run / "events.jsonl").read_text(encoding="utf-8").splitlines():
        ev = json.loads(line)
        if ev.get("kind") == "question_done":
            counts[ev["key"]] = counts.get(ev["key"], 0) + 1
    return counts


def _per_question(run: Path) -> dict[str, Any]:
    scores = json.loads((run / "scores.json").read_text(encoding="utf-8"))
    return {f"{q['adapter']}|{q['scope_id']}|{q['question_id']}": q["metrics"]
            for q in scores["questions"]}


def test_ray_gives_the_local_executor_scores(cluster: Cluster, tmp_path: Path) -> None:
    adapters = [{"name": "sqlite_fts"}, {"name": f"{MOD}:Honest", "label": "honest",
                                         "resources": {"num_cpus": 1}}]
    local = _lens("run", str(_config(tmp_path, "local", adapters)), "--quiet")
    assert local.returncode == 0, local.stderr
    on_ray = _lens("run", str(_config(tmp_path, "onray", adapters,
                                      {"kind": "ray", "address": cluster.address})), "--quiet")
    assert on_ray.returncode == 0, on_ray.stderr
    a, b = _per_question(_run_dir(tmp_path, "local")), _per_question(_run_dir(tmp_path, "onray"))
    assert len(a) == 16 and a == b


def test_a_lost_node_loses_and_duplicates_nothing(cluster: Cluster, tmp_path: Path) -> None:
    adapters = [{"name": f"{MOD}:SlowHonest", "label": f"slow{i}", "resources": {"num_cpus": 1}}
                for i in range(2)]
    cfg = _config(tmp_path, "nodeloss", adapters, {"kind": "ray", "address": cluster.address},
                  n_scopes=2)
    proc = subprocess.Popen([sys.executable, "-m", "lens", "run", str(cfg), "--quiet"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_records(tmp_path, "nodeloss", 1)
        victim = next(n for n in cluster.worker_nodes)
        cluster.remove_node(victim)
        cluster.add_node(num_cpus=1)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    run = _run_dir(tmp_path, "nodeloss")
    counts = _committed(run)
    assert len(counts) == 16 and set(counts.values()) == {1}, counts
    scores = json.loads((run / "scores.json").read_text(encoding="utf-8"))["questions"]
    assert len(scores) == 16 and {q["status"] for q in scores} == {"answered"}
    events = (run / "events.jsonl").read_text(encoding="utf-8")
    assert '"unit_retry"' in events


def test_sigkill_of_the_driver_then_resume(cluster: Cluster, tmp_path: Path) -> None:
    adapters = [{"name": f"{MOD}:SlowHonest", "label": "slow", "resources": {"num_cpus": 1}}]
    cfg = _config(tmp_path, "killed", adapters, {"kind": "ray", "address": cluster.address},
                  n_scopes=3)
    proc = subprocess.Popen([sys.executable, "-m", "lens", "run", str(cfg), "--quiet"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    _wait_for_records(tmp_path, "killed", 2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    run = _run_dir(tmp_path, "killed")
    before = _committed(run)
    assert 0 < len(before) < 12
    resumed = _lens("run", str(cfg), "--resume", str(run), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    counts = _committed(run)
    assert len(counts) == 12 and set(counts.values()) == {1}, counts
    assert len(_per_question(run)) == 12


def _wait_for_records(tmp_path: Path, name: str, n: int, limit: float = 180) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        runs = sorted((tmp_path / "runs").glob(f"{name}-*"))
        if runs and (runs[-1] / "records.jsonl").exists():
            lines = (runs[-1] / "records.jsonl").read_text(encoding="utf-8").splitlines()
            if len(lines) >= n:
                return
        time.sleep(0.05)
    raise AssertionError(f"no {n} records from {name} within {limit} s")
