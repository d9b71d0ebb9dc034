from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from lens.runs.store import RunStore
from tests.core.helpers import make_dataset, write_config, write_json

ROOT = Path(__file__).resolve().parents[2]


def lens(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=300)


def test_torn_last_line_is_discarded_and_repaired(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "t", "x")
    store.write_manifest({"run_id": "x"})
    store.append_event("a", "k1")
    store.append_event("b", "k2")
    store.close()
    with open(store.root / "events.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"seq": 3, "kind": "question_do')  # a crash mid-write
    assert [e["kind"] for e in store.events()] == ["a", "b"]
    reopened = RunStore.open(store.root)
    reopened.append_event("c", "k3")
    reopened.close()
    lines = (store.root / "events.jsonl").read_text().splitlines()
    assert [json.loads(x)["kind"] for x in lines] == ["a", "b", "c"]
    assert json.loads(lines[-1])["seq"] == 3


@pytest.mark.parametrize(
    ("config_text", "expected"),
    [
        ("name: [unclosed", "YAML syntax error: line 1"),
        ("dataset: {path: d.json}\nadapters: [{name: sqlite_fts}]\nagent: {model: scripted/policy}"
         "\nbogus_field: 1", "field 'bogus_field': unknown field"),
        ("dataset: {path: d.json}\nadapters: [{name: sqlite_fts}]\nagent: {model: gpt4}",
         "field 'agent.model'"),
        ("dataset: {path: d.json}\nadapters: [{name: memgraph_9000}]\n"
         "agent: {model: scripted/policy}", "field 'adapters.0.name': unknown adapter"),
        ("dataset: {path: missing.json}\nadapters: [{name: sqlite_fts}]\n"
         "agent: {model: scripted/policy}", "missing.json: dataset file not found"),
        ("dataset: {path: d.json}\nadapters: [{name: sqlite_fts, options: {max_results: -1}}]\n"
         "agent: {model: scripted/policy}", "field 'adapters.0.options.max_results'"),
        ("dataset: {path: d.json, scopes: [nope]}\nadapters: [{name: sqlite_fts}]\n"
         "agent: {model: scripted/policy}", "field 'dataset.scopes': unknown scope"),
        ("a: &a [1]\nb: *a", "YAML aliases"),
        ("dataset: {path: bad.json}\nadapters: [{name: sqlite_fts}]\n"
         "agent: {model: scripted/policy}", "$.questions[0].checkpoint_after"),
    ],
)
def test_user_errors_exit_2_with_one_message_and_no_run_dir(
    tmp_path: Path, config_text: str, expected: str
) -> None:
    write_json(tmp_path / "d.json", make_dataset())
    bad = make_dataset()
    bad["questions"][0]["checkpoint_after"] = 77
    write_json(tmp_path / "bad.json", bad)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(config_text + f"\nout_dir: {tmp_path / 'runs'}\n"
                   if "aliases" not in expected and "syntax" not in expected else config_text,
                   encoding="utf-8")
    res = lens("run", str(cfg), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2, res.stderr
    assert expected in res.stderr
    named = [str(tmp_path / n) for n in ("c.yaml", "bad.json", "missing.json")]
    assert any(n in res.stderr for n in named)
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "runs").exists()


def test_missing_config_file(tmp_path: Path) -> None:
    res = lens("run", str(tmp_path / "nope.yaml"))
    assert res.returncode == 2 and "config file not found" in res.stderr


def test_run_writes_complete_run_directory(tmp_path: Path) -> None:
    ds = write_json(tmp_path / "d.json", make_dataset())
    cfg = write_config(tmp_path / "c.yaml", ds)
    res = lens("run", str(cfg), "--quiet", "--out", str(tmp_path / "runs"))
    assert res.returncode == 0, res.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    cond = manifest["condition"]
    for field in ("lens_version", "dataset_id", "dataset_hash", "adapters", "agent_model",
                  "judge_model", "prompts_hash", "budget", "seed", "repeats"):
        assert field in cond
    assert cond["agent_model"] == "scripted/policy"
    assert "python" in manifest["versions"]
    recs = RunStore(run_dir).load_records()
    assert len(recs) == 6 and all(r.status == "answered" for r in recs)
    assert all(r.transcript and r.model_calls and r.budget for r in recs)


def test_resume_refuses_a_different_condition(tmp_path: Path) -> None:
    ds = write_json(tmp_path / "d.json", make_dataset())
    cfg = write_config(tmp_path / "c.yaml", ds)
    assert lens("run", str(cfg), "--quiet", "--out", str(tmp_path / "runs")).returncode == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    cfg2 = write_config(tmp_path / "c2.yaml", ds, seed=7)
    res = lens("run", str(cfg2), "--resume", str(run_dir))
    assert res.returncode == 2 and "fields: seed" in res.stderr


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_answers_each_question_once(tmp_path: Path) -> None:
    data = make_dataset(n_episodes=30, checkpoints=(5, 10, 15, 20, 25, 30),
                        questions_per_checkpoint=6, scope_ids=("s1", "s2"))
    ds = write_json(tmp_path / "d.json", data)
    # Each unit's adapter holds its searches at a gate after six questions, so the kill lands
    # mid-run however fast or loaded the machine is: at least the first held unit's six are
    # answered (the run's two question slots may both be held by one unit, so the other unit's
    # share depends on the order the slots were taken).
    gate = tmp_path / "gate"
    gate.mkdir()
    # A held search must not time out while the other unit catches up on a loaded machine: that
    # would record an error, not a kill.
    cfg = write_config(tmp_path / "c.yaml", ds,
                       adapters=[{"name": "tests.isolation.hostile_adapters:HeldHonest",
                                  "options": {"gate": str(gate), "hold_after": 6},
                                  "call_timeout_s": 900}],
                       concurrency={"units": 2, "questions": 2})
    runs = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "lens", "run", str(cfg), "--quiet",
                             "--out", str(runs)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    run_dir: Path | None = None
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before the gate"
        dirs = list(runs.glob("*")) if runs.exists() else []
        if dirs and (dirs[0] / "events.jsonl").exists():
            run_dir = dirs[0]
            done = (run_dir / "events.jsonl").read_text().count('"question_done"')
            if done >= 6 and (gate / "held").exists():
                break
        time.sleep(0.02)  # polling for the events, not waiting out a duration
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert run_dir is not None
    before = (run_dir / "events.jsonl").read_text().count('"question_done"')
    assert 6 <= before < 72, "the kill must land mid-run"
    (gate / "release").touch()
    res = lens("run", str(cfg), "--quiet", "--resume", str(run_dir))
    assert res.returncode == 0, res.stderr
    assert f"{before} done before" in res.stdout
    events = list(RunStore(run_dir).events())
    done_keys = Counter(e["key"] for e in events if e["kind"] == "question_done")
    assert len(done_keys) == 72
    assert set(done_keys.values()) == {1}
    records = RunStore(run_dir).load_records()
    assert len(records) == 72 and all(r.status == "answered" for r in records)
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"
