"""Latency figures say whether caches may have been warm: two arms of the same code in one run
share what it caches outside the unit, so the report's "Memory cost and latency" table flags
both, and an arm of other code is not flagged. Through ``lens run``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.core.helpers import make_dataset, write_json
from tests.support.cli import Lens, cli_runner


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def test_arms_of_the_same_code_are_flagged_warm(lens: Lens, tmp_path: Path) -> None:
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=4, checkpoints=(2, 4)))
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "warm", "dataset": {"path": str(ds)},
        "adapters": [{"name": "sqlite_fts", "label": "first"},
                     {"name": "sqlite_fts", "label": "second", "options": {"max_results": 3}},
                     {"name": "recency"}],
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs")}),
        encoding="utf-8")
    done = lens("run", str(cfg), "--quiet")
    assert done.returncode == 0, done.stderr
    run = next((tmp_path / "runs").glob("warm-*"))
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    section = next(s for s in summary["sections"] if s["id"] == "memory_cost")
    flags = {a: d["latency_warm"] for a, d in section["data"]["adapters"].items()}
    assert flags["first"] == "same code as second in this run (caches it keeps outside the " \
        "unit are shared)"
    assert flags["second"] is not None and "same code as first" in flags["second"]
    assert flags["recency"] is None
    report = (run / "report.md").read_text(encoding="utf-8")
    assert "may be warm: same code as second" in report
    assert "cold as far as lens sees" in report
