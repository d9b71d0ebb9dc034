"""The publishers' figures reproduced exactly from their real files, through the command line.
Each test skips when the publisher's file is not beside the project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.beside import require_beside
from tests.support.cli import Lens, cli_runner


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _zep() -> tuple[Path, Path]:
    root = require_beside("thirdparty", "zep-locomo", what="getzep/zep-papers' LoCoMo results")
    return root / "zep_locomo_grades.json", root / "zep_locomo_responses.json"


def _memobase(stamp: str) -> Path:
    root = require_beside("thirdparty", "memobase-locomo", "fixture", "memobase",
                          what="memodb-io/memobase's LoCoMo results")
    return root / f"memobase_eval_{stamp}_3000.json"


def test_zeps_figure_is_1157_of_1540_and_its_four_categories(lens: Lens, tmp_path: Path) -> None:
    grades, responses = _zep()
    r = lens("claims", "check", str(grades), str(responses), "--reader", "zep",
             "--published", "zep", "--limit", "40", "--out", "out")
    assert r.returncode == 0, r.stderr
    assert "75.13% (1157 of 1540)" in r.stdout
    for cat, figure, label, locomo in (("1", "74.11% (209 of 282)", "Single-Hop", "multi-hop"),
                                       ("2", "66.04% (212 of 321)", "Multi-Hop", "temporal"),
                                       ("3", "67.71% (65 of 96)", "Open Domain", "open-domain"),
                                       ("4", "79.79% (671 of 841)", "Temporal", "single-hop")):
        line = next(x for x in r.stdout.splitlines() if x.startswith(f"| {cat} |"))
        assert figure in line and f"{label} (their table)" in line and locomo in line
    # Zep's README prints 75.14 +/- .17: no count of these 1,540 answers prints as 75.14.
    assert "no whole count of 1540 answers prints as 75.14" in r.stdout
    assert "**no; within the printed ±0.17**" in r.stdout
    assert "1540 graded answers match the responses file" in r.stdout
    data = json.loads((tmp_path / "out" / "claims.json").read_text())
    assert data["reproduced"]["overall"]["correct"] == 1157
    assert data["reproduced"]["overall"]["n"] == 1540
    assert data["reproduced"]["arithmetic"] == {"runs": "stored", "category5": None}
    assert {i["sha256"] for i in data["inputs"]} and len(data["sample"]) == 40
    assert (tmp_path / "out" / "report.md").read_text().startswith("# Reproducing")
    assert "<table" in (tmp_path / "out" / "report.html").read_text()


@pytest.mark.parametrize(("stamp", "table", "overall", "cats"), [
    ("0503", "memobase-0.0.32", "70.91% (1092 of 1540)",
     {"1": "63.83%", "2": "80.37%", "3": "52.08%", "4": "71.82%"}),
    ("0710", "memobase-0.0.37", "75.78% (1167 of 1540)",
     {"1": "70.92%", "2": "85.05%", "3": "46.88%", "4": "77.17%"}),
])
def test_memobases_figures_per_version(lens: Lens, stamp: str, table: str, overall: str,
                                       cats: dict[str, str]) -> None:
    r = lens("claims", "check", str(_memobase(stamp)), "--reader", "memobase", "--published",
             table, "--limit", "30", "--no-leniency")
    assert r.returncode == 0, r.stderr
    assert overall in r.stdout
    lines = {x.split("|")[1].strip(): x for x in r.stdout.splitlines() if x.startswith("| ")}
    for cat, figure in cats.items():
        assert lines[cat].count(figure) == 2  # published and reproduced
        assert "**yes**" in lines[cat]
    assert "**yes**" in lines["overall"]
    # Category 1 is "single_hop" in memobase's code, "multi-hop" in LoCoMo's.
    assert "single_hop (their code)" in lines["1"] and "multi-hop" in lines["1"]


def test_a_version_that_does_not_reproduce_says_by_how_much(lens: Lens) -> None:
    # The v0.0.37 file against v0.0.32's published row: which items would have to change.
    r = lens("claims", "check", str(_memobase("0710")), "--reader", "memobase", "--published",
             "memobase-0.0.32", "--grader", "none", "--no-f1", "--no-leniency")
    assert r.returncode == 0, r.stderr
    assert "differs by +4.87 points; 75 answer(s) would have to flip from correct to wrong" \
        in r.stdout
    assert "Published columns no category reproduces" in r.stdout
    # Each missed column against the category memobase's code gives its label.
    assert ("Temporal: published 80.37%; category 2, which the publisher's code calls temporal, "
            "differs by +4.68 points; 15 answer(s) would have to flip from correct to wrong"
            in r.stdout)


def test_the_mem0_tables_columns_are_not_locomos_categories(lens: Lens) -> None:
    r = lens("claims", "assign", "mem0-table1")
    assert r.returncode == 0, r.stderr
    assert ("reproduces every row: Single-Hop = category 1, Multi-Hop = category 3, Open Domain"
            " = category 4, Temporal = category 2 (not LoCoMo's own assignment)") in r.stdout
    assert r.stdout.count("reproduces every row") == 1
    assert "LoCoMo's own assignment reproduces 0 of 5 row(s)" in r.stdout


def test_assign_takes_the_category_counts_from_a_results_file(lens: Lens) -> None:
    r = lens("claims", "assign", "memobase-0.0.37", "--counts-from", str(_memobase("0710")),
             "--reader", "memobase")
    assert r.returncode == 0, r.stderr
    assert "1=282, 2=321, 3=96, 4=841" in r.stdout
    assert "Multi-Hop = category 3" in r.stdout


def test_docs_claims_first_table_is_what_the_check_prints(lens: Lens) -> None:
    """docs/claims.md's Zep table (every answer, no sample): the same rows the command prints."""
    grades, responses = _zep()
    r = lens("claims", "check", str(grades), str(responses), "--reader", "zep",
             "--published", "zep")
    assert r.returncode == 0, r.stderr
    docs = (Path(__file__).resolve().parents[2] / "docs" / "claims.md").read_text()
    table = docs.split("The first table is the one to read:", 1)[1].split("\n\n", 2)[1]
    rows = [x for x in table.splitlines() if x.startswith("| ") and "---" not in x][1:]
    assert len(rows) == 5
    printed = r.stdout.splitlines()
    for row in rows:
        assert row in printed, row
