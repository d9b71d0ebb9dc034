"""Comparison families, with values computed by hand: the primary metric is confirmatory (Holm
over the pairs of arms on it alone), every other metric exploratory (Holm among themselves);
each verdict names the rule that decided it; the first search's MRR and NDCG get paired tests;
checklist rows name the arm that failed them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lens.commands.cli import main
from lens.report.arm_comparison import _verdict, arms_of, compare_pairs
from lens.stats import holm, holm_by_family
from tests.report.runfactory import RunSpec, make_run, memory_run


def test_holm_runs_within_each_family() -> None:
    p = [0.01, 0.04, 0.03, 0.02, 0.5]
    fam = ["c", "c", "c", "e", "e"]
    # c: 0.01·3 = 0.03; 0.03·2 = 0.06; max(0.06, 0.04·1) = 0.06. e: 0.02·2 = 0.04; 0.5.
    assert holm_by_family(p, fam) == pytest.approx([0.03, 0.06, 0.06, 0.04, 0.5])
    # Pooled, the primary's 0.01 would be 0.01·5 = 0.05: not significant at α = 0.05.
    assert holm(p) == pytest.approx([0.05, 0.09, 0.09, 0.08, 0.5])
    assert holm_by_family([None, 0.2], ["c", "c"]) == [None, 0.2]
    with pytest.raises(ValueError):
        holm_by_family([0.1], [])


def test_each_verdict_names_its_rule() -> None:
    # Significant after Holm, yet within the margin of error: a tie by the margin rule, and
    # the reason says what the test alone would have said.
    verdict, rule, reason = _verdict(0.01, (0.02, 0.015), None, 7.6e-07, 0.05)
    assert (verdict, rule) == ("tie", "margin")
    assert reason == ("|Δ| 0.010 within margin of error ±0.020; the test alone would call it "
                      "(p (Holm) 7.6e-07 is below α=0.05)")
    assert _verdict(0.1, (0.02, 0.02), 0.15, 0.001, 0.05)[:2] == ("tie", "noise floor")
    assert _verdict(0.1, (0.02, 0.02), None, 0.2, 0.05) == (
        "tie", "significance", "not significant after Holm (p=0.2)")
    assert _verdict(0.1, (0.02, 0.02), None, 0.001, 0.05, (-0.01, 0.2))[:2] == (
        "tie", "interval")
    assert _verdict(-0.1, (0.02, 0.02), None, 0.001, 0.05, (-0.2, -0.05)) == (
        "a", "significance", "significant after Holm (p=0.001)")
    assert _verdict(0.1, (0.02, 0.02), None, 0.052, 0.05, None, 0.003)[:2] == (
        "borderline", "significance")
    assert _verdict(None, (), None, None, 0.05)[:2] == ("unknown", "none")


def shifted(shift: float):
    def metrics(adapter: str, scope: str, qid: str, rep: int) -> dict[str, float | None]:
        base = (int(qid[-3:]) % 5) / 10
        b = shift if adapter == "b" else 0.0
        return {"composite": base + b, "fact_recall": base + b / 2,
                "budget_compliance": 1.0 if int(qid[-3:]) % 3 or adapter == "b" else 0.0}
    return metrics


def test_primary_metric_is_its_own_family() -> None:
    run = memory_run(RunSpec(adapters=("a", "b"), scopes=6, questions_per_scope=10,
                             metrics=shifted(0.05)))
    (comp,) = compare_pairs(arms_of([run]), ["composite", "fact_recall", "budget_compliance"],
                            noise_floor=None)
    rows = {r.metric: r for r in comp.rows}
    assert rows["composite"].family == "confirmatory"
    assert {rows[m].family for m in ("fact_recall", "budget_compliance")} == {"exploratory"}
    # One pair of arms: the confirmatory family holds one test, so Holm leaves its p alone.
    assert rows["composite"].p_holm == rows["composite"].p_value
    # The exploratory family holds two: the smaller p doubles, the larger keeps the maximum.
    pf, pb = rows["fact_recall"].p_value, rows["budget_compliance"].p_value
    assert pf is not None and pb is not None
    lo, hi = sorted([pf, pb])
    expect = {pf: min(1.0, 2 * lo) if pf == lo else max(min(1.0, 2 * lo), hi),
              pb: min(1.0, 2 * lo) if pb == lo else max(min(1.0, 2 * lo), hi)}
    assert rows["fact_recall"].p_holm == pytest.approx(expect[pf])
    assert rows["budget_compliance"].p_holm == pytest.approx(expect[pb])
    # budget_compliance: a fails q%3 == 0 (4 of 10 per scope: q000, q003, q006, q009), b never;
    # exact McNemar on 24 discordant pairs all one way: 2 · 0.5^24.
    assert rows["budget_compliance"].test == "mcnemar-exact"
    assert pb == pytest.approx(2 * 0.5 ** 24)


def retrieval(mrr: float, ndcg: float) -> dict:
    return {"retrieval": {"first": {"mrr": mrr, "ndcg@10": ndcg}}}


def test_compare_pairs_retrieval_and_names_failing_arms(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run(tmp_path, RunSpec(name="a", detail=retrieval(0.5, 0.25)))
    b = make_run(tmp_path, RunSpec(name="b", detail=retrieval(1.0, 0.75), error_every=3))
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out)]) == 0
    md = capsys.readouterr().out
    summary = json.loads((out / "compare.json").read_text())
    (comp,) = summary["comparisons"]
    rows = {r["metric"]: r for r in comp["rows"]}
    assert rows[summary["metrics"][0]]["family"] == "confirmatory"
    mrr = rows["first_search_mrr"]
    # 30 questions, 10 errored in b: 20 pairs, each Δ = 1.0 − 0.5; every Δ of one sign, so the
    # exact sign test: 2 · 0.5^20.
    assert mrr["family"] == "exploratory" and mrr["pairs"] == 20
    assert mrr["mean_a"] == pytest.approx(0.5) and mrr["mean_b"] == pytest.approx(1.0)
    assert mrr["delta"]["mean"] == pytest.approx(0.5)
    assert mrr["p_value"] == pytest.approx(2 * 0.5 ** 20)
    assert rows["first_search_ndcg@10"]["delta"]["mean"] == pytest.approx(0.5)
    assert "first_search_mrr | exploratory | 20 |" in md
    assert "rule):" in md and "confirmatory comparison" in md
    failures = next(c for c in summary["checklist"] if c["id"] == "failures")
    assert failures["status"] == "fail" and failures["failing"] == ["b-id:sqlite_fts"]
    assert "failed by b-id:sqlite_fts — " in md
