"""``lens run --limit``, ``--set`` and ``--arms`` through the real command line: a seeded sample
recorded in the condition (so compare refuses mixing it with a whole run), changes checked like
the file and recorded in the manifest, every bad change named in one round with exit 2 and
nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.runs import QUICKSTART, real_run, write_config
from tests.support.cli import Lens, cli_runner


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()
            if line.strip()]


def _asked(run: Path) -> set[str]:
    return {r["question_id"] for r in _records(run)}


def test_limit_is_a_seeded_sample_recorded_in_the_condition(lens: Lens, tmp_path: Path) -> None:
    whole = real_run(tmp_path / "whole", "q", ["sqlite_fts"])
    four = real_run(tmp_path / "four", "q", ["sqlite_fts"], "--limit", "4")
    again = real_run(tmp_path / "again", "q", ["sqlite_fts"], "--limit", "4")
    six = real_run(tmp_path / "six", "q", ["sqlite_fts"], "--limit", "6")
    total = len(json.loads(QUICKSTART.read_text())["questions"])
    assert len(_asked(whole)) == total > 6
    assert len(_asked(four)) == 4 and _asked(four) == _asked(again)
    assert _asked(four) < _asked(six)  # a larger sample keeps the smaller one
    manifest = json.loads((four / "manifest.json").read_text())
    assert manifest["condition"]["question_limit"] == 4
    assert manifest["overrides"] == ["--limit", "4"]
    assert manifest["dataset"]["questions_asked"] == 4
    assert "question_limit" not in json.loads((whole / "manifest.json").read_text())["condition"]
    # The report scored the sample (scoring takes the same sample again).
    assert json.loads((four / "summary.json").read_text())["adapters"]["sqlite_fts"]
    refused = lens("compare", str(whole), str(four))
    assert refused.returncode == 2 and "question_limit" in refused.stderr


def test_set_and_arms_change_the_run_and_are_recorded(tmp_path: Path) -> None:
    run = real_run(tmp_path, "o", ["sqlite_fts", "recency"], "--set",
                   "agent.budget.max_turns=4", "--set", "concurrency.questions=2",
                   "--arms", "sqlite_fts,null")
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["config"]["agent"]["budget"]["max_turns"] == 4
    assert manifest["config"]["concurrency"]["questions"] == 2
    assert [a["name"] for a in manifest["config"]["adapters"]] == ["sqlite_fts", "null"]
    assert manifest["overrides"] == ["--set", "agent.budget.max_turns=4", "--set",
                                     "concurrency.questions=2", "--arms", "sqlite_fts,null"]
    assert {r["adapter"] for r in _records(run)} == {"sqlite_fts", "null"}


def test_bad_changes_are_all_named_and_nothing_is_written(lens: Lens, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, "bad", ["sqlite_fts"])
    res = lens("run", str(cfg), "--quiet", "--set", "agent.max_turns=4", "--set",
               "agent.budget.max_turns=many", "--set", "seed=1")
    assert res.returncode == 2
    err = res.stderr
    assert "--set agent.max_turns=…: field 'agent.max_turns': unknown field" in err
    assert "--set agent.budget.max_turns=…: field 'agent.budget.max_turns'" in err
    assert "seed" not in err.replace("--set seed", "")  # a good change is no problem
    assert "(line " not in err  # the values are the command line's, not the file's
    malformed = lens("run", str(cfg), "--quiet", "--set", "noequals", "--set", "name.x=1")
    assert malformed.returncode == 2
    assert "--set noequals: give FIELD=VALUE" in malformed.stderr
    assert "--set name.x=…: name is a value" in malformed.stderr
    arms = lens("run", str(cfg), "--quiet", "--arms", "sqlite_fts,no_such_memory")
    assert arms.returncode == 2
    assert "with --arms sqlite_fts,no_such_memory" in arms.stderr
    assert "adapters.1.name" in arms.stderr
    limit = lens("run", str(cfg), "--quiet", "--limit", "0")
    assert limit.returncode == 2 and "--limit 0" in limit.stderr
    assert not (tmp_path / "runs").exists()
