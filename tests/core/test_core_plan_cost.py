"""``lens plan CONFIG``: the estimate of a run's calls, tokens and cost per role and arm, checked
against what a shipped config then spends (scripted policy), and shown beside the spend in the
run's report; the judge's batch price and sequential stopping's share."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lens.data.config import RunConfig
from lens.data.dataset_load import load_dataset
from lens.flow.plan_cost import BATCH_RATE, plan_cost

ROOT = Path(__file__).resolve().parents[2]


def lens(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)


def test_the_estimate_is_within_a_quarter_of_the_spend_on_a_shipped_config(
        tmp_path: Path) -> None:
    planned = lens("plan", "configs/compare.yaml", "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert [a["arm"] for a in plan["arms"]] == ["sqlite_fts", "recency", "null"]
    shown = lens("plan", "configs/compare.yaml")
    assert "agent · sqlite_fts" in shown.stdout and "worst case (the budget)" in shown.stdout
    mixed = lens("plan", "configs/compare.yaml", "--delta", "0.1")
    assert mixed.returncode == 2 and "takes no --baseline, --delta or --from" in mixed.stderr
    done = lens("run", "configs/compare.yaml", "--out", str(tmp_path), "--quiet",
                "--fail-on", "never")
    assert done.returncode == 0, done.stderr
    (run,) = tmp_path.iterdir()
    rows = json.loads((run / "summary.json").read_text())["estimate"]
    assert {r["arm"] for r in rows} == {"sqlite_fts", "recency", "null"}
    for row in rows:
        assert 0.75 <= row["est_tokens"] / row["tokens"] <= 1.25, row
        assert 0.75 <= row["est_calls"] / row["calls"] <= 1.25, row
    estimated = {a["arm"]: a["agent"]["prompt_tokens"] for a in plan["arms"]}
    stored = json.loads((run / "manifest.json").read_text())["cost_estimate"]
    assert {a["arm"]: a["agent"]["prompt_tokens"] for a in stored["arms"]} == estimated
    assert "estimate / actual" in (run / "report.md").read_text()


def test_judge_at_batch_price_and_stopping_share() -> None:
    data = yaml.safe_load((ROOT / "configs/compare.yaml").read_text())
    data["dataset"]["path"] = str(ROOT / "datasets/standard.json")
    data["agent"]["price_input_per_mtok"] = 0.15
    data["agent"]["price_output_per_mtok"] = 0.6
    data["judge"] = {"model": "openai/gpt-4o-mini", "price_input_per_mtok": 0.15,
                     "price_output_per_mtok": 0.6}
    data["stopping"] = {"metric": "fact_recall"}
    config = RunConfig.model_validate(data)
    plan = plan_cost(config, load_dataset(ROOT / "datasets/standard.json"))
    for arm in plan.arms:
        assert arm.agent.cost_usd is not None and arm.agent.cost_usd > 0
        assert arm.judge is not None and arm.judge_batch is not None
        assert arm.judge.calls >= 2 * arm.questions
        assert arm.judge.cost_usd is not None
        assert arm.judge_batch.cost_usd == pytest.approx(arm.judge.cost_usd * BATCH_RATE)
        assert arm.agent_worst.tokens >= arm.agent.tokens
    # Six scopes and three pairs: the default sequence cannot settle before the 13th block, so
    # stopping saves nothing here, and the plan says so in as many words.
    assert plan.blocks == 6
    assert plan.stop_best_share == 1.0 and plan.stop_expected_share == 1.0
    assert any(n.startswith("sequential stopping cannot save anything on 6 scope blocks: the "
                            "betting sequence settles a pair at the earliest after 13 blocks")
               for n in plan.notes), plan.notes
    # And how many scopes a better/worse verdict needs at all.
    assert any(n.startswith("verdicts: a better/worse verdict at α=0.05 over 3 pair(s) needs "
                            "at least 13 at |Δ| 0.5, 30 at |Δ| 0.2, 57 at |Δ| 0.1")
               for n in plan.notes), plan.notes


def test_stopping_on_many_scopes_says_what_it_may_save() -> None:
    data = yaml.safe_load((ROOT / "configs/compare.yaml").read_text())
    data["adapters"] = data["adapters"][:2]
    data["stopping"] = {"metric": "fact_recall"}
    config = RunConfig.model_validate(data)
    standard = load_dataset(ROOT / "datasets/standard.json")
    # 42 scope blocks: standard.json's six, seven times over (only their number matters here).
    dataset = standard.model_copy(update={"scopes": [*standard.scopes, *(
        scope.model_copy(update={"scope_id": f"{scope.scope_id}_c{k}"})
        for k in range(6) for scope in standard.scopes)]})
    plan = plan_cost(config, dataset)
    assert plan.blocks == 42
    assert plan.stop_best_share == pytest.approx(10 / 42)
    note = next(n for n in plan.notes if n.startswith("sequential stopping: expected "))
    assert "at best 24% (after 10 blocks)" in note

