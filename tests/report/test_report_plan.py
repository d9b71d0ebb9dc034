"""``lens plan``: the sample-size table and the margin-of-error table, and its user errors."""

from __future__ import annotations

import json

import pytest

from lens.cli import main


def test_plan_prints_sizes_and_margins(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--baseline", "0.85", "--delta", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "0.85    0.90    0.05       686" in out
    assert "5 points (85% vs 90%): 686 per arm" in out
    assert "10 points (80% vs 90%): 199 per arm" in out
    assert "15 points (75% vs 90%): 100 per arm" in out
    assert "Margin of error" in out and "100  ±  7.0 pts" in out


def test_plan_power_changes_the_size(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--baseline", "0.85", "--delta", "0.05", "--power", "0.9",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["power"] == 0.9
    assert data["rows"][0]["per_arm"] > 686
    margins = {m["n"]: m["margin"] for m in data["margins"]}
    assert max(r["per_arm"] for r in data["rows"]) in margins
    assert margins[100] == pytest.approx(0.0700, abs=0.0005)


@pytest.mark.parametrize("args", [
    ["--baseline", "1.2", "--delta", "0.05"],
    ["--baseline", "0.85", "--delta", "0"],
    ["--baseline", "0.85", "--delta", "0.05", "--power", "1"],
    ["--baseline", "0.5", "--delta", "0.6"],
])
def test_plan_rejects_bad_input(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lens: error: --") and "Traceback" not in err
