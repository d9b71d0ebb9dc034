"""``lens plan --from RUN`` through the real command line: the baseline rate, the ICC and the
questions per scope of a finished run (a generated three-scope dataset, the scripted policy)
become the plan's inputs; and ``lens plan --help`` promises only what lens records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import Lens, cli_runner


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def test_plan_reads_baseline_and_icc_from_a_run(lens: Lens, tmp_path: Path) -> None:
    made = lens("datasets", "generate", "--domain", "ops,clinical,finance", "--seed", "3",
                "--episodes", "20", "--plan", "compact", "--out", str(tmp_path / "d.json"))
    assert made.returncode == 0, made.stderr
    (tmp_path / "c.yaml").write_text(json.dumps({
        "name": "p", "dataset": {"path": "d.json"}, "adapters": [{"name": "sqlite_fts"}],
        "agent": {"model": "scripted/policy"}, "out_dir": "runs"}))
    assert lens("run", str(tmp_path / "c.yaml"), "--quiet").returncode == 0
    run = next((tmp_path / "runs").iterdir())
    summary = json.loads((run / "summary.json").read_text())
    est = summary["adapters"]["sqlite_fts"]["metrics"]["reasoning_quality"]
    assert est["icc"] and est["icc"] > 0 and est["clusters"] == 3

    res = lens("plan", "--from", str(run), "--metric", "reasoning_quality", "--delta", "0.1",
               "--json")
    assert res.returncode == 0, res.stderr
    plan = json.loads(res.stdout)
    assert plan["icc"] == pytest.approx(est["icc"])
    assert plan["per_scope"] == round(est["n"] / 3)
    assert plan["rows"][0]["baseline"] == pytest.approx(est["mean"], abs=1e-4)
    assert f"arm sqlite_fts, reasoning_quality {est['mean']:.3f}" in res.stderr
    # What the user gives still wins.
    given = lens("plan", "--from", str(run), "--metric", "reasoning_quality", "--delta", "0.1",
                 "--icc", "0", "--json")
    assert json.loads(given.stdout)["icc"] == 0
    text = lens("plan", "--from", str(run), "--delta", "0.1")
    assert text.returncode == 0 and "composite" in text.stdout
    assert lens("plan", "--from", str(run), "--arm", "nope", "--delta", "0.1").returncode == 2


def test_plan_from_errors_and_help(lens: Lens, tmp_path: Path) -> None:
    res = lens("plan", "--from", str(tmp_path / "missing"), "--delta", "0.1")
    assert res.returncode == 2 and "not a run directory" in res.stderr
    (tmp_path / "half").mkdir()
    res = lens("plan", "--from", str(tmp_path / "half"), "--delta", "0.1")
    assert res.returncode == 2 and "lens report" in res.stderr
    res = lens("plan", "--delta", "0.1")
    assert res.returncode == 2 and "--from RUN_DIR" in res.stderr
    with pytest.raises(SystemExit):
        lens("plan", "--help")


def test_plan_help_promises_what_summary_json_records(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    from lens.commands.cli import main

    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "a report prints it" not in out
    assert "summary.json records it with each estimate ('icc')" in out
