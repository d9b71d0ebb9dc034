"""``lens compare --arms`` and ``--baseline`` through the real command line, on two real runs of
several arms each: the pairs compared are the ones named, Holm's confirmatory family is exactly
those pairs, and an arm never meets itself (the same adapter in two runs is one arm unless both
are named)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lens.stats import holm
from tests.cli.runs import real_run
from tests.support.cli import Lens, cli_runner


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("arms")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LENS_CACHE_DIR", str(folder / "cache"))
        a = real_run(folder, "three", ["sqlite_fts", "null", "recency"])
        b = real_run(folder, "two", ["sqlite_fts", "full_context"])
    return a, b


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _compare(lens: Lens, runs: tuple[Path, Path], tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "cmp"
    res = lens("compare", *map(str, runs), "--out", str(out), *args)
    assert res.returncode == 0, res.stderr
    return json.loads((out / "compare.json").read_text())


def _pairs(summary: dict) -> list[tuple[str, str]]:
    return [(c["arm_a"], c["arm_b"]) for c in summary["comparisons"]]


def _ids(runs: tuple[Path, Path]) -> tuple[str, str]:
    return tuple(json.loads((r / "manifest.json").read_text())["run_id"] for r in runs)


def test_the_same_adapter_in_two_runs_is_one_arm(lens: Lens, two_runs: tuple[Path, Path],
                                                  tmp_path: Path) -> None:
    a, b = _ids(two_runs)
    summary = _compare(lens, two_runs, tmp_path)
    assert list(summary["arms"]) == [f"{a}:sqlite_fts", f"{a}:null", f"{a}:recency",
                                     f"{b}:full_context"]
    pairs = _pairs(summary)
    assert len(pairs) == 6
    assert all(x.split(":", 1)[1] != y.split(":", 1)[1] for x, y in pairs)


def test_named_arms_are_the_only_pairs_and_the_whole_family(
        lens: Lens, two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = _ids(two_runs)
    every = _compare(lens, two_runs, tmp_path)
    summary = _compare(lens, two_runs, tmp_path, "--arms", "null,full_context, recency")
    assert list(summary["arms"]) == [f"{a}:null", f"{b}:full_context", f"{a}:recency"]
    assert len(_pairs(summary)) == 3
    # Holm's confirmatory family is the three pairs compared, not the six of every arm.
    rows = [next(r for r in c["rows"] if r["family"] == "confirmatory")
            for c in summary["comparisons"]]
    assert [r["p_holm"] for r in rows] == pytest.approx(holm([r["p_value"] for r in rows]))
    by_pair = {frozenset((c["arm_a"], c["arm_b"])): c for c in every["comparisons"]}
    for c, row in zip(summary["comparisons"], rows, strict=True):
        wide = next(r for r in by_pair[frozenset((c["arm_a"], c["arm_b"]))]["rows"]
                    if r["family"] == "confirmatory")
        assert row["p_value"] == wide["p_value"] and row["p_holm"] <= wide["p_holm"]


def test_baseline_against_each_other_arm(lens: Lens, two_runs: tuple[Path, Path],
                                         tmp_path: Path) -> None:
    a, b = _ids(two_runs)
    summary = _compare(lens, two_runs, tmp_path, "--baseline", "null")
    assert _pairs(summary) == [(f"{a}:null", f"{a}:sqlite_fts"), (f"{a}:null", f"{a}:recency"),
                               (f"{a}:null", f"{b}:full_context")]
    md = (tmp_path / "cmp" / "compare.md").read_text()
    assert f"{a}:null (the baseline) against each other arm" in md
    narrowed = _compare(lens, two_runs, tmp_path, "--arms", "sqlite_fts,recency,null",
                        "--baseline", "null")
    assert _pairs(narrowed) == [(f"{a}:null", f"{a}:sqlite_fts"), (f"{a}:null", f"{a}:recency")]


def test_an_arm_meets_itself_across_runs_only_when_both_are_named(
        lens: Lens, two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = _ids(two_runs)
    summary = _compare(lens, two_runs, tmp_path, "--arms",
                       f"{a}:sqlite_fts,{two_runs[1].name}:sqlite_fts")
    assert _pairs(summary) == [(f"{a}:sqlite_fts", f"{b}:sqlite_fts")]


def test_unknown_and_doubled_names_are_all_reported(lens: Lens, two_runs: tuple[Path, Path],
                                                    tmp_path: Path) -> None:
    res = lens("compare", *map(str, two_runs), "--arms", "sqlite_ft,null,null",
               "--baseline", "oracle", "--out", str(tmp_path / "never"))
    assert res.returncode == 2
    assert "--arms 'sqlite_ft': no such arm" in res.stderr
    assert "--arms 'null': names" in res.stderr and "named already" in res.stderr
    assert "--baseline 'oracle': no such arm" in res.stderr
    assert not (tmp_path / "never").exists()
    one = lens("compare", *map(str, two_runs), "--arms", "null")
    assert one.returncode == 2 and "fewer than two different arms" in one.stderr
    assert re.search(r"^lens: error: ", one.stderr)
