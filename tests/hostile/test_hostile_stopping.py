"""Stopping with careless labels and flags through ``lens run``: arm labels holding "|" keep
every pair of arms apart (six pairs of four arms, each with its own verdict), and
``--continue-past-stop`` on a run that never stopped changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lens.commands.cli import main
from tests.support.cli import Lens, cli_runner

SCOPES = 12
DOMAINS = ",".join(["ops", "clinical", "finance", "support"] * (SCOPES // 4))


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("stopping") / "scopes.json"
    assert main(["datasets", "generate", "--domain", DOMAINS, "--seed", "3", "--episodes", "16",
                 "--style", "short", "--plan", "compact", "--out", str(path)]) == 0
    # Twelve blocks of one question each (the one null_hypothesis question of each scope, its
    # episodes up to its checkpoint) keep the run to seconds: stopping looks at blocks, not at
    # how many questions each holds.
    data = json.loads(path.read_text(encoding="utf-8"))
    kept = {q["scope_id"]: q for q in data["questions"]
            if q["question_type"] == "null_hypothesis"}
    assert len(kept) == SCOPES
    data["questions"] = list(kept.values())
    for scope in data["scopes"]:
        scope["episodes"] = scope["episodes"][:kept[scope["scope_id"]]["checkpoint_after"]]
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _config(tmp_path: Path, dataset: Path, adapters: list[dict[str, str]],
            stopping: dict[str, object] | None) -> Path:
    cfg = {"name": "stop", "dataset": {"path": str(dataset)}, "adapters": adapters,
           "agent": {"model": "scripted/policy"}, "concurrency": {"units": 2, "questions": 8},
           "scoring": {"fact_grader": "matcher"}, "out_dir": str(tmp_path / "runs"),
           "stopping": stopping}
    path = tmp_path / "stop.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in cfg.items() if v is not None}))
    return path


def _events(run: Path, kind: str) -> list[dict[str, object]]:
    lines = (run / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["kind"] == kind]


# -- 5. labels with "|" never merge two pairs ---------------------------------------------------

def test_labels_with_a_bar_keep_every_pair_apart(lens: Lens, tmp_path: Path,
                                                 dataset: Path) -> None:
    arms = [{"name": "sqlite_fts", "label": "a|b"}, {"name": "null", "label": "c"},
            {"name": "null", "label": "a"}, {"name": "sqlite_fts", "label": "b|c"}]
    config = _config(tmp_path, dataset, arms, {"margin": 0.5, "alpha": 0.2})
    done = lens("run", str(config), "--quiet", "--fail-on", "never")
    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "runs").iterdir()
    (stop,) = _events(run, "run_stopped")
    pairs = {(p["arm_a"], p["arm_b"]): p["verdict"] for p in stop["pairs"]}  # type: ignore[union-attr]
    labels = [a["label"] for a in arms]
    assert set(pairs) == {(labels[i], labels[j]) for i in range(4) for j in range(i + 1, 4)}
    # A clear loss and a clear win, once pooled under the key "a|b|c", each keep their own.
    assert pairs[("a|b", "c")] == "worse" and pairs[("a", "b|c")] == "better"


# -- 9. --continue-past-stop on a run that never stopped; 15. a removed section is named -------

def test_a_run_that_never_stopped_refuses_continue_past_stop(lens: Lens, tmp_path: Path,
                                                             dataset: Path) -> None:
    tie = [{"name": "null"}, {"name": "null", "label": "null_again"}]
    config = _config(tmp_path, dataset, tie, {})
    done = lens("run", str(config), "--quiet", "--fail-on", "never")
    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "runs").iterdir()
    assert not _events(run, "run_stopped")
    events = (run / "events.jsonl").read_bytes()
    manifest = (run / "manifest.json").read_bytes()
    again = lens("run", str(config), "--quiet", "--resume", str(run), "--continue-past-stop")
    assert again.returncode == 2, again.stdout + again.stderr
    assert "did not stop" in again.stderr and "Traceback" not in again.stderr
    assert (run / "events.jsonl").read_bytes() == events
    assert (run / "manifest.json").read_bytes() == manifest
    # The same run resumed with its stopping section removed: the field is named.
    removed = _config(tmp_path, dataset, tie, None)
    refused = lens("run", str(removed), "--quiet", "--resume", str(run))
    assert refused.returncode == 2
    assert "fields: stopping" in refused.stderr, refused.stderr
