"""The small pieces behind the hostile-input promises, one at a time."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from lens.core.errors import MAX_MESSAGE_CHARS, Problem, UserError, bounded
from lens.core.visible import visible
from lens.data.config import ModelConfig
from lens.runs.records import QuestionRecord
from lens.runs.store import RunStore


def test_visible_shows_every_control_character() -> None:
    assert visible("a\x1b[31mb\x07\x00\x7f\x9b") == "a␛[31mb␇␀␡\\x9b"
    assert visible("line\nnext\ttab") == "line␊next␉tab"
    assert visible("line\nnext\ttab\r", multiline=True) == "line\nnext\ttab␍"
    assert visible("plain text, ünïcode ✓") == "plain text, ünïcode ✓"
    assert visible("abc\u202edef") == "abc\\u202edef"  # a bidi override, shown


def test_messages_are_bounded_and_visible() -> None:
    huge = "x" * 5_000_000
    assert len(bounded(huge)) < MAX_MESSAGE_CHARS + 100
    text = UserError(f"f.json: bad id {huge}\x1b[2J",
                     [Problem("f.json", "$.a", huge)] * 500).render()
    assert len(text) < 60 * (MAX_MESSAGE_CHARS + 200)
    assert "\x1b" not in text and "... and 450 more" in text


@pytest.mark.parametrize("value", ["sk-proj-abc123def456", "abc123def456ghi789jkl012mno",
                                   "MY KEY", "1ABC", "x" * 200])
def test_api_key_env_refuses_what_is_not_a_variable_name(value: str) -> None:
    with pytest.raises(ValidationError) as info:
        ModelConfig(model="openai/x", api_key_env=value)
    assert value not in str(info.value.errors()[0]["msg"])


@pytest.mark.parametrize("value", ["OPENAI_API_KEY", "my_key_2", "_X", "GROQ_API_KEY_PROJECT_2"])
def test_api_key_env_accepts_variable_names(value: str) -> None:
    assert ModelConfig(model="openai/x", api_key_env=value).api_key_env == value


def _record(status: str, answer: str = "") -> QuestionRecord:
    return QuestionRecord(unit_key="a|s|r0", adapter="a", scope_id="s", repeat=0,
                          question_id="q1", checkpoint=1, status=status, answer=answer)  # type: ignore[arg-type]


def test_the_newest_record_of_a_question_wins(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "r", "1", {})
    store.save_question(_record("error"))
    other = _record("answered").model_copy(update={"question_id": "q2"})
    store.save_question(other)
    store.save_question(_record("answered", "re-asked"))
    store.close()
    reopened = RunStore.open(store.root)
    records = reopened.load_records()
    assert [(r.question_id, r.status, r.answer) for r in records] == [
        ("q2", "answered", ""), ("q1", "answered", "re-asked")]
    assert {r.key: r.status for r in records} == reopened.committed_questions()
