"""Units are isolated: third-party adapters run in a process of their own, so one that hangs,
blocks its event loop, exhausts memory or kills its process fails its own unit alone, through the
real CLI, while honest adapters in the same run finish."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lens.runs.records import is_scored
from tests.core.helpers import make_dataset, write_json

ROOT = Path(__file__).resolve().parents[2]
MOD = "tests.isolation.hostile_adapters"


def _run(tmp_path: Path, adapters: list[dict[str, object]], timeout: float = 240
         ) -> tuple[subprocess.CompletedProcess[str], Path]:
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=6, checkpoints=(3, 6),
                                                       questions_per_checkpoint=2))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "iso", "dataset": {"path": str(ds)}, "adapters": adapters,
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs"),
        "concurrency": {"units": len(adapters), "questions": 8},
        "cache": {"enabled": False},
    }), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "lens", "run", str(cfg), "--quiet"], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    runs = sorted((tmp_path / "runs").glob("iso-*"))
    assert runs, proc.stderr
    return proc, runs[-1]


def _records(run: Path) -> dict[str, list[dict[str, object]]]:
    out: dict[str, list[dict[str, object]]] = {}
    for line in (run / "records.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        out.setdefault(str(rec["adapter"]), []).append(rec)
    return out


@pytest.mark.slow
def test_hostile_adapters_fail_alone(tmp_path: Path) -> None:
    adapters = [
        {"name": "sqlite_fts", "label": "builtin"},
        {"name": f"{MOD}:Honest", "label": "honest"},
        {"name": f"{MOD}:PrintsToStdout", "label": "prints"},
        {"name": f"{MOD}:ExitsInIngest", "label": "exits"},
        {"name": f"{MOD}:BlocksLoop", "label": "blocks", "call_timeout_s": 2},
        {"name": f"{MOD}:SyncHangs", "label": "hangs", "call_timeout_s": 2},
        {"name": f"{MOD}:SyncSlow", "label": "slow", "call_timeout_s": 2},
        {"name": f"{MOD}:HogsMemory", "label": "hog", "max_memory_mb": 512},
        {"name": f"{MOD}:SyncSlow", "label": "slow_inproc", "call_timeout_s": 2,
         "isolation": "none"},
    ]
    proc, run = _run(tmp_path, adapters)
    # Units were lost: the run failed its purpose, and says which rows decided it.
    assert proc.returncode == 1, proc.stderr
    assert "lens: exit status 1: the run failed its purpose" in proc.stderr
    assert "questions lost to a hung or crashed adapter" in proc.stderr
    recs = _records(run)
    for label in ("builtin", "honest", "prints"):
        assert [r["status"] for r in recs[label]] == ["answered"] * 4, (label, recs[label])
    reasons = {
        "exits": "process ended unexpectedly (exit status 3)",
        "blocks": "search did not return within 2 s",
        "hangs": "search did not return within 2 s",
        "slow": "search did not return within 2 s",
        "hog": "MemoryError",
    }
    for label, reason in reasons.items():
        assert len(recs[label]) == 4, (label, recs[label])
        for rec in recs[label]:
            assert rec["status"] == "error", (label, rec)
            assert reason in str(rec["error"]), (label, rec["error"])
    # In-process, a slow synchronous call is abandoned at the timeout: the tool call fails,
    # the question goes on (it is never recorded as a successful search).
    for rec in recs["slow_inproc"]:
        searches = [c for c in rec["tool_calls"] if c["name"] == "memory_search"]
        assert searches and not any(c["ok"] for c in searches), rec
        assert all("did not answer within 2" in c["error"] for c in searches)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "complete_with_errors"
    report = (run / "report.md").read_text(encoding="utf-8")
    lost_row = next(line for line in report.splitlines() if "hung or crashed adapter" in line)
    assert "FAIL" in lost_row and "exits: 4" in lost_row


@pytest.mark.slow
def test_isolated_adapter_holds_no_ground_truth(tmp_path: Path) -> None:
    proc, run = _run(tmp_path, [{"name": f"{MOD}:LooksForGold", "label": "spy"}])
    # The spy's search answers with the ref 'leak', no episode: a contract failure (exit 1).
    assert proc.returncode == 1, proc.stderr
    assert "refs name episodes" in proc.stderr
    recs = _records(run)["spy"]
    # Every session finished (the scripted policy answers "nothing" with no text: empty_answer).
    assert recs and all(is_scored(r["status"]) for r in recs)
    seen = json.dumps([r["transcript"] for r in recs])
    assert "GOLDSECRET" not in seen
    assert '"text": "nothing"' in seen or "nothing" in seen


def test_isolation_choice() -> None:
    from lens.data.config import AdapterConfig
    from lens.memory.executor import runs_isolated

    assert not runs_isolated(AdapterConfig(name="sqlite_fts"))
    assert runs_isolated(AdapterConfig(name=f"{MOD}:Honest"))
    assert runs_isolated(AdapterConfig(name="sqlite_fts", isolation="process"))
    assert not runs_isolated(AdapterConfig(name=f"{MOD}:Honest", isolation="none"))
