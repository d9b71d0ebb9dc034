"""GoldEvidenceBench is a plugin of lens: lens never names it, the entry points pyproject.toml
declares are all it takes, scoring grades a run through the scenario hook, and reporting reads
the run without writing into it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from goldevidence.config import preset
from goldevidence.generate import generate
from goldevidence.lensrun import LensJob, write_job
from goldevidence.policy_client import SelectionPolicyClient
from lens.core import plugins
from lens.data.prompts import prompts_hash
from lens.flow.pipeline import execute
from lens.memory.adapter import MemoryAdapter, SyncMemoryAdapter, adapter_names, resolve_adapter
from lens.memory.scenarios import Scenario, scenarios
from lens.report import write_reports
from tests.conftest import ROOT, project_entry_points

REPORT_FILES = {"report.md", "report.html", "summary.json", "questions.csv"}


def test_lens_source_never_names_goldevidence() -> None:
    offenders = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "lens").rglob("*.py"))
                 if "goldevidence" in p.read_text(encoding="utf-8").lower()]
    assert offenders == []


def test_every_declared_entry_point_loads_as_its_group_expects() -> None:
    declared = project_entry_points()
    assert set(declared) == {plugins.ADAPTERS, plugins.REPORT_SECTIONS,
                             plugins.PROMPT_TEMPLATES, plugins.SCENARIOS}
    cls = resolve_adapter("goldevidence_candidates")
    assert issubclass(cls, MemoryAdapter | SyncMemoryAdapter)
    assert callable(plugins.load_target(declared[plugins.REPORT_SECTIONS]["goldevidence"]))
    templates = plugins.load_target(declared[plugins.PROMPT_TEMPLATES]["goldevidence"])
    assert "goldevidence.answer_instructions" in templates
    assert isinstance(scenarios()["goldevidence"], Scenario)


def test_without_the_declarations_lens_knows_nothing_of_goldevidence() -> None:
    declared = project_entry_points()
    installed = {ep.name for ep in entry_points(group=plugins.ADAPTERS)}
    if "goldevidence_candidates" in installed:
        pytest.skip("the installed metadata declares the plugin itself")
    with_plugin = prompts_hash()
    plugins.remove_entry_points(declared)
    try:
        assert "goldevidence_candidates" not in adapter_names()
        assert "goldevidence" not in scenarios()
        # The scenario's answer instructions are part of the condition only through the plugin.
        assert prompts_hash() != with_plugin
    finally:
        plugins.add_entry_points(declared)
    assert prompts_hash() == with_plugin


def _files(run_dir: Path) -> dict[str, int]:
    return {str(p.relative_to(run_dir)): p.stat().st_mtime_ns for p in run_dir.rglob("*")
            if p.is_file() and p.name not in REPORT_FILES}


@pytest.fixture(scope="module")
def ge_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows = generate(preset("smoke", queries=6), seed=5)
    out = tmp_path_factory.mktemp("ge")
    # The adapter by its entry-point name, and lens's own execute: no goldevidence runner.
    job = LensJob(name="plugin", cells={"c.": ({"state_mode": "kv", "seed": 5}, rows)},
                  adapters=[{"name": "goldevidence_candidates", "label": "k2",
                             "options": {"k": 2}}],
                  agent={"model": "goldevidence-policy/latest_step"}, out=out,
                  concurrency={"units": 1, "questions": 2})
    outcome = execute(write_job(job), out=out, model=SelectionPolicyClient("latest_step"))
    return outcome.run_dir


def test_scoring_runs_the_scenario_hook_and_the_report_shows_its_section(ge_run: Path) -> None:
    assert (ge_run / "scores.json").is_file()
    assert (ge_run / "goldevidence" / "grades.json").is_file()  # written at scoring time
    md = (ge_run / "report.md").read_text()
    assert "## GoldEvidence" in md and "| k2 |" in md


def test_reporting_grades_in_memory_and_writes_nothing_into_the_run(ge_run: Path,
                                                                  tmp_path: Path) -> None:
    for f in (ge_run / "goldevidence").iterdir():
        f.unlink()
    (ge_run / "goldevidence").rmdir()
    with open(ge_run / "events.jsonl", "ab") as fh:
        fh.write(b'{"kind": "torn')  # a crash mid-write: only a resume may repair it
    before = _files(ge_run)
    paths = write_reports(ge_run, out_dir=tmp_path)
    assert "## GoldEvidence" in paths.markdown.read_text()
    section = next(s for s in paths.summary_data.sections if s.id == "goldevidence")
    assert section.data["groups"][0]["adapter"] == "k2"
    assert _files(ge_run) == before
    assert not (ge_run / "goldevidence").exists()


def _lens_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``lens ARGS`` in a fresh interpreter that declares this checkout's entry points first
    (as an installed package's metadata would)."""
    code = ("import json, sys; from lens.core import plugins; from lens.commands.cli import main; "
            "plugins.add_entry_points(json.loads(sys.argv[1])); sys.exit(main(sys.argv[2:]))")
    return subprocess.run([sys.executable, "-c", code, json.dumps(project_entry_points()),
                           *args], capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_lens_score_and_report_through_the_cli(ge_run: Path) -> None:
    grades = ge_run / "goldevidence"
    shutil.rmtree(grades, ignore_errors=True)
    report = _lens_cli("report", str(ge_run))
    assert report.returncode == 0, report.stderr
    assert not grades.exists()  # the report graded in memory
    assert "## GoldEvidence" in (ge_run / "report.md").read_text()
    score = _lens_cli("score", str(ge_run))
    assert score.returncode == 0, score.stderr
    assert (grades / "grades.json").is_file() and (grades / "summary.csv").is_file()
