"""lens's per-fact judge prompt: a yes / partly / no question whose one-word reply is read as a
grade (1, 0.5, 0); its wording and reply schema identify the judge; answers known to be wrong
are graded absent when the judge says no, through the judge path and ``lens facts grade``."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from lens.commands.cli import main
from lens.core import eventloop
from lens.data import prompts
from lens.models.base import Completion, CompletionRequest
from lens.scoring.judging import judge_prompts as jp
from lens.scoring.judging.judge import Judge, fact_grade_task, local_choice_model, parse_verdict
from lens.scoring.wrong_answers import WRONG_KINDS, GoldQuestion, build_all
from tests.scoring.scoring_fixtures import ScriptedJudge

QUESTIONS = [
    GoldQuestion("c1/0", "When did Caroline go to the support group?", "7 May 2023", "c1"),
    GoldQuestion("c1/1", "Which city did Jon visit?", "Rome", "c1"),
    GoldQuestion("c1/2", "Which city did Gina move to?", "Seattle", "c1"),
    GoldQuestion("c1/3", "How many cats does Melanie have?", "2", "c1"),
]


def _last_user(request: CompletionRequest) -> str:
    return next(m.content for m in reversed(request.messages) if m.role == "user")


def test_the_reply_is_one_verdict_word_constrained_by_the_schema() -> None:
    verdict = jp.FACT_GRADE_SCHEMA["properties"]["verdict"]
    assert jp.FACT_GRADE_SCHEMA["required"] == ["verdict"]
    assert set(jp.FACT_GRADE_SCHEMA["properties"]) == {"verdict"}
    assert verdict["enum"] == ["yes", "partly", "no"]
    # Every word the schema allows is read as a grade, and each grade has its points.
    grades = [parse_verdict("fact_grade", json.dumps({"verdict": w})) for w in verdict["enum"]]
    assert [jp.GRADE_POINTS[g] for g in grades] == [1.0, 0.5, 0.0]


@pytest.mark.parametrize(("reply", "grade"), [
    ('{"verdict": "yes"}', "present"),
    ('{"verdict": "Partly"}', "partial"),
    ('{"verdict": "no"}', "absent"),
    ('{"verdict": "no."}', "absent"),
    ("No, it names another date.", "absent"),
    ("yes", "present"),
    ('{"verdict": "maybe"}', "invalid"),
    ('{"verdict": "A"}', "invalid"),
    ("Nothing in the answer says so.", "invalid"),
    ("not present", "invalid"),
])
def test_verdict_words_are_read_as_grades(reply: str, grade: str) -> None:
    assert parse_verdict("fact_grade", reply) == grade


def test_the_wording_and_the_schema_enter_the_prompts_hash(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    before, registered_before = jp.judge_prompts_hash(), prompts.prompts_hash()
    assert prompts.all_templates()["judge_fact_grade_schema"] == json.dumps(
        jp.FACT_GRADE_SCHEMA, sort_keys=True)
    monkeypatch.setattr(jp, "FACT_GRADE_SCHEMA", {**jp.FACT_GRADE_SCHEMA, "required": []})
    assert jp.judge_prompts_hash() != before
    monkeypatch.undo()
    monkeypatch.setitem(prompts._extra_templates, "judge_fact_grade_schema", "{}")
    assert prompts.prompts_hash() != registered_before


def test_a_wrong_answer_is_graded_absent_when_the_judge_says_no() -> None:
    """The judge path end to end with a scripted model: the request carries the question, the
    key fact, the answer and the verdict schema; "no" grades 0, "yes" 1, "partly" 0.5."""
    wrong = [a for a in build_all(QUESTIONS) if a.kind in WRONG_KINDS]
    assert {a.kind for a in wrong} == set(WRONG_KINDS)
    gold = {q.id: q for q in QUESTIONS}
    replies = {"It was sometime in": "no", "7 May 2023": "yes"}

    def policy(request: CompletionRequest) -> str:
        answer = _last_user(request).split("Answer:\n<<<\n", 1)[1].split("\n>>>", 1)[0]
        word = next((w for k, w in replies.items() if answer.startswith(k)), "no")
        return json.dumps({"verdict": "partly" if answer == "Rome and more" else word})

    client = ScriptedJudge("scripted/judge", policy)
    judge = Judge(client, concurrency=1)
    tasks = [fact_grade_task(gold[a.question_id].question, gold[a.question_id].gold, a.answer)
             for a in wrong]
    tasks += [fact_grade_task(QUESTIONS[0].question, "7 May 2023", "7 May 2023"),
              fact_grade_task(QUESTIONS[1].question, "Rome", "Rome and more")]
    verdicts = eventloop.run(lambda: judge.run(tasks))
    points = [jp.GRADE_POINTS[verdicts[t.key(judge.model)].value] for t in tasks]
    assert points == [0.0] * len(wrong) + [1.0, 0.5]
    asked = {_last_user(r): r for r in client.requests}
    for task, a in zip(tasks, wrong, strict=False):
        q = gold[a.question_id]
        assert f"Question: {q.question}" in task.prompt and f"Key fact: {q.gold}" in task.prompt
        assert f"<<<\n{a.answer}\n>>>" in task.prompt
        assert asked[task.prompt].response_schema == jp.FACT_GRADE_SCHEMA
    # One call per distinct prompt (two kinds can build the same answer): no format retry.
    assert client.calls == len({t.prompt for t in tasks})


def test_lens_facts_grade_reads_the_verdicts_of_a_scripted_judge(tmp_path: Path) -> None:
    """``lens facts grade --grader judge`` with a scripted judge that says yes only to the gold:
    the canned wrong answers (vague, another value, another question's gold, a hedge) grade 0."""
    answers = [a for a in build_all(QUESTIONS) if a.question_id == "c1/0"]
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": a.id, "question": QUESTIONS[0].question,
                                        "fact": QUESTIONS[0].gold, "answer": a.answer}) + "\n"
                            for a in answers))
    fixture = tmp_path / "judge.yaml"
    fixture.write_text(yaml.safe_dump({
        "rules": [{"contains": "<<<\n7 May 2023\n>>>", "text": '{"verdict": "yes"}'}],
        "default": '{"verdict": "no"}'}))
    out = tmp_path / "grades.jsonl"
    assert main(["facts", "grade", str(rows), "--out", str(out), "--grader", "judge",
                 "--judge", f"scripted/{fixture}", "--no-cache"]) == 0
    got = {r["id"]: r["grade"] for r in map(json.loads, out.read_text().splitlines())}
    kinds = {a.id: a.kind for a in answers}
    assert {kinds[i] for i, g in got.items() if g == 0.0} >= set(WRONG_KINDS)
    assert [kinds[i] for i, g in got.items() if g == 1.0] == ["gold"]


