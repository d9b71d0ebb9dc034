"""``lens compare --sequential`` through the real CLI: where a run answering scope by scope in
the seeded order would have settled the primary metric's verdicts, on how many questions, and
whether they agree with the full run; bad flags are refused with every problem named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lens.commands.cli import main
from lens.report.figures.arm_comparison import arms_of, compare_pairs
from lens.report.figures.sequential import sequential_blocks, sequential_replay
from tests.report.runfactory import RunSpec, make_run, memory_run, unit_draw

LIFT = {"base": 0.0, "better": 0.3, "same": 0.0}


def _metrics(adapter: str, scope: str, qid: str, rep: int) -> dict[str, float | None]:
    # A scope effect shared by every arm, question noise, and a lift of 0.3 for "better".
    v = 0.2 + 0.2 * unit_draw("s", scope) + 0.2 * unit_draw("q", adapter, scope, qid)
    return {"fact_recall": min(1.0, v + LIFT[adapter]), "budget_compliance": 1.0}


def _spec() -> RunSpec:
    # 60 scopes: the default sequence holds α for any bounded differences and so needs a few
    # dozen blocks to settle (an equivalence within ±0.1 the longest).
    return RunSpec(name="seq", adapters=("base", "better", "same"), scopes=60,
                   questions_per_scope=5, metrics=_metrics)


def test_compare_sequential_stops_early_with_the_full_runs_verdicts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(tmp_path, _spec())
    out = tmp_path / "cmp"
    assert main(["compare", str(run), "--sequential", "--margin", "0.1", "--out",
                 str(out)]) == 0
    md = capsys.readouterr().out
    summary = json.loads((out / "compare.json").read_text())
    seq = summary["sequential"]
    # The primary metric (the composite, here over fact_recall and budget_compliance).
    assert seq["metric"] == summary["metrics"][0] and seq["method"] == "betting"
    assert seq["total_blocks"] == 60 and sorted(seq["order"]) == sorted(set(seq["order"]))
    pairs = {(p["arm_a"], p["arm_b"]): p for p in seq["pairs"]}
    # Three pairs share α = 0.05.
    assert all(p["alpha"] == pytest.approx(0.05 / 3) for p in pairs.values())
    clear = pairs[("base", "better")]
    assert clear["verdict"] == "better" and clear["full_verdict"] == "better" and clear["agrees"]
    assert clear["low"] > 0 and clear["blocks"] <= 30
    assert pairs[("better", "same")]["verdict"] == "worse"
    # base against same differ only by question noise: a close call or equivalent within
    # ±0.1, never a win.
    assert pairs[("base", "same")]["verdict"] in ("equivalent", "undecided")
    assert seq["questions_used"] == 3 * 5 * seq["blocks"]
    assert seq["questions_total"] == 3 * 5 * 60
    # Each verdict with its reason on the same line.
    assert "| better: the confidence sequence [" in md and "lies above 0 after" in md
    assert "## Sequential verdict" in md and "| same vs base |" in md
    assert "Sequential verdict" in (out / "compare.html").read_text()


def test_compare_without_sequential_has_no_section(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(tmp_path, _spec())
    assert main(["compare", str(run)]) == 0
    assert "Sequential verdict" not in capsys.readouterr().out


def test_bad_sequential_flags_are_refused_together(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(tmp_path, _spec())
    assert main(["compare", str(run), "--sequential", "--margin", "-0.1",
                 "--look-every", "0"]) == 2
    err = capsys.readouterr().err
    assert "--margin -0.1" in err and "--look-every 0" in err


def test_replay_order_does_not_depend_on_scope_names() -> None:
    run = memory_run(_spec())
    arms = arms_of([run])
    comps = compare_pairs(arms, ["fact_recall"], noise_floor=None)
    first = sequential_replay(arms, "fact_recall", comps, margin=0.1)
    assert first is not None and first.settled
    # The agent's question texts (the first user message) decide the order; with none, ids.
    assert len(first.order) == 60


def test_a_metric_no_scope_has_says_so() -> None:
    run = memory_run(_spec())
    arms = arms_of([run])
    out = sequential_replay(arms, "no_such_metric", [], margin=0.1)
    assert out is not None and out.note is not None and "no_such_metric" in out.note
    blocks = sequential_blocks(out)
    assert "not computed" in blocks[-1].text  # type: ignore[attr-defined]
