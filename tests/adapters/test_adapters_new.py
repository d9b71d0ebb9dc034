"""``lens adapters new NAME`` through the real command line: the package it writes passes the
conformance suite (``lens adapters check``, and its own pytest file) and runs beside sqlite_fts;
bad names and existing folders are refused with exit 2, every problem at once."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from lens.core.distribution import DISTRIBUTION
from tests.support.cli import Lens, cli_runner


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def test_new_package_checks_and_runs(lens: Lens, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    made = lens("adapters", "new", "tide_memory")
    assert made.returncode == 0, made.stderr
    pkg = tmp_path / "lens-tide-memory"
    assert sorted(p.name for p in pkg.iterdir()) == [
        "README.md", "first-run.yaml", "pyproject.toml", "test_tide_memory.py",
        "tide_memory.py"]
    project = tomllib.loads((pkg / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == [DISTRIBUTION]
    assert project["entry-points"]["lens.adapters"] == {"tide_memory": "tide_memory:TideMemory"}
    monkeypatch.syspath_prepend(str(pkg))
    check = lens("adapters", "check", "tide_memory:TideMemory")
    assert check.returncode == 0, check.stdout
    assert "PASS  declared_filters_work" in check.stdout
    assert "0 failed" in check.stdout
    own = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "no:xdist", "test_tide_memory.py"], cwd=pkg,
                         capture_output=True, text=True, timeout=600)
    assert own.returncode == 0, own.stdout + own.stderr
    # The first run as its README says, the adapter named as module:Class (not installed).
    monkeypatch.chdir(pkg)
    assert lens("datasets", "generate", "--domain", "ops", "--seed", "1", "--episodes", "20",
                "--plan", "compact", "--out", "dataset.json").returncode == 0
    config = (pkg / "first-run.yaml").read_text().replace("- name: tide_memory",
                                                          "- name: tide_memory:TideMemory")
    (pkg / "first-run.yaml").write_text(config)
    ran = lens("run", "first-run.yaml", "--quiet", "--limit", "5")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    run = next((pkg / "runs").iterdir())
    records = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines() if x]
    ours = [r for r in records if r["adapter"] == "tide_memory:TideMemory"]
    assert len(ours) == 5 and all(r["status"] == "answered" for r in ours)


def test_bad_names_and_existing_folders_are_refused(lens: Lens, tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    res = lens("adapters", "new", "Bad-Name", "--out", str(tmp_path / "taken"))
    assert res.returncode == 2
    assert "NAME 'Bad-Name': must be a Python module name" in res.stderr
    assert f"--out {tmp_path / 'taken'}: exists already" in res.stderr
    for taken in ("sqlite_fts", "json", "class"):
        assert lens("adapters", "new", taken, "--out", str(tmp_path / taken)).returncode == 2
    assert not (tmp_path / "sqlite_fts").exists()
