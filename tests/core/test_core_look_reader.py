"""A sequential look scores what is new: each finished block once, and the rows a look sees are
the rows a whole scoring of the run gives those blocks. A real run (the scripted agent over
sqlite_fts and null on a generated dataset of eight scopes) is read as the stopper reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lens.core import eventloop
from lens.data.dataset_load import load_dataset
from lens.flow.look_reader import LookReader
from lens.scoring.foundations.types import RunScores
from lens.scoring.plan import make_plan
from lens.scoring.scorer import score_run_sync
from tests.support.cli import Lens, cli_runner

SCOPES = 8


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _run(lens: Lens, tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "scopes.json"
    done = lens("datasets", "generate", "--domain", ",".join(["ops", "finance"] * (SCOPES // 2)),
                "--seed", "3", "--episodes", "16", "--style", "short", "--plan", "compact",
                "--out", str(data))
    assert done.returncode == 0, done.stderr
    config = tmp_path / "run.yaml"
    config.write_text(json.dumps({
        "name": "look", "dataset": {"path": str(data)}, "out_dir": str(tmp_path / "runs"),
        "adapters": [{"name": "sqlite_fts"}, {"name": "null"}],
        "agent": {"model": "scripted/policy"}, "scoring": {"enabled": False},
        "report": False}), encoding="utf-8")
    done = lens("run", str(config), "--quiet")
    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "runs").iterdir()
    return run, data


def _metrics(scores: RunScores, blocks: set[str]) -> dict[str, dict[str, float | None]]:
    return {r.key: r.metrics for r in scores.questions if r.scope_id in blocks}


def test_a_look_scores_only_the_blocks_finished_since_the_last(lens: Lens,
                                                                tmp_path: Path) -> None:
    run, data = _run(lens, tmp_path)
    dataset = load_dataset(data)
    blocks = [s.scope_id for s in dataset.scopes]
    plan = make_plan(tiers={1}, fact_grader="matcher", target="none")
    whole = score_run_sync(run, write=False, tiers={1}, fact_grader="matcher")
    per_block = {b: sum(r.scope_id == b for r in whole.questions) for b in blocks}

    reader = LookReader(run, dataset)
    first = eventloop.run(lambda: reader.scores(blocks[:3], plan))
    assert reader.scored == sum(per_block[b] for b in blocks[:3])
    second = eventloop.run(lambda: reader.scores(blocks[:5], plan))
    # The three blocks of the first look are not scored again.
    assert reader.scored == sum(per_block[b] for b in blocks[3:5])
    eventloop.run(lambda: reader.scores(blocks[:5], plan))
    assert reader.scored == 0

    assert _metrics(first, set(blocks[:3])) == _metrics(whole, set(blocks[:3]))
    assert len(second.questions) == sum(per_block[b] for b in blocks[:5])
    assert _metrics(second, set(blocks[:5])) == _metrics(whole, set(blocks[:5]))
    # Without the dataset in hand a look loads the file: the same rows.
    from_file = LookReader(run)
    assert _metrics(eventloop.run(lambda: from_file.scores(blocks[:5], plan)),
                    set(blocks[:5])) == _metrics(whole, set(blocks[:5]))
