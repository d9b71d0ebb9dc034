"""kill -9 at random points of a real run (and during scoring), then --resume: the final scores
equal those of an uninterrupted run, nothing is counted twice, paid calls are not repeated."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from lens.runs.store import RunStore
from tests.core.helpers import make_dataset, write_json
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

ROOT = Path(__file__).resolve().parents[2]


def deterministic_model(req: RecordedRequest) -> Reply:
    messages = req.body["messages"]
    text = json.dumps(messages, sort_keys=True)
    if '"verdict"' in text:  # a judge call
        pick = hashlib.sha256(text.encode()).digest()[0] % 3
        return Reply.text(json.dumps({"verdict": ["A", "B", "TIE"][pick], "reason": "r"}),
                          delay_s=0.01)
    turn = sum(1 for m in messages if m["role"] == "assistant")
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    if turn == 0:
        return Reply.tool_call("memory_search", {"query": "widget count"}, delay_s=0.02)
    digest = hashlib.sha256(prompt.encode()).digest()
    # make_dataset dates episode 9 first: 7-9 are ingested before the first checkpoint, so no
    # citation reaches past the question's checkpoint.
    n = 7 + digest[0] % 3
    return Reply.text(f"The widget count reached {n * 10} [{prompt[-3:-1]}_ep_00{n}].",
                      delay_s=0.02)


def write_config(tmp: Path, base_url: str, name: str) -> Path:
    data = make_dataset(n_episodes=9, checkpoints=(3, 6, 9), questions_per_checkpoint=6,
                        scope_ids=("s1", "s2"))
    for q in data["questions"]:
        q["prompt"] += f" [{q['scope_id']}]"
    ds = write_json(tmp / "ds.json", data)
    cfg: dict[str, Any] = {
        "name": name,
        "dataset": {"path": str(ds)},
        "adapters": [{"name": "sqlite_fts"}],
        "agent": {"model": "openai/fake-agent", "base_url": base_url, "max_concurrency": 4},
        "judge": {"model": "openai/fake-judge", "base_url": base_url, "max_concurrency": 4},
        "concurrency": {"units": 2, "questions": 3},
        "cache": {"path": str(tmp / f"cache-{name}.sqlite")},
        "out_dir": str(tmp / f"runs-{name}"),
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def start(cfg: Path, resume: Path | None) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "lens", "run", str(cfg), "--quiet"]
    if resume is not None:
        args += ["--resume", str(resume)]
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def scores_by_key(run_dir: Path) -> dict[str, dict[str, Any]]:
    data = json.loads((run_dir / "scores.json").read_text())
    return {q["key"]: q["metrics"] for q in data["questions"]}


def find_run(runs: Path) -> Path | None:
    """The run directory (staging folders of a killed start-up are hidden and ignored)."""
    if not runs.exists():
        return None
    found = [d for d in runs.iterdir() if not d.name.startswith(".")]
    return found[0] if found else None


def wait_for_run(runs: Path, proc: subprocess.Popen[bytes]) -> Path | None:
    wait_for(lambda: proc.poll() is not None or find_run(runs) is not None, 60)
    return find_run(runs)


def wait_for(predicate: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return False


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The run never interrupted, the same for every seed (the model answers by the request
    alone): its directory and the requests it made."""
    tmp = tmp_path_factory.mktemp("baseline")
    with FakeOpenAI(deterministic_model) as server:
        proc = start(write_config(tmp, server.base_url, "baseline"), None)
        assert proc.wait(timeout=300) == 0, proc.stderr.read() if proc.stderr else ""
        (baseline_dir,) = (tmp / "runs-baseline").iterdir()
        return baseline_dir, len(server.requests)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 23, 37])
def test_random_kills_then_resume_match_an_uninterrupted_run(
        tmp_path: Path, seed: int, uninterrupted: tuple[Path, int]) -> None:
    rng = random.Random(seed)
    baseline_dir, baseline_requests = uninterrupted
    with FakeOpenAI(deterministic_model) as server:
        cfg = write_config(tmp_path, server.base_url, "crashy")
        runs = tmp_path / "runs-crashy"
        run_dir: Path | None = None
        kills = 0
        for attempt in range(12):
            proc = start(cfg, run_dir)
            run_dir = run_dir or wait_for_run(runs, proc)
            if attempt == 2 and run_dir is not None:
                # One kill lands while scoring: after the run's last question is stored.
                events = run_dir / "events.jsonl"
                wait_for(lambda p=proc, ev=events: p.poll() is not None
                         or '"run_finished"' in ev.read_text(), 60)
                time.sleep(rng.uniform(0.0, 0.2))
            else:
                # The rest land anywhere from start-up to the middle of the run.
                time.sleep(rng.uniform(0.0, 1.5))
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
            if proc.wait(timeout=120) == 0:
                break
            run_dir = run_dir or find_run(runs)
        else:
            proc = start(cfg, run_dir)
            assert proc.wait(timeout=300) == 0
        crash_requests = len(server.requests)
    assert run_dir is not None and kills >= 1
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    # Same scores as the run that was never interrupted.
    assert scores_by_key(run_dir) == scores_by_key(baseline_dir)
    # No question committed twice, no torn line left behind.
    lines = (run_dir / "events.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b""
    for line in lines[:-1]:
        json.loads(line)
    done = Counter(e["key"] for e in RunStore(run_dir).events() if e["kind"] == "question_done")
    assert len(done) == 36 and set(done.values()) == {1}
    # Paid calls are not repeated: beyond the calls in flight at each kill (at most 4 agent +
    # 4 judge), the crashed run made no more requests than the uninterrupted one.
    assert crash_requests <= baseline_requests + kills * 8
