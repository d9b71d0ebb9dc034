"""A checklist row names every arm at a failing level, not only those at its worst: through
``lens compare`` of three runs, one arm failing the errored-questions row, one warning it and
one passing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.report.runfactory import RunSpec, make_run
from tests.support.cli import Lens, cli_runner


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def test_row_names_the_failing_and_the_warning_arms(lens: Lens, tmp_path: Path) -> None:
    runs = [make_run(tmp_path, RunSpec(name="bad", adapters=("one",), questions_per_scope=12,
                                       error_every=7)),
            make_run(tmp_path, RunSpec(name="meh", adapters=("two",), questions_per_scope=12,
                                       error_every=30)),
            make_run(tmp_path, RunSpec(name="good", adapters=("three",),
                                       questions_per_scope=12))]
    res = lens("compare", *map(str, runs), "--out", str(tmp_path / "cmp"))
    assert res.returncode == 0, res.stderr
    row = next(line for line in res.stdout.splitlines()
               if "failed or errored questions" in line)
    assert "failed by bad-id:one; warned by meh-id:two — " in row
    assert "good-id:three: 0 of" in row and "by good-id:three" not in row
    check = next(c for c in json.loads((tmp_path / "cmp" / "compare.json").read_text())
                 ["checklist"] if c["id"] == "failures")
    assert (check["status"], check["failing"], check["warned"]) == ("fail", ["bad-id:one"],
                                                                    ["meh-id:two"])
