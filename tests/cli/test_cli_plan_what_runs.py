"""``lens plan CONFIG`` prices what ``lens run CONFIG`` would run: the same checks (a config run
refuses has no price), the same ``--limit``, ``--arms`` and ``--set``, the judge in the worst
case, and where each price comes from or why there is none. Through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from lens.models import pricing
from tests.core.helpers import make_dataset, write_json
from tests.support.cli import Lens, cli_runner


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _config(tmp_path: Path, **extra: Any) -> Path:
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=6, checkpoints=(3, 6),
                                                       questions_per_checkpoint=4,
                                                       scope_ids=("s1", "s2")))
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "plan", "dataset": {"path": str(ds)},
        "adapters": [{"name": "sqlite_fts"}, {"name": "null"}],
        "agent": {"model": "openai/gpt-4o-mini"}, "out_dir": str(tmp_path / "runs"), **extra,
    }), encoding="utf-8")
    return cfg


def test_plan_prices_the_run_the_same_flags_make(lens: Lens, tmp_path: Path) -> None:
    cfg = _config(tmp_path, judge={"model": "openai/gpt-4o-mini"})
    whole = json.loads(lens("plan", str(cfg), "--json").stdout)
    assert [a["arm"] for a in whole["arms"]] == ["sqlite_fts", "null"]
    assert whole["arms"][0]["questions"] == 16
    done = lens("plan", str(cfg), "--json", "--limit", "5", "--arms", "sqlite_fts",
                "--set", "agent.budget.max_turns=3")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    (arm,) = plan["arms"]
    assert arm["arm"] == "sqlite_fts" and arm["questions"] == 5
    assert arm["agent_worst"]["calls"] == 5 * 3
    # The worst case carries the judge: it judges every answer whatever the agent spent.
    shown = lens("plan", str(cfg), "--limit", "5")
    worst = next(line for line in shown.stdout.splitlines() if "worst case" in line)
    assert "judge at list price" in worst
    judge_calls = sum(a["judge"]["calls"] for a in json.loads(
        lens("plan", str(cfg), "--json", "--limit", "5").stdout)["arms"])
    agent_worst = sum(a["agent_worst"]["calls"] for a in json.loads(
        lens("plan", str(cfg), "--json", "--limit", "5").stdout)["arms"])
    assert f"{agent_worst + judge_calls:,.0f}" in worst.split()
    # Without a CONFIG the run's flags mean nothing.
    alone = lens("plan", "--baseline", "0.8", "--delta", "0.1", "--limit", "5")
    assert alone.returncode == 2 and "give the CONFIG" in alone.stderr


def test_a_config_run_refuses_has_no_price(lens: Lens, tmp_path: Path) -> None:
    cfg = _config(tmp_path, stopping={"metric": "answer_quality"})
    planned = lens("plan", str(cfg))
    ran = lens("run", str(cfg), "--quiet")
    assert planned.returncode == ran.returncode == 2
    assert "stopping.metric" in planned.stderr
    assert planned.stderr == ran.stderr
    bad_set = lens("plan", str(cfg), "--set", "agent.budget.max_turns=none")
    assert bad_set.returncode == 2 and "max_turns" in bad_set.stderr


def test_the_price_says_where_it_comes_from(lens: Lens, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # Without the litellm extra's table: lens's own dated table prices the common models.
    monkeypatch.setattr(pricing, "_litellm_price_table", lambda: {})
    cfg = _config(tmp_path)
    shown = lens("plan", str(cfg))
    assert shown.returncode == 0, shown.stderr
    assert "prices from lens's price table of 2025-06-01" in shown.stdout
    assert "unknown" not in shown.stdout.split("memory systems'")[0]
    other = _config(tmp_path, agent={"model": "openai/gpt-nonesuch"})
    unpriced = lens("plan", str(other))
    assert "no price for the agent" in unpriced.stdout
    assert "not in lens's price table (2025-06-01)" in unpriced.stdout
    assert "litellm's price table (the litellm extra" in unpriced.stdout
    served = _config(tmp_path, agent={"model": "openai/gpt-4o-mini",
                                      "base_url": "http://127.0.0.1:9/v1"})
    assert "not OpenAI's endpoint" in lens("plan", str(served)).stdout
