"""The offline fact grader with a fake model: which check settles a fact, how probabilities
become grades, its verdicts kept in the run and the model cache, and ``lens score`` /
scoring with ``fact_grader: local``. The real model is in test_scoring_offline_grader_slow.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from scoring_fixtures import SCOPE, build_run, ep, record, write_dataset

from lens.models.base import ModelError
from lens.models.cache import ModelCache
from lens.runs.store import RunStore
from lens.scoring import score_run
from lens.scoring.grading.fact_grader import is_model_free, resolve_grader
from lens.scoring.grading.offline_grader import (
    CHOICES,
    EVENT,
    LONG_ANSWER_CHARS,
    LONG_PRESENT_AT,
    PRESENT_AT,
    SUPPORT_AT,
    FactTask,
    OfflineGrader,
    abstains,
    cheap_grade,
    grade_from,
    render,
    support,
)

Q = "Why did the tutoring bot's filter miss the student?"
FACT = "the keyword filter never triggered because the student avoided explicit trigger phrases"
PARAPHRASE = ("Nothing was flagged: the learner worded every request so that no banned "
              "phrase ever appeared.")


class FakeModel:
    """P(yes) from a table keyed by a word of the answer; counts calls, records prompts."""

    def __init__(self, table: dict[str, tuple[float, float]] | None = None,
                 fail: bool = False) -> None:
        self.table = table or {}
        self.fail = fail
        self.prompts: list[str] = []

    def choice_probabilities(self, prompt: str, choices: tuple[str, ...]) -> dict[str, float]:
        assert choices == CHOICES
        self.prompts.append(prompt)
        if self.fail:
            raise ModelError("the model fell over", retryable=False)
        answer = prompt.split("<<<", 1)[1]
        p, q = next((v for k, v in self.table.items() if k in answer), (0.05, 0.05))
        return {"yes": p, "partly": q, "no": 1 - p - q}


def grader(model: FakeModel, identity: str = "fake", **kw: object) -> OfflineGrader:
    return OfflineGrader(model, model_identity=identity, **kw)  # type: ignore[arg-type]


def test_the_cheap_checks_settle_what_they_can_without_the_model() -> None:
    assert cheap_grade(FactTask(Q, FACT, "  ")).method == "empty"
    hit = cheap_grade(FactTask(Q, "224 ms", "Auth p99 latency was 224 ms on 2024-03-17."))
    assert hit is not None and (hit.grade, hit.method) == (1.0, "matcher")
    # An abstention is graded 0, not unknown.
    abst = cheap_grade(FactTask(Q, FACT, "I do not have access to the student logs, so I "
                                         "cannot answer this."))
    assert abst is not None and (abst.grade, abst.method) == (0.0, "abstain")
    # What the matcher misses goes to the model: a paraphrase, a date or figure in other
    # words ("August 2023" for "early August, 2023"), a one-word answer ("Drama.").
    assert cheap_grade(FactTask(Q, FACT, PARAPHRASE)) is None
    assert cheap_grade(FactTask(Q, "early August, 2023", "August 2023")) is None
    assert cheap_grade(FactTask(Q, "drama and romance", "Drama.")) is None
    assert cheap_grade(FactTask(Q, "The Friday before 23 January, 2022", "14 January 2022")) is None
    # Values listed bare claim nothing (the real model credited this list at P(yes) 0.62).
    listed = cheap_grade(FactTask(Q, "auth p99 latency climbed from 224 ms to 531 ms",
                                  "CHG-5382, 224 ms, 531 ms, 2024-03-17 [s_ep_010] [s_ep_027]"))
    assert listed is not None and (listed.grade, listed.method) == (0.0, "no_claim")


# A long analysis of the fact's topic that never states it: what the small model credited on
# the LENS v2 answers its judge refused.
ANALYSIS = " ".join(
    f"Session {n}: the learner asked about essay structure, citations and grading rubrics; "
    "the tutor answered each request and logged the exchange for the weekly summary."
    for n in range(1, 13))


def test_a_long_answer_without_the_facts_words_is_unsupported_without_the_model() -> None:
    assert len(ANALYSIS) >= LONG_ANSWER_CHARS
    assert support(FACT, ANALYSIS) < SUPPORT_AT
    model = FakeModel({"Session": (0.95, 0.02)})
    (out,) = grader(model).grade([FactTask(Q, FACT, ANALYSIS)])
    assert (out.grade, out.method) == (0.0, "unsupported") and "of the fact's words" in out.reason
    assert model.prompts == []
    # A short answer may state the fact in words of its own: the model reads it.
    assert support(FACT, PARAPHRASE) < SUPPORT_AT
    assert cheap_grade(FactTask(Q, FACT, PARAPHRASE)) is None
    # The same paraphrase inside the long analysis is still the model's to read when it holds
    # enough of the fact's words.
    stated = ("The keyword list was reviewed in week one. " + ANALYSIS
              + " No filter ever fired: the student avoided every banned word.")
    assert support(FACT, stated) >= SUPPORT_AT
    assert cheap_grade(FactTask(Q, FACT, stated)) is None


def test_a_long_answer_the_gate_passes_is_read_at_its_own_threshold() -> None:
    p = (LONG_PRESENT_AT + PRESENT_AT) / 2
    long_ = ("The keyword list was reviewed in week one. " + ANALYSIS
             + " No filter ever fired: the student avoided every banned word.")
    model = FakeModel({"banned": (p, 0.05)})
    g = grader(model)
    graded = g.grade([FactTask(Q, FACT, long_), FactTask(Q, FACT, PARAPHRASE)])
    assert [(x.grade, x.method) for x in graded] == [(1.0, "model"), (0.0, "model")]
    assert g.condition()["long_present_at"] == LONG_PRESENT_AT < PRESENT_AT


def test_support_counts_the_facts_words_and_figures_anywhere() -> None:
    assert support("auth p99 latency rose to 531 ms",
                   "For auth, p99 latency climbed until it reached 531 ms.") == 1.0
    # 224 is not 531: the figure is the fact's, the words alone are not all of it.
    assert support("auth p99 latency rose to 531 ms",
                   "Auth p99 latency rose to 224 ms.") < 1.0
    assert support("", "anything") == 1.0


def test_stuffing_an_answer_with_the_facts_words_does_not_pass_on_its_own() -> None:
    """The adversary: a long answer that scatters every word of the fact over unrelated
    sentences passes the support gate, and the model, not the gate, decides; it refuses."""
    words = FACT.split()
    stuffed = ANALYSIS + " " + " ".join(
        f"Note {n}: {w} was mentioned in passing." for n, w in enumerate(words))
    assert support(FACT, stuffed) == 1.0
    task = FactTask(Q, FACT, stuffed)
    assert cheap_grade(task) is None  # neither the matcher nor the gate settles it
    model = FakeModel({"Note": (0.2, 0.1)})
    (out,) = grader(model).grade([task])
    assert (out.grade, out.method) == (0.0, "model") and len(model.prompts) == 1


def test_abstention_needs_a_short_answer_without_figures() -> None:
    assert abstains("I lack sufficient information to answer this question.")
    assert not abstains("The records show no information about DNS; latency rose to 290 ms.")
    assert not abstains("The filter never triggered because the student avoided trigger words.")


def test_probabilities_become_grades() -> None:
    assert PRESENT_AT == 0.6
    assert grade_from(0.8) == 1.0
    assert grade_from(0.6) == 1.0
    assert grade_from(0.55) == 0.0
    assert grade_from(0.6, present_at=0.7, partial_at=0.3) == 0.5
    assert grade_from(0.2, present_at=0.7, partial_at=0.3) == 0.0


@pytest.mark.anyio
async def test_the_grader_reads_what_the_local_judge_reads() -> None:
    """The offline grader's prompt is lens's per-fact judge prompt as the local judge reads it,
    so the two give one fact the same probabilities (and the bench's measurement of the local
    judge is a measurement of the grader)."""
    from lens.scoring.judging.judge import Judge, fact_grade_task

    class Probe:
        provider = "llama_cpp"
        model = "probe"

        def __init__(self) -> None:
            self.prompts: list[str] = []

        def choice_probabilities(self, prompt: str, choices: tuple[str, ...]
                                 ) -> dict[str, float]:
            self.prompts.append(prompt)
            return {"yes": 0.7, "partly": 0.2, "no": 0.1}

        async def aclose(self) -> None:
            return None

    probe = Probe()
    await Judge(probe).run([fact_grade_task(Q, FACT, PARAPHRASE)])  # type: ignore[arg-type]
    assert probe.prompts == [render(Q, FACT, PARAPHRASE)]
    assert render(Q, FACT, PARAPHRASE).endswith('{"verdict": "')


def test_model_grades_are_reused_from_the_run_and_the_cache(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "t", "r")
    model = FakeModel({"banned": (0.9, 0.05)})
    tasks = [FactTask(Q, FACT, PARAPHRASE), FactTask(Q, "the tutor noticed it", PARAPHRASE)]
    cache = ModelCache(tmp_path / "cache.sqlite")
    g = grader(model, store=store, cache=cache)
    first = g.grade(tasks)
    assert [x.grade for x in first] == [1.0, 1.0] and {x.method for x in first} == {"model"}
    assert len(model.prompts) == 2 and g.calls == 2
    assert sum(e["kind"] == EVENT for e in store.events()) == 2
    # Re-scoring the run reads the events back: no model call.
    again = grader(model, store=RunStore.open(store.root))
    assert [x.grade for x in again.grade(tasks)] == [1.0, 1.0]
    assert len(model.prompts) == 2 and again.reused == 2
    # Another run grading the same facts of the same answer finds them in the model cache.
    other = grader(model, store=RunStore.create(tmp_path, "t", "r2"), cache=cache)
    assert all(x.reused for x in other.grade(tasks)) and len(model.prompts) == 2
    cache.close()


def test_a_failed_model_call_leaves_the_grade_unknown_not_zero() -> None:
    g = grader(FakeModel(fail=True))
    (out,) = g.grade([FactTask(Q, FACT, PARAPHRASE)])
    assert out.grade is None and out.method == "error" and "fell over" in out.reason
    assert g.errors


def test_facts_of_one_question_are_graded_one_after_another() -> None:
    # The prompt reads the question, then the fact, then the answer: grading one question's
    # facts together lets llama.cpp reuse the evaluated instructions and question.
    model = FakeModel()
    other_q = "When did the staff notice?"
    tasks = [FactTask(q, f"claim {n}", PARAPHRASE)
             for n, q in enumerate([Q, other_q, Q, other_q])]
    out = grader(model).grade(tasks)
    assert len(out) == 4 and len(model.prompts) == 4
    asked = [p.split("Question: ")[-1].split("\n")[0] for p in model.prompts]
    assert asked[0] == asked[1] and asked[2] == asked[3] and asked[1] != asked[2]


def test_default_grader_is_offline_when_installed_and_the_run_uses_models(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import lens.scoring.grading.fact_grader as fg

    monkeypatch.setattr(fg, "offline_available", lambda: True)
    assert resolve_grader(None, has_judge=False) == "local"
    assert resolve_grader(None, has_judge=True) == "judge"
    assert resolve_grader(None, has_judge=False, model_free=True) == "matcher"
    assert resolve_grader("local", has_judge=False) == "local"
    monkeypatch.setattr(fg, "offline_available", lambda: False)
    assert resolve_grader(None, has_judge=False) == "matcher"
    assert is_model_free("scripted/policy") and not is_model_free("llama_cpp/default")


DATASET = {
    "version": "0.1.0",
    "scopes": [{"scope_id": SCOPE, "episodes": [
        {"episode_id": ep(i), "scope_id": SCOPE, "timestamp": f"2024-01-{i:02d}T10:00:00",
         "text": f"Day {i}: session log {i}."} for i in range(1, 4)]}],
    "questions": [{
        "question_id": f"{SCOPE}_q01_longitudinal", "scope_id": SCOPE, "checkpoint_after": 3,
        "question_type": "longitudinal", "prompt": Q,
        "ground_truth": {"canonical_answer": "The filter never triggered.",
                         "required_evidence_refs": [ep(2)],
                         "key_facts": [FACT, "Day 2"]}}],
}


@pytest.mark.anyio
async def test_scoring_with_the_offline_grader(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds.json", DATASET)
    qid = f"{SCOPE}_q01_longitudinal"
    run = build_run(tmp_path / "runs", ds, [
        record(qid, f"{PARAPHRASE} [{ep(2)}]", checkpoint=3, retrieved=[ep(2)])])
    matcher = await score_run(run, judge=None, tiers={1}, write=False)
    assert matcher.questions[0].metrics["fact_recall"] == 0.0
    model = FakeModel({"banned": (0.9, 0.05)})
    scores = await score_run(run, judge=None, tiers={1}, fact_grader="local",
                             offline=grader(model))
    q = scores.questions[0]
    # The paraphrased sentence fact: the model; the bare "Day 2": the matcher's miss.
    assert q.metrics["fact_recall"] == 0.5
    detail = q.detail["fact_recall"]
    assert detail["grader"] == "local"
    assert {f["fact"]: f["method"] for f in detail["facts"]} == {FACT: "model",
                                                                 "Day 2": "matcher"}
    assert scores.settings["fact_grader"] == "local"
    cond = scores.condition["settings"]["offline_grader"]
    assert cond["model"] == "fake" and cond["prompt_hash"] and cond["present_at"]
    assert any("offline grader" in n for n in scores.notes)
    assert len(model.prompts) == 1
    # Re-scoring reads the verdicts kept in the run: no new model call, same numbers.
    again = await score_run(run, judge=None, tiers={1}, fact_grader="local",
                            offline=grader(model))
    assert again.questions[0].metrics == q.metrics and len(model.prompts) == 1
    # A failed call: fact_recall unknown, and said so in the notes.
    down = await score_run(run, judge=None, tiers={1}, fact_grader="local", write=False,
                           offline=grader(FakeModel(fail=True), "other"))
    assert down.questions[0].metrics["fact_recall"] is None
    assert any("offline fact grade(s) failed" in n for n in down.notes)


def test_on_the_shipped_datasets_the_matcher_settles_every_fact() -> None:
    """lens's own key facts are figures, ids and dates: on every gaming shape the offline
    grader's cheap checks, or the matcher's veto (which lens's scoring applies before asking
    the model: fact_credit.vetoed_facts), settle each fact as the matcher does, so the grader
    can lose nothing against them and reads none of them with the model."""
    import json

    from lens.scoring.grading.fact_grader import VETO_REASONS
    from lens.scoring.text.facts import AnswerText, match_fact

    root = Path(__file__).resolve().parents[2]
    data = json.loads((root / "datasets" / "standard.json").read_text())
    for q in data["questions"][:40]:
        gt = q["ground_truth"]
        canonical = gt["canonical_answer"]
        shapes = [canonical, "Either: " + canonical + " Or, equally possible, the opposite.",
                  ", ".join(gt["key_facts"]), "It would be wrong to say that " + canonical,
                  "I do not have enough information to answer."]
        for answer in shapes:
            for fact in gt["key_facts"]:
                settled = cheap_grade(FactTask(q["prompt"], fact, answer))
                match = match_fact(fact, AnswerText(answer))
                if settled is None:
                    assert match.reason in VETO_REASONS, (fact, answer)
                    continue
                assert settled.method in ("matcher", "abstain"), fact
                assert settled.grade == float(match.matched)


def _row(detail: dict) -> object:
    from lens.scoring.foundations.types import QuestionScores
    return QuestionScores(key="a|s|0|q", unit_key="a|s|0", adapter="a", scope_id="s", repeat=0,
                          question_id="q", question_type="negative", checkpoint=1,
                          status="answered", metrics={"fact_recall": 0.0},
                          detail={"fact_recall": detail})


def test_offline_grades_keep_the_matchers_rules() -> None:
    """The model's grades replace the matcher's, but a reversed conclusion still voids every
    fact, a value the matcher finds denied earns nothing, and an unbacked verdict no point."""
    from lens.scoring.grading.fact_credit import apply_offline as _apply_offline
    from lens.scoring.grading.offline_grader import FactGrade

    facts = [{"fact": "auth p99 latency: 531 ms", "matched": False, "reason": "denied"},
             {"fact": "the cache TTL cut caused the rise", "matched": False, "reason": "absent"}]
    grades = {"auth p99 latency: 531 ms": FactGrade(1.0, "model"),
              "the cache TTL cut caused the rise": FactGrade(1.0, "model")}
    stated = {"conclusion": "yes", "status": "stated", "claim_stated": False,
              "cites_evidence": True}
    row = _row({"facts": facts, "conclusion": stated})
    _apply_offline(row, grades, {})
    # The denied figure is vetoed; the sentence and the backed, cited verdict count: 2 of 3.
    assert row.metrics["fact_recall"] == pytest.approx(2 / 3)
    uncited = _row({"facts": facts, "conclusion": {**stated, "cites_evidence": False}})
    _apply_offline(uncited, grades, {})
    assert uncited.metrics["fact_recall"] == pytest.approx(1 / 3)
    reversed_ = _row({"facts": facts, "conclusion": {**stated, "status": "contradicted"}})
    _apply_offline(reversed_, grades, {})
    assert reversed_.metrics["fact_recall"] == 0.0


@pytest.mark.anyio
async def test_a_fact_the_matcher_vetoes_is_not_read_by_the_model(tmp_path: Path) -> None:
    """A figure the answer denies earns no points whatever the model says (the matcher's
    veto), so lens's scoring settles it without a model call."""
    ds = write_dataset(tmp_path / "ds.json", {**DATASET, "questions": [{
        **DATASET["questions"][0],
        "ground_truth": {**DATASET["questions"][0]["ground_truth"],
                         "key_facts": [FACT, "auth p99 latency: 531 ms"]}}]})
    qid = f"{SCOPE}_q01_longitudinal"
    answer = f"{PARAPHRASE} Auth p99 latency never reached 531 ms. [{ep(2)}]"
    run = build_run(tmp_path / "runs", ds, [record(qid, answer, checkpoint=3,
                                                   retrieved=[ep(2)])])
    model = FakeModel({"banned": (0.9, 0.05)})
    scores = await score_run(run, judge=None, tiers={1}, fact_grader="local", write=False,
                             offline=grader(model))
    facts = {f["fact"]: f for f in scores.questions[0].detail["fact_recall"]["facts"]}
    assert facts[FACT]["method"] == "model"
    assert facts["auth p99 latency: 531 ms"]["method"] == "matcher"
    assert "veto" in facts["auth p99 latency: 531 ms"].get("reason", "")
    assert len(model.prompts) == 1
    assert list(facts) == [FACT, "auth p99 latency: 531 ms"]


def test_a_change_of_decision_alone_keeps_the_saved_probabilities(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The key names what the model was asked; the grader's version names the decision."""
    from lens.scoring.grading import offline_grader

    grader = offline_grader.OfflineGrader(model_identity="m")
    task = offline_grader.FactTask(question="q?", fact="the fact", answer="an answer")
    key = grader.key(task)
    monkeypatch.setattr(offline_grader, "VERSION", offline_grader.VERSION + 1)
    assert grader.key(task) == key
    monkeypatch.setattr(offline_grader, "PROBABILITY_VERSION",
                        offline_grader.PROBABILITY_VERSION + 1)
    assert grader.key(task) != key
