from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lens.core.errors import DatasetError
from lens.data.dataset import QuestionType
from lens.data.dataset_load import check_dataset_file, load_dataset
from tests.core.helpers import make_dataset, write_json

SCOPES = [
    ("scope_01_with_distractors.json", "cascading_failure_01", 120, 24),
    ("scope_02_with_distractors.json", "financial_irregularity_02", 120, 24),
    ("scope_03_with_distractors.json", "clinical_signal_03", 120, 24),
    ("scope_07_with_distractors.json", "tutoring_jailbreak_07", 40, 10),
    ("scope_08_with_distractors.json", "corporate_acquisition_08", 40, 10),
]

FUTURE_EVIDENCE = {"scope_03_with_distractors.json": [
    f"$.questions[{i}].ground_truth.required_evidence_refs[1]" for i in (0, 12)]}


@pytest.mark.parametrize(("name", "scope_id", "episodes", "questions"), SCOPES)
def test_published_scopes_load_and_validate(shared_datasets: Path, name: str, scope_id: str,
                                            episodes: int, questions: int) -> None:
    path = shared_datasets / name
    problems = check_dataset_file(path)
    if name in FUTURE_EVIDENCE:
        # Two questions of scope 03 require an episode streamed after their checkpoint: no
        # memory system can hold it when asked, so the file is refused until it is fixed.
        assert [p.location for p in problems] == FUTURE_EVIDENCE[name]
        assert all("after the question's checkpoint" in p.message for p in problems)
        return
    assert problems == []
    ds = load_dataset(path)
    assert [s.scope_id for s in ds.scopes] == [scope_id]
    assert len(ds.scopes[0].episodes) == episodes
    assert len(ds.questions) == questions
    ordered = ds.scopes[0].ordered_episodes()
    assert all(a.timestamp <= b.timestamp for a, b in itertools.pairwise(ordered))
    assert len(ds.content_hash()) == 64


def test_ten_question_types() -> None:
    assert len(QuestionType) == 10
    assert QuestionType("evidence_sufficiency") is QuestionType.EVIDENCE_SUFFICIENCY


def test_for_adapter_and_for_agent_strip_gold(tmp_path: Path) -> None:
    ds = load_dataset(write_json(tmp_path / "d.json", make_dataset()))
    ep = ds.scopes[0].episodes[0].for_adapter()
    assert ep.meta == {}
    q = ds.questions[0].for_agent()
    assert set(q.model_dump()) == {"question_id", "prompt", "now"}


def _problems(tmp_path: Path, data: dict) -> list[str]:
    path = write_json(tmp_path / "bad.json", data)
    return [str(p) for p in check_dataset_file(path)]


def test_validator_reports_every_problem_with_path(tmp_path: Path) -> None:
    data = make_dataset()
    eps = data["scopes"][0]["episodes"]
    eps[1]["episode_id"] = eps[0]["episode_id"]  # duplicate id
    eps[2]["scope_id"] = "elsewhere"  # wrong scope
    data["questions"][0]["checkpoint_after"] = 99  # out of range
    data["questions"][1]["ground_truth"]["required_evidence_refs"] = ["s1_ep_404"]
    data["questions"][2]["question_id"] = data["questions"][3]["question_id"]
    problems = _problems(tmp_path, data)
    text = "\n".join(problems)
    assert "$.scopes[0].episodes[1].episode_id: duplicate episode_id 's1_ep_001'" in text
    assert "$.scopes[0].episodes[2].scope_id" in text
    assert "$.questions[0].checkpoint_after: 99 is outside 1..10" in text
    assert "$.questions[1].ground_truth.required_evidence_refs[0]: 's1_ep_404'" in text
    assert "$.questions[3].question_id: duplicate question_id" in text
    assert all(p.startswith(str(tmp_path / "bad.json")) for p in problems)


def test_bad_timestamp_and_unknown_type_and_field(tmp_path: Path) -> None:
    data = make_dataset()
    data["scopes"][0]["episodes"][4]["timestamp"] = "yesterday"
    data["questions"][0]["question_type"] = "trivia"
    data["questions"][1]["surprise"] = 1
    text = "\n".join(_problems(tmp_path, data))
    assert "$.scopes[0].episodes[4].timestamp" in text and "ISO-8601" in text
    assert "$.questions[0].question_type" in text and "'trivia'" in text
    assert "$.questions[1].surprise: unknown field" in text


@pytest.mark.parametrize("where", ["scopes", "questions"])
def test_a_repeated_key_deep_in_the_file_is_refused(tmp_path: Path, where: str) -> None:
    """The streaming reader builds scopes and questions itself; a repeated key inside one must
    be refused as the whole-file reader refuses it, not silently keep the last value."""
    path = write_json(tmp_path / "ds.json", make_dataset())
    text = path.read_text(encoding="utf-8")
    key = '"episode_id": ' if where == "scopes" else '"prompt": '
    at = text.index(key)
    path.write_text(text[:at] + key + '"shadow", ' + text[at:], encoding="utf-8")
    with pytest.raises(DatasetError, match="duplicate key"):
        load_dataset(path)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not found"):
        load_dataset(tmp_path / "missing.json")
    bad = tmp_path / "broken.json"
    bad.write_text('{"scopes": [', encoding="utf-8")
    with pytest.raises(DatasetError, match="invalid JSON at line 1"):
        load_dataset(bad)
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"version": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(DatasetError, match="not UTF-8"):
        load_dataset(latin)


def test_cli_validate_exit_codes(tmp_path: Path, shared_datasets: Path) -> None:
    good = shared_datasets / "scope_07_with_distractors.json"
    data = make_dataset()
    data["questions"][0]["checkpoint_after"] = 0
    bad = write_json(tmp_path / "bad.json", data)
    ok = subprocess.run([sys.executable, "-m", "lens", "datasets", "validate", str(good)],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "ok" in ok.stdout
    res = subprocess.run([sys.executable, "-m", "lens", "datasets", "validate", str(bad)],
                         capture_output=True, text=True)
    assert res.returncode == 2
    assert "$.questions[0].checkpoint_after" in res.stdout
    assert "Traceback" not in res.stdout + res.stderr
    assert json.loads(bad.read_text())  # the file itself is untouched
