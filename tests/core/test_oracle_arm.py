"""The oracle arm through `lens run`: it receives each question's required evidence up to its
checkpoint and nothing else, and no other arm's records change when it runs beside them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from lens.commands.cli import main
from lens.data.dataset import Episode, GroundTruth, Question, Scope
from lens.data.dataset_load import load_dataset
from lens.memory.oracle import OracleMemory
from lens.runs.records import QuestionRecord
from lens.runs.store import RunStore

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "datasets" / "quickstart.json"


def _run(tmp_path: Path, name: str, adapters: list[str]) -> Path:
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(json.dumps({
        "name": name, "dataset": {"path": str(QUICKSTART)},
        "adapters": [{"name": a} for a in adapters],
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / name)}))
    assert main(["run", str(cfg), "--quiet"]) == 0
    return next((tmp_path / name).iterdir())


def _records(run: Path, adapter: str) -> list[QuestionRecord]:
    return sorted((r for r in RunStore(run).load_records() if r.adapter == adapter),
                  key=lambda r: r.question_id)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("oracle")
    return {"with": _run(tmp, "with", ["null", "sqlite_fts", "oracle"]),
            "without": _run(tmp, "without", ["null", "sqlite_fts"])}


def test_the_oracle_covers_the_required_evidence(runs: dict[str, Path]) -> None:
    scores = json.loads((runs["with"] / "scores.json").read_text())
    dataset = load_dataset(QUICKSTART)
    required = {q.question_id: q.ground_truth.required_evidence_refs for q in dataset.questions}
    oracle = [q for q in scores["questions"] if q["adapter"] == "oracle"]
    assert oracle and all(required[q["question_id"]] for q in oracle)
    assert all(q["metrics"]["evidence_coverage"] == 1.0 for q in oracle)


def test_the_oracle_hands_over_only_evidence_ingested_by_the_checkpoint(
        runs: dict[str, Path]) -> None:
    dataset = load_dataset(QUICKSTART)
    questions = {q.question_id: q for q in dataset.questions}
    for record in _records(runs["with"], "oracle"):
        q = questions[record.question_id]
        ingested = {e.episode_id for e in
                    dataset.scope(q.scope_id).ordered_episodes()[:record.episodes_ingested]}
        evidence = {r.split("#")[0] for r in q.ground_truth.required_evidence_refs}
        assert record.retrieved_refs and set(record.retrieved_refs) <= evidence & ingested


def test_other_arms_get_nothing_of_the_oracle(runs: dict[str, Path]) -> None:
    """The arms beside the oracle run exactly as they do without it."""
    for arm in ("null", "sqlite_fts"):
        with_oracle, without = _records(runs["with"], arm), _records(runs["without"], arm)
        assert [r.transcript for r in with_oracle] == [r.transcript for r in without]
        assert [r.retrieved_refs for r in with_oracle] == [r.retrieved_refs for r in without]
        assert not any("oracle" in m.content for r in with_oracle for m in r.transcript)


def test_the_oracle_arm_is_marked_and_placed(runs: dict[str, Path]) -> None:
    events = list(RunStore(runs["with"]).events())
    started = {e.get("adapter"): e for e in events if e.get("kind") == "unit_started"}
    assert started["oracle"].get("oracle") is True
    assert "oracle" not in started["sqlite_fts"] and "oracle" not in started["null"]
    summary = json.loads((runs["with"] / "summary.json").read_text())
    fc = summary["floor_ceiling"]
    assert (fc["floor_arm"], fc["ceiling_arm"]) == ("null", "oracle")
    row = next(r for r in fc["rows"] if r["metric"] == "evidence_coverage")
    value = summary["adapters"]["sqlite_fts"]["metrics"]["evidence_coverage"]["mean"]
    assert row["positions"]["sqlite_fts"] == pytest.approx(
        (value - row["floor"]) / (row["ceiling"] - row["floor"]))
    assert "## Floor and ceiling" in (runs["with"] / "report.md").read_text()
    # Without a ceiling the positions are unknown, never 0 or 1.
    fc = json.loads((runs["without"] / "summary.json").read_text())["floor_ceiling"]
    assert fc["ceiling_arm"] is None
    assert all(p is None for r in fc["rows"] for p in r["positions"].values())


def test_oracle_memory_never_reaches_past_the_checkpoint() -> None:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    episodes = [Episode(episode_id=f"e{i}", scope_id="s", timestamp=start + timedelta(days=i),
                        text=f"episode {i}") for i in range(5)]
    scope = Scope(scope_id="s", episodes=list(reversed(episodes)))
    # Built directly: the dataset loader already refuses evidence after the checkpoint.
    question = Question(question_id="q", scope_id="s", checkpoint_after=2,
                        question_type="longitudinal", prompt="what?",
                        ground_truth=GroundTruth(canonical_answer="x",
                                                 required_evidence_refs=["e1#c0", "e3"]))

    async def go() -> tuple[list[str], Any, Any, Any]:
        memory = OracleMemory.for_question(scope, question, ingested=2)
        found = [r.ref_id for r in await memory.search("anything")]
        return (found, await memory.retrieve("e3"), await memory.retrieve("e0"),
                await memory.retrieve("e1#c0"))

    found, later, not_evidence, chunk = anyio.run(go)
    assert found == ["e1"]
    assert later is None and not_evidence is None
    assert chunk is not None and chunk.text == "episode 1"


def test_compare_places_every_run_s_arms_between_floor_and_ceiling(
        runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    main(["compare", str(runs["with"]), str(runs["without"]), "--force", "--out", str(out)])
    fc = json.loads((out / "compare.json").read_text())["floor_ceiling"]
    assert fc["floor_arm"].endswith("null") and fc["ceiling_arm"].endswith("oracle")
    row = next(r for r in fc["rows"] if r["metric"] == "evidence_coverage")
    fts = [v for k, v in row["positions"].items() if k.endswith("sqlite_fts")]
    # sqlite_fts is the same arm in both runs (one condition): placed once.
    assert len(fts) == 1 and 0 < fts[0] < 1
    assert "## Floor and ceiling" in (out / "compare.md").read_text()
