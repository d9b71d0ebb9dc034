"""Judges on the publisher's answers, through the command line, against a loopback
OpenAI-compatible server: lens's prompt and the publisher's by file, each with its agreement with
the publisher's verdicts and its leniency on lens's wrong answers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.beside import require_beside
from tests.support.cli import Lens, cli_runner
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

EXCERPT = Path(__file__).parent / "data" / "memobase" / "memobase_eval_0710_excerpt.json"
PROMPT = """Is the generated answer right?
Question: {question}
Gold answer: {gold_answer}
Generated answer: {response}
Reply in JSON with the key "label": CORRECT or WRONG."""


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    monkeypatch.setenv("CLAIMS_TEST_KEY", "sk-test")
    return cli_runner(tmp_path, monkeypatch, capsys)


def _field(text: str, name: str) -> str:
    m = re.search(rf"^\s*{name}:\s*(.*)$", text, re.M)
    return m.group(1).strip() if m else ""


def strict_judge(req: RecordedRequest) -> Reply:
    """CORRECT when the generated answer contains the gold answer's first word."""
    text = req.body["messages"][-1]["content"]
    gold, answer = _field(text, "Gold answer"), _field(text, "Generated answer")
    word = gold.split()[0].lower().strip(",.") if gold.split() else ""
    label = "CORRECT" if word and word in answer.lower() else "WRONG"
    return Reply.text(json.dumps({"reason": "compared", "label": label}))


def _judge_args(server: FakeOpenAI) -> list[str]:
    return ["--judge", "openai/fake-judge", "--base-url", server.base_url,
            "--api-key-env", "CLAIMS_TEST_KEY"]


def test_a_judge_under_lens_prompt_and_the_publishers(lens: Lens, tmp_path: Path) -> None:
    (tmp_path / "theirs.txt").write_text(PROMPT)
    with FakeOpenAI(strict_judge) as server:
        r = lens("claims", "check", str(EXCERPT), "--reader", "memobase", "--limit", "6",
                 *_judge_args(server), "--judge-prompt", "lens", "--judge-prompt",
                 "theirs.txt", "--work", "work", "--out", "out")
        asked = len(server.requests)
        # A second check of the same answers reads the verdicts back from the work folder.
        again = lens("claims", "check", str(EXCERPT), "--reader", "memobase", "--limit", "6",
                     *_judge_args(server), "--judge-prompt", "theirs.txt", "--work", "work")
        assert again.returncode == 0 and len(server.requests) == asked
    assert r.returncode == 0, r.stderr
    assert "judge openai/fake-judge (locomo-j@1)" in r.stdout
    assert "judge openai/fake-judge (theirs.txt)" in r.stdout
    data = json.loads((tmp_path / "out" / "claims.json").read_text())
    judges = [s for s in data["scorers"] if s["condition"].get("scorer") == "judge"]
    assert [j["condition"]["prompt"] for j in judges] == ["locomo-j@1", "theirs.txt"]
    for j in judges:
        assert len(j["values"]) == 6 and None not in j["values"].values()
        assert j["agreement"]["n"] == 6
        assert j["estimate"]["low"] is not None
        publisher = data["scorers"][0]["values"]
        differ = {i for i, v in j["values"].items() if v != publisher[i]}
        assert {d["id"] for d in j["disagreements"]} == differ
    # The leniency of each judge on the wrong answers lens built (vague, specific, other gold).
    lenient = {x["scorer"] for x in data["leniency"]}
    assert {"judge openai/fake-judge (theirs.txt)", "fact matcher"} <= lenient
    assert data["wrong_answers"] > 6
    # Every answer and wrong answer asked once per prompt.
    assert asked == 2 * (6 + data["wrong_answers"])
    # The published figure's band: the lowest and highest of lens's graders and judges (the
    # matcher and both judges; F1 is not a share of answers accepted), beside the publisher's.
    graded = sorted((100 * s["estimate"]["mean"], s["name"]) for s in data["scorers"][1:]
                    if s["condition"]["scorer"] != "locomo-f1")
    assert len(graded) == 3
    ours = 100 * data["scorers"][0]["estimate"]["mean"]
    assert (f"The band: the same answers score {graded[0][0]:.1f} ({graded[0][1]}) to "
            f"{graded[-1][0]:.1f} ({graded[-1][1]}) under lens's 3 grader(s) and judge(s), "
            f"against {ours:.1f} by the publisher's verdicts on them.") in r.stdout


def test_unreadable_verdicts_are_unknown_and_the_status_says_so(lens: Lens) -> None:
    with FakeOpenAI(lambda _req: Reply.text("I cannot decide.")) as server:
        r = lens("claims", "check", str(EXCERPT), "--reader", "memobase", "--limit", "5",
                 "--no-leniency", *_judge_args(server))
        lenient = lens("claims", "check", str(EXCERPT), "--reader", "memobase", "--limit", "2",
                       *_judge_args(server))
    assert lenient.returncode == 1
    lines = lenient.stdout.splitlines()
    start = lines.index("| scorer | vague | specific | other_gold | all | unknown |")
    row = next(x for x in lines[start:] if x.startswith("| judge openai"))
    # Every wrong answer's verdict is unknown: counted in its own column, not as accepted.
    assert row.endswith(f"| unknown | {int(row.split('|')[-2])} |")
    assert int(row.split("|")[-2]) > 0
    assert r.returncode == 1
    assert "5 verdict(s) unknown (failed or unreadable)" in r.stdout
    line = next(x for x in r.stdout.splitlines() if x.startswith("| judge openai"))
    assert "| unknown |" in line


def test_a_prompt_file_without_the_answers_place(lens: Lens, tmp_path: Path) -> None:
    (tmp_path / "p.txt").write_text("Question: {question}\nGold: {gold_answer}\n")
    r = lens("claims", "check", str(EXCERPT), "--reader", "memobase", "--judge",
             "openai/x", "--judge-prompt", "p.txt")
    assert r.returncode == 2
    assert "p.txt: the judge prompt has no place for the answer" in r.stderr


def test_zeps_own_judge_prompt_by_file(lens: Lens, tmp_path: Path) -> None:
    """Zep's prompt as its eval script holds it, with its placeholders, on Zep's answers."""
    root = require_beside("thirdparty", "zep-locomo", what="getzep/zep-papers' LoCoMo results")
    script = (root / "zep_locomo_eval.py").read_text()
    prompt = script.split('ACCURACY_PROMPT = f"""', 1)[1].split('"""', 1)[0]
    (tmp_path / "zep_prompt.txt").write_text(prompt)
    with FakeOpenAI(strict_judge) as server:
        r = lens("claims", "check", str(root / "zep_locomo_grades.json"), "--reader", "zep",
                 "--limit", "8", "--no-leniency", *_judge_args(server), "--judge-prompt",
                 "zep_prompt.txt")
        sent = server.requests[0].body["messages"][-1]["content"]
    assert r.returncode == 0, r.stderr
    assert "Generated answer: " in sent and "{response}" not in sent
    assert "judge openai/fake-judge (zep_prompt.txt)" in r.stdout


def test_a_judge_without_its_key_stops_before_any_scoring(lens: Lens,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAIMS_TEST_KEY")
    r = lens("claims", "check", str(EXCERPT), "--reader", "memobase", "--judge",
             "openai/fake-judge", "--base-url", "http://127.0.0.1:9", "--api-key-env",
             "CLAIMS_TEST_KEY", "--out", "out")
    assert r.returncode == 2
    assert "CLAIMS_TEST_KEY, which is not set" in r.stderr
    assert "lens claims:" not in r.stdout and "sk-test" not in r.stderr + r.stdout
