""""Now" reaches the agent: a question's ``asked_at`` (else the time of the last episode ingested
before it) is the first line of the agent's first message, recorded in the transcript; the
scripted policy keeps it out of its search. A question asked before episodes it
was given is refused unless marked; a question without a time dumps and hashes as before."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lens.data.dataset import Question
from lens.data.dataset_check import evidence_after_asked_at
from lens.data.dataset_load import check_dataset_file, load_dataset
from lens.data.importers.memoryagentbench import write_memoryagentbench
from lens.data.prompts import all_templates, format_now, question_message
from lens.models.scripted import _split_date
from lens.runs.store import RunStore
from tests.core.helpers import make_dataset, write_config, write_json
from tests.support.cli import Lens, cli_runner

MAB = Path(__file__).resolve().parent.parent / "datasets" / "fixtures" / \
    "memoryagentbench_small.jsonl"


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def test_the_date_line_is_longmemevals_form_and_a_template() -> None:
    now = datetime(2023, 5, 30, 23, 40, tzinfo=UTC)
    assert format_now(now) == "2023/05/30 (Tue) 23:40"
    assert question_message("How long ago?", now) == \
        "Current date: 2023/05/30 (Tue) 23:40\n\nHow long ago?"
    assert question_message("How long ago?", None) == "How long ago?"
    assert "question_with_date" in all_templates()
    assert _split_date(question_message("How long ago?", now)) == \
        ("2023/05/30 (Tue) 23:40", "How long ago?")
    assert _split_date("Current affairs?") == (None, "Current affairs?")


def test_agent_question_now_is_asked_at_else_the_checkpoint_time() -> None:
    base = make_dataset()["questions"][0]
    plain = Question.model_validate(base)
    cp = datetime(2024, 1, 3, 10, tzinfo=UTC)
    assert plain.for_agent(cp).now == cp
    assert plain.for_agent().now is None
    timed = Question.model_validate({**base, "asked_at": "2024-02-01T09:30:00"})
    assert timed.for_agent(cp).now == datetime(2024, 2, 1, 9, 30, tzinfo=UTC)
    # Absent fields are not dumped: datasets without them keep their hash.
    assert "asked_at" not in plain.model_dump() and "allow_later_episodes" not in \
        plain.model_dump()
    assert timed.model_dump(mode="json")["asked_at"] == "2024-02-01T09:30:00Z"


def test_a_question_asked_before_episodes_it_was_given_is_refused_unless_marked(
        tmp_path: Path) -> None:
    data = make_dataset(n_episodes=4, checkpoints=(2, 4), questions_per_checkpoint=1)
    # The helper dates episodes 2024-01-01..04; checkpoint 2 holds the first two days.
    data["questions"][0]["asked_at"] = "2024-01-01T12:00:00"
    data["questions"][1]["asked_at"] = "2024-01-04T12:00:00"
    problems = check_dataset_file(write_json(tmp_path / "d.json", data))
    assert [p.location for p in problems] == ["$.questions[0].asked_at"]
    assert "1 of the 2 episodes ingested before the question are dated after its asked_at" \
        in problems[0].message
    data["questions"][0]["allow_later_episodes"] = True
    assert check_dataset_file(write_json(tmp_path / "d.json", data)) == []
    data["questions"][0]["asked_at"] = "yesterday"
    (bad,) = check_dataset_file(write_json(tmp_path / "d.json", data))
    assert bad.location == "$.questions[0].asked_at" and "ISO-8601" in bad.message


def test_evidence_after_asked_at_lists_the_questions_with_late_evidence(tmp_path: Path) -> None:
    data = make_dataset(n_episodes=4, checkpoints=(4,), questions_per_checkpoint=2)
    eps = sorted(data["scopes"][0]["episodes"], key=lambda e: e["timestamp"])
    late, early = data["questions"]
    for q in data["questions"]:
        q["allow_later_episodes"] = True
    late["asked_at"] = "2024-01-02T12:00:00"
    late["ground_truth"]["required_evidence_refs"] = [eps[3]["episode_id"]]
    early["asked_at"] = "2024-01-02T12:00:00"
    early["ground_truth"]["required_evidence_refs"] = [eps[0]["episode_id"]]
    ds = load_dataset(write_json(tmp_path / "d.json", data))
    assert evidence_after_asked_at(ds) == [late["question_id"]]


def test_a_lens_run_tells_the_agent_its_checkpoint_time(tmp_path: Path, lens: Lens) -> None:
    data = make_dataset(n_episodes=4, checkpoints=(2, 4), questions_per_checkpoint=1)
    ds = write_json(tmp_path / "d.json", data)
    res = lens("run", str(write_config(tmp_path / "c.yaml", ds)), "--quiet")
    assert res.returncode == 0, res.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    told = {"s1_q01": "2024/01/02 (Tue) 10:00", "s1_q02": "2024/01/04 (Thu) 10:00"}
    for rec in RunStore(run_dir).load_records():
        first = next(m.content for m in rec.transcript if m.role == "user")
        assert first.startswith(f"Current date: {told[rec.question_id]}\n\n")
        query = next(c.arguments["query"] for c in rec.tool_calls if c.name == "memory_search")
        assert query.startswith("How did the widget count change?")
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["dataset"]["evidence_after_asked_at"] == []
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert "evidence_after_question" not in {c["id"] for c in summary["checklist"]}


def test_memoryagentbench_longmemeval_rows_carry_their_question_date(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    write_memoryagentbench(MAB, out)
    ds = load_dataset(out)
    timed = {q.question_id: q for q in ds.questions if q.asked_at is not None}
    assert len(timed) == 2
    for q in timed.values():
        assert q.meta["question_date"] == "2023/06/30 (Fri) 10:00"
        assert q.asked_at == datetime(2023, 6, 30, 10, tzinfo=UTC)
        # Its chunks' times are invented (from 2024), so later than the question.
        assert q.allow_later_episodes
    assert all(q.asked_at is None for q in ds.questions if q.question_id not in timed)
