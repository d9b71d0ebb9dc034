from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from goldevidence.baselines import predictions
from goldevidence.config import preset
from goldevidence.generate import generate
from goldevidence.grade import grade
from goldevidence.grammar import Entry
from goldevidence.retrieval import RetrievalAnswerer, RetrievalOptions, build_candidates
from goldevidence.selectors import LinearSelector, export_record, rerank, train_linear
from lens.models.base import Completion, CompletionRequest, Usage


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return generate(preset("quick", state_mode="kv_commentary", note_rate=0.4), seed=9)


def _grade(rows: list[dict], preds: list[dict]):
    return grade(rows, {p["id"]: p for p in preds})


def test_ledger_is_perfect_and_naive_is_not(rows: list[dict]) -> None:
    for protocol in ("open_book", "closed_book"):
        assert _grade(rows, list(predictions(rows, "ledger", protocol))).exact_acc == 1.0
        assert _grade(rows, list(predictions(rows, "naive", protocol))).value_acc < 0.8


def test_closed_book_never_receives_the_log(rows: list[dict]) -> None:
    preds = list(predictions([{**rows[0], "document": "SECRET"}], "ledger", "closed_book"))
    assert preds[0]["value"] == rows[0]["gold"]["value"]
    assert all("SECRET" not in json.dumps(p) for p in preds)


E = [Entry("U000003", 5, "SET", "tag.01", "amber-0001"),
     Entry("U000001", 9, "SET", "tag.01", "teal-0002"),
     Entry("U000002", 9, "NOTE", "tag.01", "jade-0003"),
     Entry("U000009", 2, "CLEAR", "tag.01", None)]


def test_rerankers_on_a_hand_made_set() -> None:
    assert rerank("latest_step", E, "q") == 2  # the NOTE ties on step and comes later
    assert rerank("prefer_update_latest", E, "q") == 1
    assert rerank("prefer_set_latest", E, "q") == 1
    assert rerank("last_occurrence", E, "q") == 3
    assert rerank("none", E, "q") is None
    with pytest.raises(ValueError):
        rerank("linear", E, "q")


def _opts(**kw: object) -> RetrievalOptions:
    return RetrievalOptions(selector_only=True, rerank="prefer_update_latest", **kw)


def test_candidate_options(rows: list[dict]) -> None:
    r = next(x for x in rows if x["meta"]["writes_to_key"] and x["meta"]["writes_to_key"] > 4
             and x["gold"]["support_ids"])
    gold = r["gold"]["support_ids"][0]
    for order, pos in (("gold_first", 0), ("gold_last", -1)):
        cs = build_candidates(r, RetrievalOptions(k=4, order=order))
        assert cs.entries[pos].uid == gold
    cs = build_candidates(r, RetrievalOptions(k=4, order="gold_middle"))
    assert [e.uid for e in cs.entries].index(gold) == (len(cs.entries) - 1) // 2
    assert len(build_candidates(r, RetrievalOptions(k=2)).entries) == 2
    same = build_candidates(r, RetrievalOptions(k=2, wrong_type="same_key")).entries
    assert len(same) == 3 and {e.key for e in same} == {r["meta"]["key"]}
    other = build_candidates(r, RetrievalOptions(k=2, wrong_type="other_key")).entries
    assert sum(e.key != r["meta"]["key"] for e in other) == 1
    dropped = build_candidates(r, RetrievalOptions(k=4, drop_prob=1.0))
    assert gold not in [e.uid for e in dropped.entries] and dropped.dropped
    filt = build_candidates(r, RetrievalOptions(k=16, authority_filter=True)).entries
    assert all(e.op != "NOTE" for e in filt)


async def _run(answerer: RetrievalAnswerer, rows: list[dict]) -> list[dict]:
    return [await answerer.answer(r) for r in rows]