@pytest.mark.parametrize(("reply", "grade"), [
    ('{"verdict": "A", "grade": "present"}', "present"),
    ('{"verdict": "yes", "grade": "absent"}', "invalid"),
])
def test_a_reply_with_a_pairwise_verdict_and_a_grade(reply: str, grade: str) -> None:
    assert parse_verdict("fact_grade", reply) == grade


class _LocalJudge:
    """A local model as the judge sees one: next-token probabilities, and no reply written."""

    provider = "llama_cpp"
    model = "fake-local"

    def __init__(self, p_yes: dict[str, float]) -> None:
        self.p_yes = p_yes
        self.prompts: list[str] = []

    def choice_probabilities(self, prompt: str, choices: tuple[str, ...]) -> dict[str, float]:
        self.prompts.append(prompt)
        answer = prompt.split("<<<\n", 1)[1].split("\n>>>", 1)[0]
        yes = self.p_yes[answer]
        return dict(zip(choices, (yes, (1 - yes) / 2, (1 - yes) / 2), strict=True))

    async def complete(self, request: CompletionRequest) -> Completion:
        raise AssertionError("a local judge's fact grade is read from its probabilities")

    async def aclose(self) -> None:
        return None


def test_a_local_judge_is_read_by_its_probability_of_yes() -> None:
    """Below LOCAL_YES_AT the fact is absent even when "yes" is the likeliest word (what a
    constrained reply would say); the verdict's raw text keeps the probabilities."""
    q = QUESTIONS[0]
    p_yes = {"7 May 2023": 0.9, "It was sometime in 2023.": 0.45,
             "It was either 7 May 2023, 3 June 2023 or 9 July 2023.": jp.LOCAL_YES_AT - 0.01,
             "It was on 7 May 2023.": jp.LOCAL_YES_AT}
    local = _LocalJudge(p_yes)
    judge = Judge(local, concurrency=1)  # type: ignore[arg-type]
    tasks = {a: fact_grade_task(q.question, q.gold, a) for a in p_yes}
    verdicts = eventloop.run(lambda: judge.run(tasks.values()))
    got = {a: verdicts[t.key(judge.model)] for a, t in tasks.items()}
    assert {a: v.value for a, v in got.items()} == {
        "7 May 2023": "present", "It was sometime in 2023.": "absent",
        "It was either 7 May 2023, 3 June 2023 or 9 July 2023.": "absent",
        "It was on 7 May 2023.": "present"}
    assert json.loads(got["It was sometime in 2023."].raw)["p_yes"] == 0.45
    assert all(p.endswith(jp.FACT_GRADE_REPLY_START) and "Key fact: 7 May 2023" in p
               for p in local.prompts)
    # Behind lens's model stack (its ``backend``) the local model is found all the same.
    assert local_choice_model(SimpleNamespace(backend=local)) is local  # type: ignore[arg-type]
    assert local_choice_model(ScriptedJudge("scripted/judge", str)) is None
