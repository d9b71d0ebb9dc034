"""Judge verdicts: structured replies, ties, the one format retry, and unreadable replies that
make a score unknown (never 0.5); per-fact grading with partial credit; the adversaries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lens.core.errors import ConfigError, UserError
from lens.data.config import RunConfig, parse_config
from lens.models.base import CompletionRequest
from lens.scoring.judging.judge import parse_verdict
from lens.scoring.scorer import SCORES_FILE, score_for_config, score_run
from tests.scoring import judge_fakes
from tests.scoring.scoring_fixtures import (
    SCOPE,
    ScriptedJudge,
    build_run,
    dataset_dict,
    ep,
    record,
    write_dataset,
)
from tests.support.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]
Q1 = f"{SCOPE}_q01_longitudinal"


@pytest.mark.parametrize(("reply", "verdict"), [
    ('{"verdict": "TIE", "reason": "same"}', "TIE"),
    ('{"verdict": "tie"}', "TIE"),
    ("It's a tie.", "TIE"),
    ("A and B are equivalent: TIE", "TIE"),
    ("Neither is better.", "TIE"),
    ("TIE", "TIE"),
    ("A", "A"),
    ("Response B.", "B"),
    ("Response B is better: it names the change.", "B"),
    ("I prefer response A", "A"),
    ("Verdict: B", "B"),
    ('```json\n{"verdict": "A"}\n```', "A"),
    # A model that thinks aloud is read by its last verdict.
    ('First guess {"verdict": "A"}; on reflection {"verdict": "B"}', "B"),
    ("I cannot decide", "invalid"),
    ("", "invalid"),
    ("A is better, but B is more complete", "invalid"),
    ("Response A is better, although it is almost a tie", "invalid"),
    ('{"verdict": "C"}', "invalid"),
    ('{"present": true}', "invalid"),
    ("Both responses have their merits, and I would rather not pick one.", "invalid"),
])
def test_pairwise_replies(reply: str, verdict: str) -> None:
    assert parse_verdict("pairwise", reply) == verdict


@pytest.mark.parametrize(("reply", "grade"), [
    ('{"grade": "present", "reason": "stated"}', "present"),
    ('{"grade": "Partial"}', "partial"),
    ('{"grade": "absent"}', "absent"),
    ("partial: only the trend", "partial"),
    ("not present", "invalid"),
    ("The fact is absent from the answer", "invalid"),
    ('{"grade": "maybe"}', "invalid"),
    ('{"grade": 1}', "invalid"),
])
def test_fact_grade_replies(reply: str, grade: str) -> None:
    assert parse_verdict("fact_grade", reply) == grade


def _prompt(request: CompletionRequest) -> str:
    return next(m.content for m in request.messages if m.role == "user")


def _policy(fn: judge_fakes.Policy) -> Any:
    return lambda request: fn(_prompt(request))


FAITHFUL = ("Geo-lookup latency rose from 200ms to 1,200 ms while the connection pool was "
            f"exhausted [{ep(2)}] [{ep(4)}].")


def _run(tmp_path: Path, answers: dict[str, str]) -> Path:
    """One run, one adapter per answer shape, all answering Q1."""
    ds = write_dataset(tmp_path / "ds.json")
    recs = [record(Q1, text, adapter=name, retrieved=[ep(i) for i in range(1, 6)])
            for name, text in answers.items()]
    return build_run(tmp_path / "runs", ds, recs)


def _by_adapter(scores: Any, metric: str) -> dict[str, float | None]:
    return {q.adapter: q.metrics[metric] for q in scores.questions}


def _oracle() -> ScriptedJudge:
    canonical = [q["ground_truth"]["canonical_answer"] for q in dataset_dict()["questions"]]
    return ScriptedJudge("oracle", _policy(judge_fakes.oracle(canonical)))


def _records_text() -> str:
    days = dataset_dict()["scopes"][0]["episodes"]
    return "Here is what the records say:\n\n" + "\n\n".join(
        f"[{e['episode_id']}] {e['text']}" for e in days[:5])


@pytest.mark.anyio
async def test_unreadable_verdicts_are_retried_once_then_unknown_never_half(
        tmp_path: Path) -> None:
    run = _run(tmp_path, {"fts": FAITHFUL})
    judge = ScriptedJudge("mumbles", _policy(judge_fakes.garbage))
    scores = await score_run(run, judge=judge, tiers={1, 2}, fact_grader="judge")
    row = scores.questions[0]
    assert row.metrics["answer_quality"] is None  # not 0.5
    assert row.metrics["fact_recall"] is None  # not 0 and not the matcher's value
    assert "even after a retry" in row.detail["answer_quality"]["reason"]
    assert "could not be read" in row.detail["fact_recall"]["reason"]
    # 2 facts x 2 orders + 2 fact grades = 6 verdicts, each asked twice.
    assert scores.judge.verdicts == scores.judge.invalid == 6
    assert judge.calls == 12
    retries = [r for r in judge.requests if len(r.messages) == 4]
    assert len(retries) == 6
    assert retries[0].messages[2].role == "assistant"
    assert retries[0].messages[2].content == judge_fakes.garbage("")
    assert scores.judge.disagreement_rate is None and scores.judge.pairs == 0
    assert any("never a tie" in n for n in scores.notes)
    # Unreadable verdicts are kept: re-scoring asks nothing and writes the same file.
    first = (run / SCORES_FILE).read_bytes()
    again = ScriptedJudge("mumbles", _policy(judge_fakes.garbage))
    await score_run(run, judge=again, tiers={1, 2}, fact_grader="judge")
    assert again.calls == 0 and (run / SCORES_FILE).read_bytes() == first


@pytest.mark.anyio
async def test_a_reply_readable_after_the_reminder_counts(tmp_path: Path) -> None:
    run = _run(tmp_path, {"fts": FAITHFUL})

    def late(request: CompletionRequest) -> str:
        if len(request.messages) == 2:
            return "Let me think about which response is better..."
        return _oracle().policy(request)

    judge = ScriptedJudge("late", late)
    scores = await score_run(run, judge=judge, tiers={1, 2}, fact_grader="judge")
    row = scores.questions[0]
    assert row.metrics["answer_quality"] == 0.5  # a tie with the canonical answer, in both orders
    assert row.metrics["fact_recall"] == 1.0
    assert scores.judge.invalid == 0 and judge.calls == 2 * scores.judge.verdicts
    # Both calls are metered into the verdict.
    assert scores.judge.prompt_tokens == 100 * judge.calls


@pytest.mark.anyio
async def test_partial_credit_and_missing_grades(tmp_path: Path) -> None:
    data = dataset_dict()
    data["questions"][0]["ground_truth"]["key_facts"] = ["a", "b", "c", "d"]
    ds = write_dataset(tmp_path / "ds.json", data)
    run = build_run(tmp_path / "runs", ds, [record(Q1, FAITHFUL, retrieved=[ep(2)])])
    grades = {"a": "present", "b": "partial", "c": "absent", "d": "partial"}

    def grader(request: CompletionRequest) -> str:
        prompt = _prompt(request)
        if "Criterion:" in prompt:
            return json.dumps({"verdict": "TIE"})
        fact = prompt.split("Key fact: ", 1)[1].split("\n", 1)[0]
        return json.dumps({"grade": grades[fact]})

    scores = await score_run(run, judge=ScriptedJudge("g", grader), tiers={1, 2},
                             fact_grader="judge")
    detail = scores.questions[0].detail["fact_recall"]
    assert scores.questions[0].metrics["fact_recall"] == pytest.approx((1 + .5 + 0 + .5) / 4)
    assert [f["points"] for f in detail["facts"]] == [1.0, 0.5, 0.0, 0.5]
    assert detail["grader"] == "judge"
    # One grade unreadable: the question's fact_recall is unknown, not the mean of the rest.
    grades["c"] = "maybe"
    other = build_run(tmp_path / "runs2", ds, [record(Q1, FAITHFUL, retrieved=[ep(2)])])
    scores = await score_run(other, judge=ScriptedJudge("g", grader), tiers={1, 2},
                             fact_grader="judge")
    assert scores.questions[0].metrics["fact_recall"] is None


@pytest.mark.anyio
async def test_gaming_answers_score_below_the_faithful_one_with_an_honest_judge(
        tmp_path: Path) -> None:
    answers = {
        "faithful": FAITHFUL,
        "stuffed": _records_text(),
        "numbers": "200ms, 1,200 ms, 250ms, 300ms, 350ms, 400ms " + " ".join(
            f"[{ep(i)}]" for i in range(1, 6)),
        "vague": f"Latency changed over the period and is worth watching [{ep(2)}] [{ep(4)}].",
        "abstains": f"Not enough evidence to say [{ep(2)}] [{ep(4)}].",
        # Longer: the faithful answer with every record pasted after it.
        "longer": FAITHFUL + "\n\n" + _records_text()[len("Here is what the records say:"):],
    }
    run = _run(tmp_path, answers)
    scores = await score_run(run, judge=_oracle(), tiers={1, 2}, fact_grader="judge")
    quality = _by_adapter(scores, "answer_quality")
    facts = _by_adapter(scores, "fact_recall")
    assert quality["faithful"] == 0.5 and facts["faithful"] == 1.0
    for name in ("stuffed", "numbers", "vague", "abstains"):
        assert quality[name] is not None and quality[name] < quality["faithful"], name
        assert facts[name] is not None and facts[name] < facts["faithful"], name
    # Saying more does not earn more.
    assert quality["longer"] is not None and quality["longer"] <= quality["faithful"]
    assert facts["longer"] is not None and facts["longer"] <= facts["faithful"]


@pytest.mark.anyio
async def test_a_length_biased_judge_rates_stuffing_above_the_faithful_answer(
        tmp_path: Path) -> None:
    """What calibration exists to catch: scoring alone cannot tell (the verdicts are
    consistent across orders, so the disagreement rate is 0)."""
    run = _run(tmp_path, {"faithful": FAITHFUL, "stuffed": _records_text()})
    judge = ScriptedJudge("longer", _policy(judge_fakes.longer))
    scores = await score_run(run, judge=judge, tiers={1, 2})
    quality = _by_adapter(scores, "answer_quality")
    assert quality["stuffed"] == 1.0 and quality["faithful"] == 1.0
    assert scores.judge.disagreement_rate == 0.0


def _config(tmp_path: Path, **extra: Any) -> RunConfig:
    ds = write_dataset(tmp_path / "ds.json")
    return parse_config({"dataset": {"path": str(ds)}, "adapters": [{"name": "sqlite_fts"}],
                         "agent": {"model": "scripted/policy"},
                         "cache": {"enabled": False}, **extra}, "run.yaml")


@pytest.mark.anyio
async def test_a_configured_judge_grades_facts_by_default(tmp_path: Path) -> None:
    run = _run(tmp_path, {"fts": FAITHFUL})
    cfg = _config(tmp_path, judge={"model": "scripted/oracle"})
    assert cfg.scoring.grader() is None
    scores = await score_for_config(run, cfg, judge=_oracle())
    assert scores is not None and scores.settings["fact_grader"] == "judge"
    assert scores.settings["judge_prompts"]
    assert scores.questions[0].detail["fact_recall"]["grader"] == "judge"
    assert not any("lower bound" in n for n in scores.notes)
    # Without a judge the matcher decides, and the scores say it is a lower bound.
    bare = await score_for_config(run, _config(tmp_path))
    assert bare is not None and bare.settings["fact_grader"] == "matcher"
    assert any("lower bound" in n for n in bare.notes)


def test_fact_grader_config_is_validated() -> None:
    base = {"dataset": {"path": "d.json"}, "adapters": [{"name": "a"}],
            "agent": {"model": "scripted/policy"}}
    with pytest.raises(ConfigError,
                       match=r"scoring.fact_grader.*'matcher', 'local', 'judge' or 'both'"):
        parse_config({**base, "scoring": {"fact_grader": "llm"}}, "run.yaml")
    with pytest.raises(ConfigError, match=r"run.yaml.*no judge is configured.*fact_grader: "
                                          r"matcher"):
        parse_config({**base, "scoring": {"fact_grader": "both"}}, "run.yaml")
    legacy = parse_config({**base, "scoring": {"fact_judge": True}, "judge": {"model": "a/b"}},
                          "run.yaml")
    assert legacy.scoring.grader() == "judge"


@pytest.mark.anyio
async def test_asking_for_judge_grades_without_a_judge_is_a_user_error(tmp_path: Path) -> None:
    run = _run(tmp_path, {"fts": FAITHFUL})
    with pytest.raises(UserError, match="needs a judge model"):
        await score_run(run, judge=None, fact_grader="judge")
    with pytest.raises(UserError, match="use one of matcher, local, judge, both"):
        await score_run(run, judge=_oracle(), fact_grader="llm")


def _with_judge(run: Path, base_url: str) -> None:
    """Name a judge on the fake server in the run's config, as `lens run` would record it."""
    manifest_path = run / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["config"]["judge"] = {"model": "openai/fake-judge", "base_url": base_url}
    manifest["config"]["cache"] = {"enabled": False}
    manifest_path.write_text(json.dumps(manifest))