@pytest.mark.anyio
async def test_selectors_and_decomposition(rows: list[dict]) -> None:
    g = _grade(rows, await _run(RetrievalAnswerer(_opts(k=8)), rows))
    assert g.value_acc == 1.0 and g.gold_present_rate == 1.0
    g = _grade(rows, await _run(RetrievalAnswerer(RetrievalOptions(
        k=8, selector_only=True, rerank="last_occurrence")), rows))
    assert g.selection_rate is not None and g.selection_rate < 0.7
    g = _grade(rows, await _run(RetrievalAnswerer(_opts(k=8, drop_prob=1.0)), rows))
    assert g.gold_present_rate == 0.0
    # No row had its gold in front of the answerer: that accuracy cannot be computed.
    assert g.accuracy_when_gold_present is None and g.selection_rate is None


def test_linear_selector_learns_to_pick_the_authoritative_latest(rows: list[dict],
                                                                 tmp_path: Path) -> None:
    import numpy as np

    opts = RetrievalOptions(k=8)
    sets = []
    for r in rows:
        cs = build_candidates(r, opts)
        if cs.entries:
            rec = export_record(r["id"], cs.entries, r["question"], cs.gold_uid)
            sets.append((np.asarray(rec["features"]), rec["gold_index"]))
    model = train_linear(sets)
    path = tmp_path / "sel.json"
    model.save(path)
    loaded = LinearSelector.load(path)
    assert np.allclose(loaded.weights, model.weights)
    fresh = generate(preset("quick", state_mode="kv_commentary", note_rate=0.4), seed=10)
    a = RetrievalAnswerer(RetrievalOptions(k=8, rerank="linear", selector_only=True,
                                           selector_path=path))
    g = _grade(fresh, anyio.run(_run, a, fresh))
    assert g.value_acc is not None and g.value_acc > 0.95
    untrained = LinearSelector(np.zeros_like(model.weights))
    assert untrained.scores(E, "q") == pytest.approx([0.25] * 4)


class FirstLineModel:
    """A stand-in model that answers with the first candidate line it is shown."""

    provider = "test"
    model = "first-line"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def complete(self, request: CompletionRequest) -> Completion:
        prompt = request.messages[-1].content
        self.prompts.append(prompt)
        line = next(ln for ln in prompt.splitlines() if ln.startswith("- ["))
        uid = line[3:10]
        value = line.split(" = ", 1)[1] if " = " in line else None
        if "support_id\"}" in prompt:
            text = json.dumps({"support_id": uid})
        else:
            text = json.dumps({"value": value, "support_ids": [uid]})
        return Completion(text=text, usage=Usage(prompt_tokens=len(prompt) // 4,
                                                 completion_tokens=10))

    async def aclose(self) -> None:
        return None


@pytest.mark.anyio
async def test_model_answerer_passes_sandwich_and_usage(rows: list[dict]) -> None:
    direct = [r for r in rows if r["meta"]["query_type"] == "direct"][:10]
    model = FirstLineModel()
    a = RetrievalAnswerer(RetrievalOptions(k=4, order="gold_first", query_sandwich=True), model)
    preds = await _run(a, direct)
    assert all(p["passes"] == 1 and p["usage"]["prompt_tokens"] > 0 for p in preds)
    assert all(m.count(direct[0]["question"].split(":")[0]) <= 2 for m in model.prompts)
    assert model.prompts[0].count("Question ") == 2  # the question before and after
    g = _grade(direct, preds)
    assert g.value_acc == 1.0  # gold first and a first-line reader
    model2 = FirstLineModel()
    a2 = RetrievalAnswerer(RetrievalOptions(k=4, order="gold_last", pick_then_answer=True),
                           model2)
    preds2 = await _run(a2, direct)
    assert all(p["passes"] == 2 for p in preds2 if p["presented_ids"])
    assert _grade(direct, preds2).value_acc < 1.0
    with pytest.raises(ValueError):
        RetrievalAnswerer(RetrievalOptions(k=4))  # no model and no selector
