"""``lens plan``: the sample-size table and the margin-of-error table, and its user errors."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lens.commands.cli import main

ROOT = Path(__file__).resolve().parents[2]


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


def test_plan_with_icc_answers_in_questions_and_scopes(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    assert main(["plan", "--baseline", "0.85", "--delta", "0.05", "--icc", "0.14",
                 "--per-scope", "25", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["design_effect"] == pytest.approx(4.36)
    up = data["rows"][0]
    # 686 independent questions at a design effect of 4.36: 2,991 → 120 whole scopes of 25.
    assert (up["independent"], up["per_arm"], up["scopes"]) == (686, 3000, 120)
    ref = {round(r["delta"], 2): (r["per_arm"], r["scopes"]) for r in data["reference"]}
    assert ref[0.1] == (875, 35)
    margins = {m["n"]: m for m in data["margins"]}
    assert margins[100]["n_eff"] == pytest.approx(100 / 4.36)


def test_plan_with_icc_zero_reproduces_the_reference_table(capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    # ICC 0 with 25 per scope: the LENS table (≈680 / ≈200 / ≈90), rounded up to whole scopes.
    assert main(["plan", "--baseline", "0.85", "--delta", "0.05", "--icc", "0",
                 "--per-scope", "25", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["independent"] for r in data["reference"]] == [686, 199, 100]
    assert [r["scopes"] for r in data["reference"]] == [28, 8, 4]


def test_plan_icc_needs_the_scope_size(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--baseline", "0.85", "--delta", "0.05", "--icc", "0.1"]) == 2
    err = capsys.readouterr().err
    assert "--per-scope" in err and "Traceback" not in err
    assert main(["plan", "--baseline", "0.85", "--delta", "0.05", "--icc", "1.5",
                 "--per-scope", "25"]) == 2
    assert "--icc 1.5" in capsys.readouterr().err


def _doc_examples() -> list[tuple[list[str], str]]:
    """Every ``$ lens plan …`` block of docs/reports.md with the output it shows."""
    text = (ROOT / "docs" / "reports.md").read_text(encoding="utf-8")
    out = []
    for block in re.findall(r"```\n(\$ lens plan[^\n]*)\n(.*?)```", text, flags=re.S):
        command, shown = block
        out.append((shlex.split(command)[2:], shown))
    return out


def test_docs_plan_examples_are_what_the_cli_prints() -> None:
    examples = _doc_examples()
    assert len(examples) >= 2
    for args, shown in examples:
        # Through the real entry point, as a user runs it.
        proc = subprocess.run([sys.executable, "-m", "lens", *args], capture_output=True,
                              text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == shown, args
