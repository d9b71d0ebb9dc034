"""Unit keys cannot collide whatever labels and scope ids hold: adapter label ``a|b`` on scope
``c`` and label ``a`` on scope ``b|c`` are two units. A real run is killed (SIGKILL) after the
first two units finished and while the other two are mid-way; ``--resume`` then asks every
question the killed run had not stored, and the run ends with all eight, once each."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import yaml

from lens.runs.store import RunStore
from tests.core.helpers import make_dataset, write_json
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

ROOT = Path(__file__).resolve().parents[2]


def _lens(*args: str, cwd: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "LENS_CACHE_DIR": str(cwd / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-m", "lens", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _unit_done(run_dir: Path) -> int:
    events = run_dir / "events.jsonl"
    if not events.exists():
        return 0
    return events.read_text(encoding="utf-8").count('"kind": "unit_done"')


def test_sigkill_then_resume_asks_every_question_of_colliding_looking_units(
        tmp_path: Path) -> None:
    data = make_dataset(n_episodes=4, checkpoints=(4,), questions_per_checkpoint=2,
                        scope_ids=("c", "b|c"))
    for q in data["questions"]:
        q["prompt"] += f" [scope {q['scope_id']}]"
    ds = write_json(tmp_path / "ds.json", data)
    slow = {"on": True}
    # Scope b|c's first answers are held until the test has killed the run: its units are
    # mid-way at the kill however long scope c takes on a busy machine.
    held = threading.Event()
    asked: Counter[str] = Counter()

    def respond(req: RecordedRequest) -> Reply:
        messages = req.body["messages"]
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        turn = sum(1 for m in messages if m["role"] == "assistant")
        if turn == 0:
            asked[prompt] += 1
            if slow["on"] and "[scope b|c]" in prompt:
                held.wait(300)
            return Reply.tool_call("memory_search", {"query": "widget count"})
        return Reply.text("The widget count is 40 [c_ep_004].")

    # The ExitStack closes first: held replies are let go before the server joins its threads.
    with FakeOpenAI(respond) as server, contextlib.ExitStack() as release:
        release.callback(held.set)
        cfg = tmp_path / "run.yaml"
        cfg.write_text(yaml.safe_dump({
            "name": "keys", "dataset": {"path": str(ds)},
            "adapters": [{"name": "sqlite_fts", "label": "a|b"},
                         {"name": "sqlite_fts", "label": "a"}],
            "agent": {"model": "openai/fake", "base_url": server.base_url},
            "concurrency": {"units": 4, "questions": 8}, "cache": {"enabled": False},
            "out_dir": "runs", "scoring": {"enabled": False}, "report": False,
        }), encoding="utf-8")
        proc = _lens("run", str(cfg), "--quiet", cwd=tmp_path)
        deadline = time.monotonic() + 120
        run_dir: Path | None = None
        while time.monotonic() < deadline and proc.poll() is None:
            runs = [p for p in (tmp_path / "runs").glob("keys-*") if p.is_dir()] \
                if (tmp_path / "runs").exists() else []
            run_dir = runs[0] if runs else None
            if run_dir is not None and _unit_done(run_dir) >= 2:
                break
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        slow["on"] = False
        held.set()  # the held replies go to the killed run's closed connections
        assert run_dir is not None
        store = RunStore.open(run_dir)
        done_units = store.done_keys("unit_done")
        assert len(done_units) == 2 and len(store.load_records()) == 4
        store.close()

        slow["on"] = False
        asked.clear()
        resumed = _lens("run", str(cfg), "--quiet", "--resume", str(run_dir), cwd=tmp_path)
        out, err = resumed.communicate(timeout=240)
        assert resumed.returncode == 0, err.decode()
        assert b"(4 answered now, 0 empty, 0 errored, 4 done before)" in out, out
    store = RunStore.open(run_dir)
    records = store.load_records()
    assert len(records) == 8
    assert Counter((r.adapter, r.scope_id) for r in records) == {
        ("a|b", "c"): 2, ("a|b", "b|c"): 2, ("a", "c"): 2, ("a", "b|c"): 2}
    assert len({r.key for r in records}) == 8 and len(store.done_keys("unit_done")) == 4
    # After the kill, each question of scope b|c was asked once by each adapter, and nothing
    # of scope c again.
    assert sorted(asked.values()) == [2, 2], asked
    assert all("[scope b|c]" in p for p in asked), asked
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"


def test_tracebacks_of_keys_that_differ_in_unsafe_characters_keep_their_own_files(
        tmp_path: Path) -> None:
    from lens.runs.records import question_key, unit_key

    store = RunStore.create(tmp_path, "keys", "k1", {"run_id": "k1"})
    keys = [question_key(unit_key(label, scope, 0), "q1")
            for label, scope in (("a|b", "c"), ("a", "b|c"), ("a_b", "c"))]
    paths = [store.save_error(k, f"traceback of {k}") for k in keys]
    store.close()
    assert len(set(paths)) == 3
    for key, path in zip(keys, paths, strict=True):
        assert (store.root / path).read_text(encoding="utf-8") == f"traceback of {key}"
