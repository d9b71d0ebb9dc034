"""Sequential stopping inside ``lens run`` through the real CLI, with the scripted agent on a
generated dataset of twelve scopes: a clear win (sqlite_fts against null) stops before the last
block and records why; ``--resume --continue-past-stop`` answers the rest; a tie (null against
null) runs to the end; a stopping section that cannot work is refused with every problem."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lens.view.fragments import report_fragment

ROOT = Path(__file__).resolve().parents[2]
SCOPES = 12
DOMAINS = ",".join(["ops", "clinical", "finance", "support"] * (SCOPES // 4))


def lens(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("stopping") / "scopes.json"
    done = lens("datasets", "generate", "--domain", DOMAINS, "--seed", "3", "--episodes", "16",
                "--style", "short", "--plan", "compact", "--out", str(path))
    assert done.returncode == 0, done.stderr
    return path


def _config(tmp_path: Path, dataset: Path, adapters: list[dict[str, str]],
            stopping: dict[str, object] | None) -> Path:
    cfg: dict[str, object] = {
        "name": "stop", "dataset": {"path": str(dataset)}, "adapters": adapters,
        "agent": {"model": "scripted/policy"}, "concurrency": {"units": 2, "questions": 8},
        "scoring": {"fact_grader": "matcher"}, "out_dir": str(tmp_path / "runs")}
    if stopping is not None:
        cfg["stopping"] = stopping
    path = tmp_path / "stop.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _events(run: Path, kind: str) -> list[dict[str, object]]:
    lines = (run / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["kind"] == kind]


def _run_dir(tmp_path: Path) -> Path:
    (run,) = (tmp_path / "runs").iterdir()
    return run


def _answered(run: Path) -> int:
    return len(_events(run, "question_done"))


def test_a_clear_win_stops_early_and_resumes_past_the_stop(tmp_path: Path,
                                                           dataset: Path) -> None:
    config = _config(tmp_path, dataset, [{"name": "sqlite_fts"}, {"name": "null"}], {})
    done = lens("run", str(config), "--quiet", "--fail-on", "never")
    assert done.returncode == 0, done.stderr
    run = _run_dir(tmp_path)
    total = 2 * len(json.loads(dataset.read_text())["questions"])
    (stop,) = _events(run, "run_stopped")
    assert stop["metric"] == "composite" and stop["total_blocks"] == SCOPES
    assert isinstance(stop["blocks"], int) and stop["blocks"] < SCOPES
    pairs = stop["pairs"]
    assert isinstance(pairs, list)
    (pair,) = pairs
    assert pair["verdict"] == "worse" and pair["high"] < 0  # null below sqlite_fts
    assert _events(run, "units_not_started")
    assert _answered(run) < total
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["stopped_early"] is True
    assert manifest["condition"]["stopping"]["alpha"] == 0.05
    summary = json.loads((run / "summary.json").read_text())
    assert summary["stopped"]["blocks"] == stop["blocks"]
    assert summary["stopped"]["questions_answered"] == _answered(run)
    assert "## Stopped early" in (run / "report.md").read_text()
    assert "Stopped early" in (run / "report.html").read_text()
    # lens view's run page is built from the same blocks.
    shown, page = report_fragment(str(run))
    assert shown and "Stopped early" in page

    answered = _answered(run)
    # --resume alone reads the verdict over the finished blocks again: still settled, it
    # starts nothing.
    again = lens("run", str(config), "--quiet", "--fail-on", "never", "--resume", str(run))
    assert again.returncode == 0, again.stderr
    assert _answered(run) == answered and len(_events(run, "run_stopped")) == 2
    resumed = lens("run", str(config), "--quiet", "--fail-on", "never", "--resume", str(run),
                   "--continue-past-stop")
    assert resumed.returncode == 0, resumed.stderr
    assert _answered(run) == total
    assert _events(run, "stop_overridden")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["stopped"]["continued"] is True
    assert json.loads((run / "manifest.json").read_text())["stopped_early"] is False


def test_a_tie_runs_to_the_end(tmp_path: Path, dataset: Path) -> None:
    config = _config(tmp_path, dataset,
                     [{"name": "null"}, {"name": "null", "label": "null_again"}], {})
    done = lens("run", str(config), "--quiet", "--fail-on", "never")
    assert done.returncode == 0, done.stderr
    run = _run_dir(tmp_path)
    assert not _events(run, "run_stopped")
    assert _answered(run) == 2 * len(json.loads(dataset.read_text())["questions"])
    assert json.loads((run / "summary.json").read_text())["stopped"] is None


def test_a_stopping_section_that_cannot_work_is_refused_whole(tmp_path: Path,
                                                               dataset: Path) -> None:
    config = _config(tmp_path, dataset, [{"name": "null"}],
                     {"metric": "answer_quality", "alpha": 0.05})
    done = lens("run", str(config))
    assert done.returncode == 2
    assert "stopping.metric" in done.stderr and "at least two arms" in done.stderr
    assert not (tmp_path / "runs").exists()
    bad = _config(tmp_path, dataset, [{"name": "null"}, {"name": "sqlite_fts"}],
                  {"alpha": 2})
    done = lens("run", str(bad))
    assert done.returncode == 2 and "stopping" in done.stderr and "alpha" in done.stderr
    flag = lens("run", str(bad), "--continue-past-stop")
    assert flag.returncode == 2 and "--continue-past-stop needs --resume" in flag.stderr
