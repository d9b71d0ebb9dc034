"""The MemoryAgentBench protocol on the MemoryAgentBench fixture (one row per sub-dataset family):
the README's accuracy per sub-dataset (substring or exact match after the benchmark's
normalisation and answer parsing, the LongMemEval judge, HELMET's judged summary F1), per
competency and overall, checked against values worked out by hand; a context-dumping answer
games substring match and is caught by exact match and F1."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from lens.core.errors import UserError
from lens.data.dataset import GroundTruth, Question, QuestionType
from lens.data.importers.memoryagentbench import write_memoryagentbench
from lens.scoring.protocols import get_protocol
from lens.scoring.protocols.memoryagentbench import (
    FLUENCY_ID,
    PRECISION_ID,
    RECALL_ID,
    exact_match,
    judge_json,
    normalize,
    parse_answer,
    substring_match,
    token_f1,
)
from lens.scoring.scorer import score_run_sync
from tests.protocols.builders import PolicyJudge, lme_verdict, stored_run

MAB = Path(__file__).resolve().parents[1] / "datasets" / "fixtures" / "memoryagentbench_small.jsonl"

# Answers in the file's question order: eventqa x2, factconsolidation x2, icl x2, longmemeval
# x2 (m1, m2_abs), infbench summary, detective, recsys, ruler.
FAITHFUL = [
    "She finds the old lighthouse keeper.",
    "Answer: the keeper and Mara\nThey relit it together.",
    "Marxton",
    "The mayor is Rufus.",
    "label: 43",
    "12",
    "You have 4 bikes.",
    "You never mentioned the dentist, so I cannot say.",
    "Mara sails at dawn. A storm catches her. The cat sleeps.",
    "Answer: B",
    "1. Aliens\n2. Alien",
    "It is the Nile river.",
]
CONTEXT_DUMP = ["Marxton Rufus Sylvania the keeper and Mara she finds the old lighthouse keeper "
                "the Nile 43 12 4 B"] * 12


def summary_judge(prompt: str) -> str:
    """HELMET's three summary calls answered from the text (fluency always 1; a key point is
    supported when the summary holds it; a sentence when the expert summary holds it), and the
    LongMemEval prompts as the LongMemEval tests answer them."""
    if prompt.startswith("Judge the fluency"):
        return '{"fluency": 1}'
    summary = prompt.split("<start of summary>")[-1].split("<end of summary>")[0]
    if "Key points:" in prompt:
        points = re.findall(r"^\d+\. (.+)$", prompt.split("Key points:", 1)[1].split(
            "Summary:", 1)[0], re.M)
        found = [i + 1 for i, p in enumerate(points) if p.lower() in summary.lower()]
        return f'Reasoning... {{"supported_key_points": {found}, "recall": {len(found)}}}'
    if "Expert summary" in prompt:
        expert = prompt.split("<start of summary>")[1].split("<end of summary>")[0].lower()
        sentences = [s.strip() for s in summary.split(".") if s.strip()]
        ok = sum(s.lower() in expert for s in sentences)
        return f'{{"precision": {ok}, "sentence_count": {len(sentences)}}}'
    listed = re.search(r"Correct Answer: (\[.*?\])\n\n", prompt, re.S)
    if listed:
        # The whole list of accepted answers, as the official script shows it: yes when the
        # response holds any of them.
        response = prompt.split("Model Response: ", 1)[1].split("\n\n", 1)[0].lower()
        golds = ast.literal_eval(listed.group(1))
        return "yes" if any(g.lower() in response for g in golds) else "no"
    return lme_verdict(prompt)


def _score(tmp_path: Path, answers: dict[str, list[str]]) -> object:
    ds = tmp_path / "mab.json"
    write_memoryagentbench(MAB, ds, chunk_tokens=64)
    run = stored_run(tmp_path, ds, answers)
    return score_run_sync(run, judge=PolicyJudge("gpt-4o", summary_judge),
                          protocol="memoryagentbench")


def test_per_question_metrics_follow_the_benchmark_definitions(tmp_path: Path) -> None:
    scores = _score(tmp_path, {"faithful": FAITHFUL})
    by_id = {q.question_id: q.metrics for q in scores.questions}
    order = [q["question_id"] for q in json.loads((tmp_path / "mab.json").read_text())[
        "questions"]]
    m = [by_id[qid] for qid in order]
    # EventQA is scored on the parsed answer (the first line here): "she finds old lighthouse
    # keeper" both sides after normalisation; its recall wants every accepted answer inside.
    assert (m[0]["mab_accuracy"], m[0]["mab_eventqa_recall"]) == (1.0, 1.0)
    # "Answer: the keeper and Mara" parses to the second accepted answer: exact; but "mara
    # and the keeper" is not in the response, so the all-elements recall is 0.
    assert (m[1]["mab_exact_match"], m[1]["mab_eventqa_recall"]) == (1.0, 0.0)
    # FactConsolidation takes substring match: "rufus" in "mayor is rufus", not exact.
    assert (m[3]["mab_accuracy"], m[3]["mab_exact_match"]) == (1.0, 0.0)
    # Token F1 of "mayor is rufus" against "rufus": precision 1/3, recall 1, F1 = 2 (1/3) /
    # (4/3) = 0.5.
    assert m[3]["mab_f1"] == pytest.approx(0.5)
    # In-context learning is exact match on the parsed answer once the "label:" the prompt
    # asked for is off (the official prompt's primer): "label: 43" and "12" both score.
    assert (m[4]["mab_accuracy"], m[5]["mab_accuracy"]) == (1.0, 1.0)
    # LongMemEval's judge: m1 right, the abstention question recognised as unanswerable.
    assert (m[6]["mab_accuracy"], m[7]["mab_accuracy"]) == (1.0, 1.0)
    # Summary: fluency 1; key points 1 and 2 of 4 supported (recall 1/2); of 3 sentences 1 is
    # in the expert summary (precision 1/3); F1 = 1 x 2 (1/2)(1/3) / (1/2 + 1/3) = 0.4.
    assert m[8]["mab_accuracy"] == pytest.approx(1 * 2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3))
    # DetectiveQA: exact match, the better of the whole ("answer b") and the parsed ("b").
    assert m[9]["mab_accuracy"] == 1.0
    # Recommendation needs the benchmark's entity2id.json: unknown, never 0.
    assert m[10]["mab_accuracy"] is None
    assert m[11]["mab_accuracy"] == 1.0


def test_sub_dataset_competency_and_overall_by_hand(tmp_path: Path) -> None:
    scores = _score(tmp_path, {"faithful": FAITHFUL})
    overall = scores.aggregates["adapter"]["faithful"]
    # Eleven known accuracies: ten 1s and the summary's 0.4.
    assert overall["mab_accuracy"] == pytest.approx((10 * 1 + 0.4) / 11)
    # Competencies average their sub-datasets: AR eventqa 1, longmemeval 1, ruler 1; TTL icl
    # (1 + 1) / 2 (recsys unknown); LRU summary 0.4 and detective 1; CR 1.
    assert overall["mab_accurate_retrieval"] == 1.0
    assert overall["mab_test_time_learning"] == 1.0
    assert overall["mab_long_range_understanding"] == pytest.approx((0.4 + 1) / 2)
    assert overall["mab_conflict_resolution"] == 1.0
    table = scores.aggregates["adapter/sub-dataset"]
    assert table["faithful|icl_banking77_5900shot_balance"]["mab_accuracy"] == 1.0
    assert table["faithful|recsys_redial_full"]["mab_accuracy"] is None
    settings = scores.condition["settings"]["protocol"]
    assert (settings["name"], settings["version"]) == ("memoryagentbench", 3)
    assert "mab-summary-recall@1" in settings["prompts"]


def test_dumping_the_context_games_substring_match_not_exact_match_or_f1(
        tmp_path: Path) -> None:
    scores = _score(tmp_path, {"faithful": FAITHFUL, "dump": CONTEXT_DUMP})
    table = scores.aggregates["adapter/sub-dataset"]
    fact = "factconsolidation_sh_6k"
    # Every accepted answer is somewhere in the dump: substring accuracy is perfect ...
    assert table[f"dump|{fact}"]["mab_accuracy"] == 1.0
    # ... but exact match and token F1 fall far below the faithful arm's.
    assert table[f"dump|{fact}"]["mab_exact_match"] == 0.0
    assert table[f"dump|{fact}"]["mab_f1"] < table[f"faithful|{fact}"]["mab_f1"]
    dump, faithful = (scores.aggregates["adapter"][a] for a in ("dump", "faithful"))
    assert dump["mab_accuracy"] < faithful["mab_accuracy"]


def test_normalisation_parsing_and_the_yes_no_rule() -> None:
    assert normalize("The  Nile, river!") == "nile river"
    assert parse_answer("Reasoning first.\nanswer: Paris\nmore") == "Paris"
    assert parse_answer("Paris\nbecause") == "Paris"
    assert exact_match("An apple.", "apple") == 1.0
    assert substring_match("I think it is Paris, France", "paris") == 1.0
    # When either side is yes / no / noanswer, anything but the same word scores 0 (without
    # the rule "yes it is" against "yes" would have F1 2 (1/3)(1) / (1/3 + 1) = 0.5).
    assert token_f1("yes it is", "yes") == 0.0
    assert token_f1("no", "yes") == 0.0
    assert token_f1("Yes.", "yes") == 1.0


def test_errored_answers_count_as_wrong_without_judge_calls(tmp_path: Path) -> None:
    from tests.scoring.scoring_fixtures import build_run, record

    ds = tmp_path / "mab.json"
    write_memoryagentbench(MAB, ds, chunk_tokens=64)
    questions = json.loads(ds.read_text())["questions"]
    records = [record(q["question_id"], text, adapter="faithful", scope=q["scope_id"],
                      checkpoint=q["checkpoint_after"],
                      status="error" if i in (2, 6, 8) else "answered")
               for i, (q, text) in enumerate(zip(questions, FAITHFUL, strict=True))]
    run = build_run(tmp_path / "run", ds, records)
    judge = PolicyJudge("gpt-4o", summary_judge)
    scores = score_run_sync(run, judge=judge, protocol="memoryagentbench")
    by_id = {q.question_id: q.metrics for q in scores.questions}
    # A substring-scored answer, a LongMemEval-judged one and the judged summary: all 0.
    assert [by_id[questions[i]["question_id"]]["mab_accuracy"] for i in (2, 6, 8)] == [
        0.0, 0.0, 0.0]
    # Only m2_abs is left to the judge.
    assert len(judge.requests) == 1
    assert any("errored" in n for n in scores.notes)


def _mab_question(family: str, answers: list[str], **meta: object) -> Question:
    return Question(question_id="q1", scope_id="s", checkpoint_after=1,
                    question_type=QuestionType.LONGITUDINAL, prompt="Q?",
                    ground_truth=GroundTruth(canonical_answer=answers[0]),
                    meta={"family": family, "answers": answers, "raw_question": "Q?", **meta})


def test_the_longmemeval_judge_sees_every_accepted_answer() -> None:
    q = _mab_question("longmemeval", ["7 days", "8 days (including the last day)"],
                      question_type="temporal-reasoning", question_id="t1")
    (task,) = get_protocol("memoryagentbench").tasks(q, "a week").values()
    # The official script formats the question's answer list itself into the prompt.
    assert "Correct Answer: ['7 days', '8 days (including the last day)']\n\n" in task.prompt
    assert task.prompt_id == "longmemeval-temporal@1" and task.max_tokens == 10


def test_summary_replies_are_read_as_the_official_parse_json() -> None:
    # The last {...} decides, even when an earlier one is well formed.
    assert judge_json('{"recall": 3} then {not json}') is None
    assert judge_json('reasoning {"recall": 2} ... {"recall": 4}') == {"recall": 4}
    # A broken last object falls back to the last fenced json block.
    assert judge_json('```json\n{"precision": 2, "sentence_count": 5}\n``` {oops}') == {
        "precision": 2, "sentence_count": 5}
    # No {...} at all: nothing, even with a fenced block of another shape.
    assert judge_json("```json\n[1, 2]\n```") is None
    p = get_protocol("memoryagentbench")
    # Any number the fluency call gives multiplies the F1 (the script does not check it).
    assert p.parse(FLUENCY_ID, 'ok {"fluency": 1}') == 1.0
    assert p.parse(FLUENCY_ID, '{"fluency": "high"}') is None
    assert p.parse(RECALL_ID, '{"supported_key_points": [1], "recall": 1}') == 1.0
    assert p.parse(PRECISION_ID, '{"precision": 2, "sentence_count": 0}') == 0.0
    assert p.parse(PRECISION_ID, '{"precision": 2}') is None


def test_a_summary_is_judged_stripped_against_the_first_answer() -> None:
    q = _mab_question("infbench_sum", ["The expert summary.", "Another."], keypoints=["k1"])
    tasks = get_protocol("memoryagentbench").tasks(q, "\n  Mara sails.  \n")
    assert 'Text: "Mara sails."' in tasks["fluency"].prompt
    assert "<start of summary>Mara sails.<end of summary>" in tasks["recall"].prompt
    assert "<start of summary>The expert summary.<end of summary>" in tasks["precision"].prompt
    assert "Another." not in tasks["precision"].prompt


def test_unreadable_summary_replies_are_counted_never_dropped_silently(tmp_path: Path) -> None:
    def garbled(prompt: str) -> str:
        # The recall reply ends in a broken object: the official script drops the summary.
        if "Key points:" in prompt:
            return 'I count {"recall": 2} ... so {recall: two}'
        return summary_judge(prompt)

    ds = tmp_path / "mab.json"
    write_memoryagentbench(MAB, ds, chunk_tokens=64)
    run = stored_run(tmp_path, ds, {"faithful": FAITHFUL})
    scores = score_run_sync(run, judge=PolicyJudge("gpt-4o", garbled),
                            protocol="memoryagentbench")
    overall = scores.aggregates["adapter"]["faithful"]
    # The summary is unknown, not 0: the mean is over the ten other known accuracies.
    assert overall["mab_accuracy"] == 1.0
    assert overall["mab_infbench_sum_unscored"] == 1.0
    assert scores.aggregates["adapter/sub-dataset"][
        "faithful|infbench_sum_eng_shots2"]["mab_accuracy"] is None
    assert any("1 of 1 infbench_sum summaries have no judged F1" in n for n in scores.notes)
    assert scores.judge.invalid == 1


def test_a_prompt_mapping_replaces_the_summary_judge_wording(tmp_path: Path) -> None:
    mapping = tmp_path / "prompts.yaml"
    mapping.write_text('mab-summary-fluency@1: "House fluency rules. Text: {text}"\n',
                       encoding="utf-8")
    p = get_protocol("memoryagentbench").with_prompt_file(mapping)
    q = _mab_question("infbench_sum", ["Expert."], keypoints=["k1"])
    tasks = p.tasks(q, " Mara sails. ")
    assert tasks["fluency"].prompt == "House fluency rules. Text: Mara sails."
    # The prompts the file leaves out keep lens's wording; the file enters the condition.
    assert tasks["recall"].prompt.startswith("Judge a summary of a book")
    assert p.condition()["prompt_file"]["name"] == "prompts.yaml"
    bad = tmp_path / "bad.yaml"
    bad.write_text('mab-summary-fluency@1: "no placeholder"\n', encoding="utf-8")
    with pytest.raises(UserError, match=r"mab-summary-fluency@1: its placeholders are \[\]"):
        get_protocol("memoryagentbench").with_prompt_file(bad)
