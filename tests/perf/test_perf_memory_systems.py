"""bench/memory_systems.py through real ``lens run`` subprocesses with scripted models: the
table reads each arm's run, a memory system that calls a model (Graphiti, its extraction
answered by the scripted model behind lens's gateway) shows its memory-model calls, an arm that
fails shows as failed with the reason (never as a score of 0), an unknown arm as not measured,
and a second call reads the finished runs again instead of re-running them."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest
import yaml

from bench import memory_systems
from tests.adapters.graphiti_script import RULES
from tests.core.helpers import make_dataset, write_json
from tests.support.extras import missing_reason


def _rows(out: str) -> dict[str, list[str]]:
    lines = [ln for ln in out.splitlines() if ln.startswith("| ") and "---" not in ln]
    rows = [[c.strip() for c in ln.strip("|").split(" | ")] for ln in lines[1:]]
    return {r[0]: r for r in rows}


def test_the_table_of_arms_through_lens_run(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=4, checkpoints=(2, 4),
                                                       questions_per_checkpoint=2))
    fixture = tmp_path / "graphiti.yaml"
    fixture.write_text(yaml.safe_dump({"rules": RULES, "default": "{}"}),
                       encoding="utf-8")
    graphiti = missing_reason("graphiti") is None
    arms = ["null", "sqlite_fts", "oracle", "no_such_memory"] + (["graphiti"] if graphiti else [])
    work = tmp_path / "work"
    argv = ["--arms", ",".join(arms), "--dataset", str(ds), "--questions", "2",
            "--work", str(work), "--agent-model", "scripted/policy",
            "--memory-model", f"scripted/{fixture}", "--json", str(tmp_path / "t.json")]
    assert memory_systems.main(argv) == 0
    rows = _rows(capsys.readouterr().out)
    assert list(rows) == arms
    header = memory_systems.HEADER
    col = {h: i for i, h in enumerate(header)}
    # The slice: the first two questions (checkpoint 2), so two episodes ingested.
    assert rows["sqlite_fts"][col["answered"]] == "2/2"
    assert "(2 ep)" in rows["sqlite_fts"][col["ingest s/episode"]]
    assert rows["null"][col["context per question, chars / tokens (median)"]] == "0 / 0"
    # Placed between the floor and the ceiling of the same table.
    assert rows["null"][col["composite, null = 0, oracle = 1"]] == "0.00"
    assert rows["oracle"][col["composite, null = 0, oracle = 1"]] == "1.00"
    assert rows["sqlite_fts"][col["memory model calls / tokens per episode"]] == "none"
    assert rows["no_such_memory"][1] == "not measured"
    assert "lens adapters list" in rows["no_such_memory"][col["failure"]]
    if graphiti:
        calls = rows["graphiti"][col["memory model calls / tokens per episode"]]
        assert float(calls.split(" / ")[0]) >= 2  # entities and facts, per episode at least
    # Run again: the finished arms are read, not run (nothing new in their run folders).
    before = sorted(p.name for p in (work / "sqlite_fts" / "runs").iterdir())
    assert memory_systems.main(argv) == 0
    again = capsys.readouterr().out
    assert "finished before" in again and _rows(again) == rows
    assert sorted(p.name for p in (work / "sqlite_fts" / "runs").iterdir()) == before
    # --no-run tabulates what is there: an arm never run shows as not measured, with why.
    assert memory_systems.main([*argv, "--no-run", "--arms",
                                "null,oracle,sqlite_fts,full_context"]) == 0
    tab = _rows(capsys.readouterr().out)
    assert tab["sqlite_fts"] == rows["sqlite_fts"]
    assert tab["full_context"][1] == "not measured"
    assert "not started" in tab["full_context"][col["failure"]]
    assert not (work / "full_context" / "runs").exists()
    # Another slice in the same folder is refused, not mixed in.
    assert memory_systems.main([*argv[:4], "--questions", "3", *argv[6:]]) == 2


def test_a_failed_arm_shows_failed_with_its_reason(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    reason = missing_reason("graphiti")
    if reason:
        pytest.skip(reason)
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=2, checkpoints=(2,),
                                                       questions_per_checkpoint=1))
    # Every Graphiti step gets "{}": its extraction never validates and the unit fails.
    fixture = tmp_path / "empty.yaml"
    fixture.write_text(yaml.safe_dump({"rules": [], "default": "{}"}), encoding="utf-8")
    argv = ["--arms", "graphiti", "--dataset", str(ds), "--work", str(tmp_path / "w"),
            "--agent-model", "scripted/policy", "--memory-model", f"scripted/{fixture}"]
    assert memory_systems.main(argv) == 0
    row = _rows(capsys.readouterr().out)["graphiti"]
    col = {h: i for i, h in enumerate(memory_systems.HEADER)}
    assert row[col["composite [95% CI]"]] == "failed"
    assert row[col["fact recall [95% CI]"]] == "failed"
    assert row[col["failure"]].startswith("failed: unit failed:")


def test_an_arm_measured_by_another_process_is_left_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=2, checkpoints=(2,),
                                                       questions_per_checkpoint=1))
    (tmp_path / "w" / "null").mkdir(parents=True)
    with (tmp_path / "w" / "null" / ".lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert memory_systems.main(["--arms", "null", "--dataset", str(ds), "--work",
                                    str(tmp_path / "w"), "--agent-model", "scripted/policy"]) == 0
    row = _rows(capsys.readouterr().out)["null"]
    assert row[1] == "not measured" and "another process" in row[-1]
    assert not (tmp_path / "w" / "null" / "runs").exists()


def test_an_arm_whose_extra_is_missing_is_not_measured_with_the_install_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_systems, "_installed", lambda module: module != "kuzu")
    with pytest.raises(memory_systems.NotMeasurable, match=r"missing kuzu.*\[graphiti\]"):
        memory_systems.arm_config("graphiti", "scripted/policy")
    # A memory system's model is the one asked for, through lens's gateway (mem0: its stack).
    assert memory_systems.arm_config("langmem", "m/x")["options"]["model"] == "m/x"
    assert memory_systems.arm_config("mem0", "m/x")["options"]["llm"]["model"] == "m/x"
    assert memory_systems.arm_config("null", "m/x") == {"name": "null"}
    # A variant is the same system with other settings, labelled as its own arm.
    monkeypatch.setattr(memory_systems, "_installed", lambda module: True)
    variant = memory_systems.arm_config("letta_archival", "m/x")
    assert variant["name"] == "letta" and variant["label"] == "letta_archival"
    assert variant["options"]["ingest"] == "archival" and variant["options"]["model"] == "m/x"
    assert memory_systems._calls_a_model("letta_archival")


def test_a_resumed_run_counts_its_passes_not_the_pause_between() -> None:
    events = [{"ts": "2026-01-01T00:00:00+00:00", "kind": "run_started"},
              {"ts": "2026-01-01T00:00:10+00:00", "kind": "ingest_segment"},
              {"ts": "2026-01-01T01:00:00+00:00", "kind": "run_started"},
              {"ts": "2026-01-01T01:00:05+00:00", "kind": "run_finished"}]
    assert memory_systems._wall(events) == 15.0
    assert memory_systems._wall([]) is None


def test_a_memory_system_that_reports_no_model_usage_is_not_metered_not_free() -> None:
    summary = {"adapters": {a: {"answered": 1, "questions": 1, "metrics": {}}
                            for a in ("mem0", "sqlite_fts")}}
    col = memory_systems.HEADER.index("memory model calls / tokens per episode")
    mem0 = memory_systems.ArmResult("mem0", "measured", summary=summary)
    fts = memory_systems.ArmResult("sqlite_fts", "measured", summary=summary)
    assert memory_systems.row(mem0)[col] == "not metered"
    assert memory_systems.row(fts)[col] == "none"
