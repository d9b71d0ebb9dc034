"""Comparison families, with values computed by hand: the primary metric is confirmatory (Holm
over the pairs of arms on it alone), every other metric exploratory (Holm among themselves);
each verdict names the rule that decided it; the first search's MRR and NDCG get paired tests;
checklist rows name the arm that failed them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lens.commands.cli import main
from lens.report.figures.arm_comparison import arms_of, compare_pairs
from lens.report.figures.verdicts import Evidence, decide
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


def _decide(delta: float | None, margins: tuple[float, ...], floor: float | None,
            p_holm: float | None, interval: tuple[float, float] | None = None,
            mc: float | None = None, bounded: float | None = 0.001,
            scopes: int = 40) -> tuple[str, str, str]:
    return decide(Evidence(delta=delta, margins=margins, floor=floor, p_holm=p_holm,
                           alpha=0.05, interval=interval, mc_error=mc, bounded_p_holm=bounded,
                           scopes=scopes))


def test_each_verdict_names_its_rule() -> None:
    # A real difference (every test below α) within the margin of error: real but small, and
    # the reason gives both tests.
    verdict, rule, reason = _decide(0.01, (0.02, 0.015), None, 7.6e-07)
    assert (verdict, rule) == ("real but small", "margin")
    assert reason == ("p (Holm) 7.6e-07, bounded-mean test over 40 scopes p (Holm) 0.001, both "
                      "below α=0.05; |Δ| 0.010 within the margin of error ±0.020")
    assert _decide(0.1, (0.02, 0.02), 0.15, 0.001)[:2] == ("real but small", "noise floor")
    assert _decide(0.1, (0.02, 0.02), None, 0.2) == (
        "undecided", "significance", "not significant after Holm (p (Holm) 0.2 ≥ α=0.05)")
    assert _decide(0.1, (0.02, 0.02), None, 0.001, (-0.01, 0.2))[:2] == (
        "undecided", "interval")
    assert _decide(-0.1, (0.02, 0.02), None, 0.001, (-0.2, -0.05)) == (
        "worse", "significance", "p (Holm) 0.001, bounded-mean test over 40 scopes p (Holm) "
        "0.001, both below α=0.05; |Δ| 0.100 beyond the margin of error ±0.020")
    assert _decide(0.1, (0.02, 0.02), None, 0.052, None, 0.003)[:2] == (
        "undecided", "significance")
    assert _decide(None, (), None, None)[:2] == ("unknown", "none")
    # The interval inside ± the margin of error, no real difference: equivalent.
    assert _decide(0.005, (0.05, 0.04), None, 0.6, (-0.02, 0.03))[:2] == (
        "equivalent", "margin")
    # Significant by the bootstrap, but 8 scopes cannot rule out a skewed null: undecided,
    # saying how many scopes a verdict on a difference this size needs.
    verdict, rule, reason = _decide(0.1, (0.02, 0.02), None, 0.001, (0.05, 0.15),
                                    bounded=0.4, scopes=8)
    assert (verdict, rule) == ("undecided", "scopes")
    assert reason.startswith("8 scopes cannot rule out a minority of scopes far behind")
    assert "at |Δ| 0.100 a verdict at α=0.05 needs at least 44 scopes" in reason


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