@pytest.mark.parametrize(("policy", "quality", "facts"), [
    ("oracle", 0.5, 1.0),
    ("garbage", None, None),
])
def test_lens_score_over_loopback(tmp_path: Path, policy: str, quality: float | None,
                                  facts: float | None) -> None:
    """The real path: `python -m lens score` asks an OpenAI-compatible server; the run config's
    judge makes per-fact grading the default."""
    run = _run(tmp_path, {"fts": FAITHFUL})
    canonical = [q["ground_truth"]["canonical_answer"] for q in dataset_dict()["questions"]]
    fn = judge_fakes.oracle(canonical) if policy == "oracle" else judge_fakes.garbage
    with FakeOpenAI(judge_fakes.responder(fn)) as server:
        _with_judge(run, server.base_url)
        proc = subprocess.run([sys.executable, "-m", "lens", "score", str(run), "--tier", "2"],
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        asked = len(server.requests)
    assert proc.returncode == 0, proc.stderr
    scores = json.loads((run / SCORES_FILE).read_text())
    row = scores["questions"][0]
    assert row["metrics"]["answer_quality"] == quality
    assert row["metrics"]["fact_recall"] == facts
    assert scores["settings"]["fact_grader"] == "judge"
    # 4 pairwise verdicts + 2 fact grades; an unreadable judge is asked each twice.
    assert asked == (6 if policy == "oracle" else 12)
    if policy == "garbage":
        assert "never a tie" in proc.stdout


def test_judge_prompts_and_reminders_enter_the_prompts_hash() -> None:
    from lens.data import prompts
    from lens.scoring.judging import judge_prompts

    prompts.prompts_hash()
    registered = prompts._extra_templates
    for name in ("judge_system", "judge_pairwise", "judge_fact_grade",
                 "judge_pairwise_reminder", "judge_fact_grade_reminder"):
        assert name in registered
    assert registered["judge_fact_grade"] == judge_prompts.FACT_GRADE_TEMPLATE
