"""The fixed reader's memory is counted: what its one search put in the prompt (the "History
Chats" block) is the context the report's parity table, the checklist, questions.csv and
``lens view`` read, as a tool message is for the agent. Through ``lens run`` and ``lens view``."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.core.helpers import make_dataset, write_json
from tests.support.cli import Lens, cli_runner
from tests.view.server import lens_view, require_view_extra, wait_ready


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _reader_run(lens: Lens, tmp_path: Path) -> Path:
    """A fixed-reader run of sqlite_fts and null; its folder."""
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=6, checkpoints=(3, 6)))
    replies = tmp_path / "replies.yaml"
    rules = [{"contains": "History Chats", "text": "I do not know"}]
    replies.write_text(yaml.safe_dump({"rules": rules, "default": "no history"}),
                       encoding="utf-8")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "reader", "dataset": {"path": str(ds)},
        "adapters": [{"name": "sqlite_fts"}, {"name": "null"}],
        "agent": {"model": "scripted/replies.yaml", "mode": "fixed_reader", "top_k": 2},
        "out_dir": str(tmp_path / "runs")}), encoding="utf-8")
    done = lens("run", str(cfg), "--quiet")
    assert (tmp_path / "runs").is_dir(), done.stderr
    run = next((tmp_path / "runs").glob("reader-*"))
    assert done.returncode in (0, 1), done.stderr
    return run


def test_the_fixed_readers_prompt_is_its_context(lens: Lens, tmp_path: Path) -> None:
    run = _reader_run(lens, tmp_path)
    records = [json.loads(line) for line in
               (run / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    expected: dict[tuple[str, str], int] = {}
    for rec in records:
        prompt = rec["transcript"][0]["content"]
        # Every question of the dataset has a date: the block ends at "Current Date".
        history = prompt.split("History Chats:\n\n", 1)[1].rsplit("\n\nCurrent Date: ", 1)[0]
        expected[(rec["adapter"], rec["question_id"])] = len(history)
    rows = list(csv.DictReader(io.StringIO((run / "questions.csv").read_text("utf-8"))))
    got = {(r["adapter"], r["question_id"]): int(r["context_chars"]) for r in rows}
    assert {k: v for k, v in got.items() if k[0] == "sqlite_fts"} == \
        {k: v for k, v in expected.items() if k[0] == "sqlite_fts"}
    assert all(v > 0 for k, v in got.items() if k[0] == "sqlite_fts")
    assert all(v == 0 for k, v in got.items() if k[0] == "null")  # nothing found, nothing shown
    summary: dict[str, Any] = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    checks = {c["id"]: c for c in summary["checklist"]}
    empty = next(c for c in checks.values() if c["title"].startswith("each memory handed"))
    assert empty["status"] == "pass", empty
    report = (run / "report.md").read_text(encoding="utf-8")
    parity = report.split("## Context parity", 1)[1].split("\n## ", 1)[0]
    fts_row = next(line for line in parity.splitlines() if line.startswith("| sqlite_fts"))
    median_chars = fts_row.split("|")[3].strip()
    assert int(median_chars.replace(",", "")) > 0, fts_row


def test_lens_view_shows_the_fixed_readers_context(lens: Lens, tmp_path: Path) -> None:
    require_view_extra()
    run = _reader_run(lens, tmp_path)
    report = (run / "report.md").read_text(encoding="utf-8")
    parity = report.split("## Context parity", 1)[1].split("\n## ", 1)[0]
    fts_row = next(line for line in parity.splitlines() if line.startswith("| sqlite_fts"))
    median_chars = fts_row.split("|")[3].strip().replace(",", "")
    with lens_view(run.parent) as base:
        body = wait_ready(f"{base}/runs/{run.name}")
    table = body.split('id="context-parity"', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r"<tr><td>sqlite_fts</td><td>(\d+)</td><td>([\d,]+)</td>", table)
    assert cells and int(cells[0][1].replace(",", "")) == int(median_chars) > 0, table
    assert re.search(r"badge pass\">PASS</span></td><td>each memory handed", body), \
        "the viewer's checklist does not count the reader's prompt"
