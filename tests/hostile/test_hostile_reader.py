"""The fixed reader with a memory that dates some results with naive times (no offset) beside
results dated from their episodes: naive times are UTC, every question is answered, and the
dates are shown in the reader's prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli.runs import write_config
from tests.support.cli import Lens, cli_runner


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


# -- 7. a naive timestamp beside aware ones ---------------------------------------------------

def test_naive_result_times_are_utc_and_every_question_is_answered(lens: Lens,
                                                                   tmp_path: Path) -> None:
    (tmp_path / "replies.yaml").write_text(yaml.safe_dump(
        {"rules": [{"contains": "History Chats", "text": "an answer"}], "default": "none"}))
    cfg = write_config(tmp_path, "naive",
                       ["tests.hostile.hostile_adapters:NaiveTimestampAdapter"],
                       scoring={"enabled": False}, report=False)
    data = yaml.safe_load(cfg.read_text())
    data["agent"] = {"model": "scripted/replies.yaml", "mode": "fixed_reader", "top_k": 3}
    cfg.write_text(json.dumps(data))
    r = lens("run", str(cfg), "--quiet", "--limit", "4", "--fail-on", "never")
    assert r.returncode == 0, r.stdout + r.stderr
    (run,) = (tmp_path / "runs").iterdir()
    records = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    assert records and all(rec["status"] == "answered" for rec in records), records[0]
    prompts = [rec["transcript"][0]["content"] for rec in records]
    assert any("2024/01/01 (Mon) 09:30" in p for p in prompts)
