"""The state that answered, fixed, through ``lens run``: a listing memory's digest before and
after each checkpoint's questions goes into the events, the records and the bundle; a memory that
writes while it is questioned fails the checklist row and the run (exit 1), in the terminal, the
checklist and the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lens.runner.memory_states import checkpoint_states, load_listings
from lens.runs.store import RunStore
from tests.core.helpers import make_dataset, write_json
from tests.support.cli import Lens, cli_runner

LEARNS = "tests.memory_state.listing_adapters:LearnsFromQuestions"


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _config(tmp_path: Path, adapters: list[dict[str, Any]]) -> Path:
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=6, checkpoints=(3, 6)))
    cfg = tmp_path / "run.yaml"
    cfg.write_text(json.dumps({
        "name": "state", "dataset": {"path": str(ds)}, "adapters": adapters,
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs")}))
    return cfg


def _checklist(run_dir: Path) -> dict[str, dict[str, Any]]:
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    return {c["id"]: c for c in summary["checklist"]}


def test_a_memory_that_learns_from_its_questions_fails_the_run(lens: Lens,
                                                                tmp_path: Path) -> None:
    cfg = _config(tmp_path, [{"name": "sqlite_fts", "label": "fixed"},
                             {"name": LEARNS, "label": "learns"}])
    res = lens("run", str(cfg))
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAIL  memory state fixed while questioned (per arm): " in res.stderr
    row = _checklist(run_dir)["memory_state"]
    assert row["status"] == "fail" and row["failing"] == ["learns"]
    assert "learns: 2 checkpoint(s), 2 changed while questioned" in row["value"]
    assert "fixed: 2 checkpoint(s), ready" in row["value"]
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "memory state fixed while questioned" in report
    # The digests: before and after per checkpoint in the events, the before one in each record.
    states = checkpoint_states(RunStore.open(run_dir).events())
    by_arm = {(s.adapter, s.checkpoint): s for s in states}
    assert by_arm[("fixed", 3)].changed is False and by_arm[("learns", 3)].changed is True
    assert by_arm[("fixed", 3)].before != by_arm[("fixed", 6)].before
    records = RunStore.open(run_dir).load_records()
    for r in records:
        assert r.memory_state == by_arm[(r.adapter, r.checkpoint)].before
    # The listing the questions were answered from, as stored: three episodes at checkpoint 3.
    listings = load_listings(run_dir)
    fixed3 = next(v for (k, c), v in listings.items() if v.adapter == "fixed" and c == 3)
    assert sorted(i.item_id for i in fixed3.listing.items) == [
        "s1_ep_004", "s1_ep_005", "s1_ep_006"]
    # The bundle carries them: each answer line names its memory state.
    out = tmp_path / "b.tar.gz"
    assert lens("export", str(run_dir), "--out", str(out)).returncode == 0
    import tarfile

    with tarfile.open(out) as tar:
        names = tar.getnames()
        answers = next(n for n in names if n.endswith("/answers.jsonl"))
        lines = [json.loads(x) for x in tar.extractfile(answers).read().splitlines()]  # type: ignore[union-attr]
    assert any(n.endswith(".jsonl") and "/run/memory/" in n for n in names)
    assert all(line["memory_state"] and line["memory_state"].startswith("items:")
               for line in lines)


def test_a_fixed_memory_passes_and_an_unlisted_one_is_unknown(lens: Lens,
                                                              tmp_path: Path) -> None:
    cfg = _config(tmp_path, [{"name": "sqlite_fts", "label": "fixed"},
                             {"name": "oracle", "label": "oracle"}])
    res = lens("run", str(cfg))
    (run_dir,) = (tmp_path / "runs").iterdir()
    row = _checklist(run_dir)["memory_state"]
    assert row["status"] == "pass", row
    assert "unknown for oracle (no memory listing)" in row["value"]
    assert "memory state fixed while questioned" not in res.stderr


def test_a_memory_still_writing_when_questions_start_fails(lens: Lens, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    import lens.runner.memory_state as memory_state

    # Its listing never settles: give up at once rather than after the real waits.
    monkeypatch.setattr(memory_state, "FIRST_WAIT_S", 0.0)
    cfg = _config(tmp_path, [{"name": "tests.memory_state.listing_adapters:NeverSettles",
                              "label": "busy", "isolation": "none"}])
    res = lens("run", str(cfg))
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert res.returncode == 1, res.stdout + res.stderr
    row = _checklist(run_dir)["memory_state"]
    assert row["status"] == "fail"
    assert "2 still changing when questions started" in row["value"]
    states = checkpoint_states(RunStore.open(run_dir).events())
    assert [s.settled for s in states] == [False, False]


def test_a_listing_that_raises_fails_the_row_and_the_questions_go_on(lens: Lens,
                                                                     tmp_path: Path) -> None:
    cfg = _config(tmp_path, [{"name": "tests.memory_state.listing_adapters:ListingRaises",
                              "label": "broken"}])
    res = lens("run", str(cfg))
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert res.returncode == 1, res.stdout + res.stderr
    row = _checklist(run_dir)["memory_state"]
    assert row["status"] == "fail"
    assert "listing failed at 2 (first: " in row["value"]
    assert "RuntimeError: the listing endpoint is down" in row["value"]
    records = RunStore.open(run_dir).load_records()
    assert records and all(r.status == "answered" and r.memory_state is None for r in records)
    assert any("list_memory" in p.name for p in (run_dir / "errors").iterdir())
