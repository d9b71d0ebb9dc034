"""The beam and memoryagentbench protocols through the real CLI: datasets imported with `lens
datasets import`, stored runs re-scored with `lens score --protocol`, the report's protocol
section, and `lens compare` keeping the protocols apart."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.protocols.builders import stored_run
from tests.protocols.test_protocols_beam import FAITHFUL as BEAM_FAITHFUL
from tests.protocols.test_protocols_memoryagentbench import FAITHFUL as MAB_FAITHFUL

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "datasets" / "fixtures"


def _lens(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=env)


def test_beam_import_score_with_a_scripted_judge_and_report(tmp_path: Path) -> None:
    ds = tmp_path / "beam.json"
    r = _lens(tmp_path, "datasets", "import", "--format", "beam",
              str(FIX / "beam" / "chats" / "100K" / "1"), "--out", str(ds))
    assert r.returncode == 0, r.stderr
    run = stored_run(tmp_path, ds, {"faithful": BEAM_FAITHFUL})
    # A judge that grades every rubric item 1 and calls every (line, item) pair the same event:
    # each line then takes the first unmatched item, so the three lines come out in the
    # reference order (tau 1) and every ability scores 1.
    (tmp_path / "judge.json").write_text(json.dumps([{"text": '{"score": 1.0} yes'}]))
    r = _lens(tmp_path, "score", str(run), "--tier", "2", "--protocol", "beam", "--judge",
              "scripted/judge.json")
    assert r.returncode == 0, r.stderr
    scores = json.loads((run / "scores.json").read_text())
    assert scores["aggregates"]["adapter"]["faithful"]["beam_score"] == 1.0
    assert scores["settings"]["protocol"]["name"] == "beam"
    assert "faithful|event_ordering" in r.stdout
    r = _lens(tmp_path, "report", str(run))
    assert r.returncode == 0, r.stderr
    assert "BEAM protocol (version 1)" in (run / "report.md").read_text()


def test_mab_scored_without_a_judge_keeps_judged_accuracy_unknown_and_compare_refuses(
        tmp_path: Path) -> None:
    ds = tmp_path / "mab.json"
    r = _lens(tmp_path, "datasets", "import", "--format", "memoryagentbench",
              str(FIX / "memoryagentbench_small.jsonl"), "--out", str(ds))
    assert r.returncode == 0, r.stderr
    run_a = stored_run(tmp_path, ds, {"faithful": MAB_FAITHFUL}, name="a")
    run_b = tmp_path / "b"
    shutil.copytree(run_a, run_b)
    manifest = json.loads((run_b / "manifest.json").read_text())
    manifest["run_id"] = "run2"
    (run_b / "manifest.json").write_text(json.dumps(manifest))
    r = _lens(tmp_path, "score", str(run_a), "--tier", "1", "--protocol", "memoryagentbench")
    assert r.returncode == 0, r.stderr
    scores = json.loads((run_a / "scores.json").read_text())
    table = scores["aggregates"]["adapter/sub-dataset"]
    assert table["faithful|factconsolidation_sh_6k"]["mab_accuracy"] == 1.0
    assert table["faithful|longmemeval_s*"]["mab_accuracy"] is None
    assert any("no judge" in n for n in scores["notes"])
    assert _lens(tmp_path, "score", str(run_b), "--tier", "1").returncode == 0
    c = _lens(tmp_path, "compare", str(run_a), str(run_b))
    assert c.returncode == 2 and "memoryagentbench" in c.stderr, c.stdout + c.stderr
