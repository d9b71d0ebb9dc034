"""LongMemEval-V2's leaderboard submission from a scored lens run (`lens leaderboard
longmemeval-v2`): the run folders the leaderboard's step 1 takes, checked by the leaderboard's own
``submission_utils`` when a copy of the official repository is beside the project; the scoring
notes and the folders say whether the run used the leaderboard's reader."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lens.runs.store import RunStore
from tests.protocols.builders import PolicyJudge
from tests.protocols.test_protocols_longmemeval_v2 import FAITHFUL, MIXED, _run, judge_policy
from tests.support.beside import require_beside

ROOT = Path(__file__).resolve().parents[2]


def _lens(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=env)


def _scored_run(tmp_path: Path, agent: dict[str, Any]) -> Path:
    from lens.scoring.scorer import score_run_sync

    run = _run(tmp_path, {"mixed": MIXED, "faithful": FAITHFUL},
               {"mixed": 1.0, "faithful": 3.0})
    store = RunStore.open(run)
    manifest = store.manifest()
    manifest.config["agent"] = agent
    store.write_manifest(manifest)
    store.close()
    score_run_sync(run, judge=PolicyJudge("openai/gpt-5.2", judge_policy),
                   protocol="longmemeval-v2")
    return run


def test_submission_folders_by_hand_and_by_the_leaderboard_checker(tmp_path: Path) -> None:
    run = _scored_run(tmp_path, {"model": "openai/Qwen/Qwen3.5-9B", "mode": "fixed_reader",
                                 "top_k": 10})
    notes = json.loads((run / "scores.json").read_text())["notes"]
    assert any("come from the leaderboard's fixed reader" in n for n in notes)
    out = tmp_path / "sub"
    r = _lens(tmp_path, "leaderboard", "longmemeval-v2", str(run), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "faithful_enterprise_small", "faithful_web_small", "mixed_enterprise_small",
        "mixed_web_small"]
    web = out / "mixed_web_small"
    args = json.loads((web / "run_args.json").read_text())
    assert args["domain"] == "web" and args["tier"] == "small" and args["method"] == "mixed"
    assert args["leaderboard_reader"] and args["leaderboard_judge"]
    metrics = json.loads((web / "aggregated_metrics.json").read_text())
    # Web, hand-graded (see the protocol's tests): static-2 right, static-1 and proc-1 wrong,
    # gotcha-1 unknown, static-abs-1 wrong -> 1 of 5.
    assert metrics["overall"]["overall_full_set"] == pytest.approx(1 / 5)
    assert metrics["overall"]["count_all_questions"] == 5
    assert metrics["non_abstention_by_category"]["gotchas"]["pct_unknown"] == 1.0
    assert metrics["combined_abstention_by_category"]["static"]["count"] == 3
    assert metrics["memory_query"]["avg_seconds"] == pytest.approx(1.0)
    rows = [json.loads(x) for x in (web / "per_question.jsonl").read_text().splitlines()]
    assert {x["id"] for x in rows} == {q["id"] for q in json.loads(
        (web / "runtime_inputs" / "questions.json").read_text())}
    haystack = json.loads((web / "runtime_inputs" / "haystack.json").read_text())
    assert set(haystack) == {x["id"] for x in rows} and all(haystack.values())
    # Written again only with --force.
    r = _lens(tmp_path, "leaderboard", "longmemeval-v2", str(run), "--out", str(out))
    assert r.returncode == 2 and "--force" in r.stderr

    code = require_beside("thirdparty", "longmemeval-v2-code", "leaderboard",
                          what="LongMemEval-V2's official leaderboard code")
    sys.path.insert(0, str(code))
    try:
        official = importlib.import_module("submission_utils")
        for method in ("mixed", "faithful"):
            w = official.validate_run(out / f"{method}_web_small", "web", "small")
            e = official.validate_run(out / f"{method}_enterprise_small", "enterprise", "small")
            official.validate_run_pair(w, e)
            overview = official.build_metric_overview(official.combine_domain_metrics(w, e))
            if method == "faithful":
                assert overview["overall_full_set"] == 1.0
                assert overview["memory_query_avg_seconds"] == pytest.approx(3.0)
    finally:
        sys.path.remove(str(code))
        for name in ("submission_utils", "combine_aggregated_metrics"):
            sys.modules.pop(name, None)


def test_a_tool_agent_run_is_said_not_to_use_the_leaderboard_reader(tmp_path: Path) -> None:
    run = _scored_run(tmp_path, {"model": "openai/gpt-4o-mini"})
    notes = json.loads((run / "scores.json").read_text())["notes"]
    assert any("do not come from the leaderboard's fixed reader" in n and "gpt-4o-mini" in n
               for n in notes)
    # One --method for a run of two adapters: refused, nothing written.
    r = _lens(tmp_path, "leaderboard", "longmemeval-v2", str(run), "--out",
              str(tmp_path / "sub"), "--method", "my system")
    assert r.returncode == 2 and "faithful, mixed" in r.stderr
    assert not (tmp_path / "sub").exists()
    r = _lens(tmp_path, "leaderboard", "longmemeval-v2", str(run), "--out", str(tmp_path / "sub"))
    assert r.returncode == 0, r.stderr
    assert "do not come from the leaderboard's fixed reader" in r.stdout
    args = json.loads((tmp_path / "sub" / "mixed_web_small" / "run_args.json").read_text())
    assert args["leaderboard_reader"] is False and args["model"] == "openai/gpt-4o-mini"


def test_an_unscored_run_is_refused_with_the_command_to_run(tmp_path: Path) -> None:
    run = _run(tmp_path, {"faithful": FAITHFUL}, {"faithful": 1.0})
    r = _lens(tmp_path, "leaderboard", "longmemeval-v2", str(run), "--out", str(tmp_path / "s"))
    assert r.returncode == 2 and "--protocol longmemeval-v2" in r.stderr
    assert not (tmp_path / "s").exists()
