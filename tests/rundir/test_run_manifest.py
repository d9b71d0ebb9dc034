"""The run directory read through its models: the manifest (migrated from an earlier lens's
shape), the ``scoring_done`` event, and a run written by lens 0.1.0 before the manifest had a
version, re-scored through the CLI to the numbers it was scored to then."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from lens.core.errors import UserError
from lens.runs.events import ScoringDone
from lens.runs.manifest import MANIFEST_VERSION, RunManifest, dropped_questions, migrate
from lens.runs.store import MANIFEST, RunStore
from tests.support.cli import Lens, cli_runner

# Written by `lens run old.yaml --drop-invalid-questions` (beside it) with lens 0.1.0 before
# manifest_version existed: three questions of datasets/quickstart.json (dataset.json, where a
# fourth has a checkpoint out of range and was dropped).
OLD_RUN = Path(__file__).parent / "data" / "old-run-v1"


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _old_run(tmp_path: Path) -> Path:
    run = tmp_path / "old-run"
    shutil.copytree(OLD_RUN, run)
    return run


def test_an_old_run_reads_through_migrate(tmp_path: Path) -> None:
    raw = json.loads((OLD_RUN / MANIFEST).read_text(encoding="utf-8"))
    assert "manifest_version" not in raw
    manifest = RunStore.open(_old_run(tmp_path)).manifest()
    assert manifest.manifest_version == MANIFEST_VERSION
    assert manifest.status == "complete"
    assert manifest.dataset.id == "quickstart" and manifest.dataset.questions_asked == 3
    assert [d.question_id for d in manifest.dataset.dropped] == ["ops_s7_01_q04_negative"]
    assert manifest.usage is not None and manifest.cost_estimate is not None
    # Nothing but the version is added, and every key of the old file is kept as it was.
    assert manifest.as_dict() == {**raw, "manifest_version": MANIFEST_VERSION}
    assert [d.question_id for d in dropped_questions(raw)] == ["ops_s7_01_q04_negative"]


def test_migrate_fills_the_dataset_block_of_a_manifest_without_one() -> None:
    old = {"run_id": "r", "condition": {"dataset_id": "ds", "dataset_hash": "h" * 64},
           "dataset": {"dropped": ["not a question", {"question_id": 7}]}}
    new = migrate(old)
    assert new["dataset"] == {"id": "ds", "content_hash": "h" * 64,
                              "dropped": [{"question_id": "7", "reason": ""}]}
    assert old["dataset"] == {"dropped": ["not a question", {"question_id": 7}]}  # a copy


def test_keys_the_model_does_not_name_survive_a_write(tmp_path: Path) -> None:
    store = RunStore.open(_old_run(tmp_path))
    data = store.manifest_data()
    store.write_manifest({**data, "added_by_a_newer_lens": {"x": [1, 2]},
                          "dataset": {**data["dataset"], "also_new": True}})
    manifest = store.manifest()
    manifest.status = "running"
    store.write_manifest(manifest)
    again = store.manifest_data()
    assert again["added_by_a_newer_lens"] == {"x": [1, 2]}
    assert again["dataset"]["also_new"] is True and again["status"] == "running"


def test_a_manifest_that_does_not_fit_names_every_field(tmp_path: Path) -> None:
    store = RunStore.open(_old_run(tmp_path))
    store.write_manifest({**store.manifest_data(), "run_id": ["x"],
                          "dataset": {"questions_asked": "three"}})
    with pytest.raises(UserError) as err:
        store.manifest()
    message = str(err.value)
    assert str(store.root / MANIFEST) in message
    assert "field 'run_id'" in message and "field 'dataset.questions_asked'" in message


def test_recorded_settings_are_checked_once_with_every_problem(tmp_path: Path) -> None:
    manifest = RunManifest.model_validate(
        {"config": {"scoring": {"gate_threshold": "high"}, "cache": {"enabled": "sometimes"},
                    "judges": None}})
    with pytest.raises(UserError) as err:
        manifest.settings(tmp_path / MANIFEST)
    assert "config.scoring.gate_threshold" in str(err.value)
    assert "config.cache.enabled" in str(err.value)


def test_scoring_done_is_read_back_typed() -> None:
    events = [{"seq": 1, "kind": "unit_started", "key": "u"},
              {"seq": 2, "kind": "scoring_done", "key": "scores.json", "ts": "t",
               "tiers": [1], "judge": None, "new_judge_calls": 0, "reused_verdicts": 0,
               "failed_judge_calls": 0, "a_protocol_field": "kept"},
              {"seq": 3, "kind": "scoring_done", "key": "scores.json", "protocol": "locomo",
               "judge": "openai/x", "new_judge_calls": 4, "reused_verdicts": 2,
               "failed_judge_calls": 1}]
    last = ScoringDone.latest(events)
    assert last is not None and last.protocol == "locomo" and last.new_judge_calls == 4
    first = ScoringDone.latest(events[:2])
    assert first is not None and first.payload()["a_protocol_field"] == "kept"
    assert ScoringDone.latest(events[:1]) is None


def test_lens_score_rescores_an_old_run_to_the_same_numbers(tmp_path: Path, lens: Lens) -> None:
    run = _old_run(tmp_path)
    before = json.loads((run / "scores.json").read_text(encoding="utf-8"))
    result = lens("score", str(run), "--dataset", str(run / "dataset.json"),
                  "--errata", str(run / "errata.yaml"))
    assert result.returncode == 0, result.stderr
    assert "judge: none" in result.stdout
    after = json.loads((run / "scores.json").read_text(encoding="utf-8"))
    assert after["questions"] == before["questions"]
    assert after["aggregates"] == before["aggregates"]
    # The same scoring condition but for the matcher's version, which names the code that
    # scored (lens's matcher moved on since that run was scored; its scores did not).
    def without_version(cond: dict[str, Any]) -> dict[str, Any]:
        settings = dict(cond["settings"])
        settings["fact_matcher"] = {k: v for k, v in settings["fact_matcher"].items()
                                    if k != "matcher_version"}
        return {**cond, "settings": settings}

    assert without_version(after["condition"]) == without_version(before["condition"])
    store = RunStore.open(run)
    done = ScoringDone.latest(store.events())
    assert done is not None and done.tiers == [1, 2, 3] and done.new_judge_calls == 0
    assert done.errata == "errata.yaml"
    # Re-scoring migrated nothing into the file: scoring only reads the manifest.
    assert "manifest_version" not in store.manifest_data()


def test_an_erratum_naming_a_dropped_question_counts_as_excluded_for_every_protocol() -> None:
    from lens.data.dataset_load import load_dataset_dropping
    from lens.scoring.foundations.errata import apply_errata, load_errata

    dataset, dropped = load_dataset_dropping(OLD_RUN / "dataset.json", drop_invalid=True)
    assert [d.question_id for d in dropped] == ["ops_s7_01_q04_negative"]
    errata = load_errata(OLD_RUN / "errata.yaml")
    _, plain = apply_errata(dataset.questions, errata, dataset_id=dataset.dataset_id)
    assert plain.unmatched == ["ops_s7_01_q04_negative"] and plain.excluded == []
    # The one rule lens's protocol and the published ones both apply.
    _, report = apply_errata(dataset.questions, errata, dataset_id=dataset.dataset_id,
                             dropped=[d.question_id for d in dropped])
    assert report.unmatched == [] and report.excluded == ["ops_s7_01_q04_negative"]
    assert report.questions == plain.questions + 1
