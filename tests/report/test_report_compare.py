"""``lens compare``: refusal on differing conditions, --force labelling, paired verdicts, ties."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lens.commands.cli import main
from lens.core.errors import UserError
from lens.report.figures.arm_comparison import Arm, arms_of, compare_arms
from lens.report.run_comparison import compare_runs
from tests.report.runfactory import RunSpec, make_run, memory_run, unit_draw


def shifted(shift: float, binary_shift: float = 0.0):
    """Metrics where arm quality is shifted: continuous values and 0/1 outcomes."""
    def metrics(adapter: str, scope: str, qid: str, rep: int) -> dict[str, float | None]:
        u = unit_draw("q", scope, qid, rep)  # same question difficulty for every arm
        noise = unit_draw("n", adapter, scope, qid) * 0.1
        return {
            "fact_recall": min(1.0, max(0.0, 0.3 + 0.4 * u + shift + noise)),
            "composite": min(1.0, max(0.0, 0.3 + 0.4 * u + shift + noise)),
            "budget_compliance": 1.0 if u + binary_shift > 0.25 else 0.0,
        }
    return metrics


def test_refuses_differing_conditions_and_names_the_fields(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    a = make_run(tmp_path, RunSpec(name="a", seed=1))
    b = make_run(tmp_path, RunSpec(name="b", seed=2, condition_overrides={
        "judge_model": "openai/gpt-4o"}))
    with pytest.raises(UserError) as err:
        compare_runs([a, b])
    msg = str(err.value)
    assert "judge_model, seed" in msg and "--force" in msg
    out_dir = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out_dir)]) == 2
    captured = capsys.readouterr()
    assert "not comparable" in captured.err and "seed" in captured.err
    assert "Traceback" not in captured.err
    assert not out_dir.exists()


def test_runs_scored_differently_are_not_comparable(tmp_path: Path) -> None:
    a = make_run(tmp_path, RunSpec(name="a"))
    b = make_run(tmp_path, RunSpec(name="b"))
    scores = json.loads((b / "scores.json").read_text())
    scores["gate_threshold"] = 0.3
    (b / "scores.json").write_text(json.dumps(scores))
    with pytest.raises(UserError, match="scoring_gate"):
        compare_runs([a, b])
    forced = compare_runs([a, b], force=True)
    assert forced.summary.not_comparable == ["scoring_gate"]


def _tables_with_headings(md: str) -> list[tuple[str, list[str]]]:
    """Each markdown table with the lines between its heading and itself."""
    out = []
    lines = md.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):
            j = i - 1
            while j >= 0 and not lines[j].startswith("#"):
                j -= 1
            out.append((lines[j] if j >= 0 else "", lines[j + 1:i]))
        i += 1
    return out


def test_force_labels_every_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run(tmp_path, RunSpec(name="a", seed=1))
    b = make_run(tmp_path, RunSpec(name="b", seed=2, adapters=("null",)))
    out_dir = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--force", "--out", str(out_dir)]) == 0
    md = capsys.readouterr().out
    assert md == (out_dir / "compare.md").read_text()
    page = (out_dir / "compare.html").read_text()
    # Every table of the HTML page is preceded by the label too.
    before = page.split("<table")
    assert len(before) >= 4
    for i in range(1, len(before)):
        preceding = before[i - 1]
        heading = max(preceding.rfind("<h2>"), preceding.rfind("<h3>"))
        assert "not comparable: seed" in preceding[heading:], i
    tables = _tables_with_headings(md)
    assert len(tables) >= 3  # checklist, arms, one comparison
    for heading, between in tables:
        assert "**not comparable: seed**" in between, heading
    data = json.loads((out_dir / "compare.json").read_text())
    assert data["not_comparable"] == ["seed"]
    assert data["differences"] == {"seed": [1, 2]}
    assert all(c["not_comparable"] == ["seed"] for c in data["comparisons"])
    seed_check = next(c for c in data["checklist"] if c["id"] == "seed")
    assert seed_check["status"] == "fail"


def test_same_condition_compares_without_label(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    # Two runs of different adapters under one condition: the adapter is the treatment.
    a = make_run(tmp_path, RunSpec(name="a", adapters=("sqlite_fts",)))
    b = make_run(tmp_path, RunSpec(name="b", adapters=("null",)))
    assert main(["compare", str(a), str(b)]) == 0
    md = capsys.readouterr().out
    assert "not comparable" not in md
    assert "### b-id:null vs a-id:sqlite_fts" in md
    assert "30 paired questions" in md


def test_clear_difference_is_a_win_and_uses_the_right_tests() -> None:
    # 60 scopes: a verdict on a 0.15 difference at α/2 needs at least 36 even with every scope
    # alike (the bounded-mean test); 6 scopes of 100 questions would be undecided.
    run = memory_run(RunSpec(adapters=("base", "better"), scopes=60, questions_per_scope=10,
                             disagreement_rate=0.02,
                             metrics=lambda a, s, q, r: shifted(0.15 if a == "better" else 0.0,
                                                                0.3 if a == "better" else 0.0
                                                                )(a, s, q, r)))
    arms = arms_of([run])
    comp = compare_arms(arms[0], arms[1], run.metric_names, noise_floor=0.02)
    rows = {r.metric: r for r in comp.rows}
    assert comp.pairs == 600
    assert rows["budget_compliance"].test == "mcnemar-exact"
    assert rows["fact_recall"].test == "paired-bootstrap"
    for r in comp.rows:
        assert r.verdict == "better", (r.metric, r.reason)
        assert r.scopes == 60 and r.bounded_p_holm is not None and r.bounded_p_holm < 0.05
        assert r.p_holm is not None and r.p_value is not None and r.p_holm >= r.p_value
        assert r.delta.low > 0  # type: ignore[operator]
    assert rows["fact_recall"].delta.mean == pytest.approx(0.15, abs=0.02)


def test_identical_arms_are_equivalent_within_the_margin() -> None:
    run = memory_run(RunSpec(adapters=("x", "y"), scopes=4, questions_per_scope=60,
                             metrics=shifted(0.0)))
    arms = arms_of([run])
    comp = compare_arms(arms[0], arms[1], run.metric_names, noise_floor=None)
    for r in comp.rows:
        assert r.verdict == "equivalent", (r.metric, r.reason)
        assert "lies within the margin of error" in r.reason


def test_small_difference_on_few_questions_is_undecided() -> None:
    # A 1-point shift on 60 questions: inside either arm's margin of error, but neither shown
    # nor ruled out: undecided, with the test's reason.
    run = memory_run(RunSpec(adapters=("x", "y"), scopes=3, questions_per_scope=20,
                             metrics=lambda a, s, q, r: shifted(0.01 if a == "y" else 0.0)(
                                 a, s, q, r)))
    arms = arms_of([run])
    comp = compare_arms(arms[0], arms[1], ["fact_recall"], noise_floor=None)
    row = comp.rows[0]
    assert row.verdict == "undecided" and "not significant after Holm" in row.reason


def test_difference_below_judge_noise_floor_is_real_but_small_for_judge_metrics_only() -> None:
    # 6 points on 1,200 questions in 120 scopes is outside the margin of error and real, but
    # the judge flips 10% of its verdicts: on composite (judge-based) it is a real difference
    # smaller than the margin, on fact_recall a win.
    run = memory_run(RunSpec(adapters=("x", "y"), scopes=120, questions_per_scope=10,
                             disagreement_rate=0.10,
                             metrics=lambda a, s, q, r: shifted(0.06 if a == "y" else 0.0)(
                                 a, s, q, r)))
    arms = arms_of([run])
    comp = compare_arms(arms[0], arms[1], ["composite", "fact_recall"],
                        noise_floor=run.judge_disagreement)
    rows = {r.metric: r for r in comp.rows}
    assert rows["composite"].verdict == "real but small"
    assert "below the judge-noise floor 0.100" in rows["composite"].reason
    assert rows["fact_recall"].verdict == "better", rows["fact_recall"].reason
    assert rows["fact_recall"].noise_floor is None


def test_pairs_match_by_scope_question_and_repeat() -> None:
    a = memory_run(RunSpec(name="a", scopes=2, questions_per_scope=10, repeats=2))
    b = memory_run(RunSpec(name="b", scopes=2, questions_per_scope=10, repeats=1))
    comp = compare_arms(Arm("a", a, "sqlite_fts"), Arm("b", b, "sqlite_fts"),
                        a.metric_names, noise_floor=None)
    assert (comp.pairs, comp.unmatched_a, comp.unmatched_b) == (20, 20, 0)


def test_compare_needs_two_arms(tmp_path: Path) -> None:
    a = make_run(tmp_path, RunSpec(name="a"))
    with pytest.raises(UserError, match="only one arm"):
        compare_runs([a])
    with pytest.raises(UserError, match="given twice"):
        compare_runs([a, a])


def test_single_run_with_two_adapters_compares(tmp_path: Path) -> None:
    a = make_run(tmp_path, RunSpec(name="a", adapters=("one", "two")))
    result = compare_runs([a])
    assert re.search(r"### two vs one", result.markdown)
    assert result.summary.not_comparable == []


def _decide(delta: float | None, margins: tuple[float | None, ...], floor: float | None,
            p_holm: float | None, interval: tuple[float, float] | None = None,
            mc_error: float | None = None) -> tuple[str, str, str]:
    from lens.report.figures.verdicts import Evidence, decide

    return decide(Evidence(delta=delta, margins=margins, floor=floor, p_holm=p_holm, alpha=0.05,
                           interval=interval, mc_error=mc_error, bounded_p_holm=0.001,
                           scopes=50))


def test_verdict_needs_test_and_clustered_interval_to_agree() -> None:
    # Significant by the (independent-pairs) test, but the scope-resampled interval spans 0.
    v, rule, reason = _decide(0.2, (0.05, 0.05), None, 0.001, (-0.1, 0.4))
    assert v == "undecided" and rule == "interval" and "includes 0" in reason
    assert _decide(0.2, (0.05, 0.05), None, 0.001, (0.1, 0.3))[0] == "better"
    assert _decide(-0.2, (0.05, 0.05), None, 0.001, (-0.3, -0.1))[0] == "worse"
    assert _decide(0.2, (0.05, None), 0.25, 0.001, (0.1, 0.3))[0] == "real but small"
    assert "the margin of error is unknown" in _decide(0.2, (None, None), None, 0.001)[2]
    assert _decide(None, (0.1,), None, None)[0] == "unknown"


def test_compare_shows_the_same_numbers_as_each_run_report(tmp_path: Path) -> None:
    from lens.report import write_reports

    a = make_run(tmp_path, RunSpec(name="a", adapters=("sqlite_fts",)))
    b = make_run(tmp_path, RunSpec(name="b", adapters=("null",)))
    result = compare_runs([a, b])
    for run_dir, arm in ((a, "a-id:sqlite_fts"), (b, "b-id:null")):
        summary = write_reports(run_dir).summary_data
        own = next(iter(summary.adapters.values())).metrics
        assert result.summary.arms[arm] == {m: own[m] for m in result.summary.metrics}


def test_adversary_one_scope_cannot_carry_a_win() -> None:
    # Gaming attempt: an arm tuned to one scope is far better there and equal elsewhere. Over
    # 600 questions that is "significant" if questions are independent; across 6 scopes it is
    # one scope's luck, and the verdict must not be a win.
    def metrics(adapter: str, scope: str, qid: str, rep: int) -> dict[str, float | None]:
        u = unit_draw("q", scope, qid)
        boost = 0.5 if adapter == "tuned" and scope == "scope_00" else 0.0
        return {"fact_recall": min(1.0, 0.2 + 0.4 * u + boost)}

    run = memory_run(RunSpec(adapters=("base", "tuned"), scopes=6, questions_per_scope=100,
                             metrics=metrics))
    comp = compare_arms(*arms_of([run]), ["fact_recall"], noise_floor=None)
    row = comp.rows[0]
    assert row.verdict == "undecided", row.reason
    assert row.delta.low is not None and row.delta.low <= 0 <= row.delta.high  # type: ignore
    # Treating the 600 questions as independent would have called it a clear win.
    from scipy import stats as sps

    deltas = [metrics("tuned", r.record.scope_id, r.record.question_id, 0)["fact_recall"]
              - metrics("base", r.record.scope_id, r.record.question_id, 0)["fact_recall"]
              for r in run.rows_for("base")]  # type: ignore[operator]
    assert sps.ttest_1samp(deltas, 0.0).pvalue < 1e-6


def test_p_value_near_alpha_is_undecided() -> None:
    v, _, reason = _decide(0.2, (0.05, 0.05), None, 0.051, (0.1, 0.3), mc_error=0.002)
    assert v == "undecided" and "Monte Carlo error" in reason
    assert "Monte Carlo error" in _decide(0.2, (0.05, 0.05), None, 0.049, (0.1, 0.3),
                                          mc_error=0.002)[2]
    assert _decide(0.2, (0.05, 0.05), None, 0.045, (0.1, 0.3), mc_error=0.002)[0] == "better"
    assert "not significant" in _decide(0.2, (0.05, 0.05), None, 0.055, (0.1, 0.3),
                                        mc_error=0.002)[2]
    # An exact test has no Monte Carlo error: never within it.
    assert "not significant" in _decide(0.2, (0.05, 0.05), None, 0.0500001, (0.1, 0.3),
                                        mc_error=0.0)[2]


def test_markdown_prints_monte_carlo_error_and_effective_n(tmp_path: Path) -> None:
    a = make_run(tmp_path, RunSpec(name="a", adapters=("fts",), scopes=5, questions_per_scope=20,
                                   metrics=shifted(0.0)))
    b = make_run(tmp_path, RunSpec(name="b", adapters=("vec",), scopes=5, questions_per_scope=20,
                                   metrics=shifted(0.05)))
    result = compare_runs([a, b])
    fr = next(r for r in result.summary.comparisons[0].rows if r.metric == "fact_recall")
    assert fr.p_mc_error is not None and fr.p_mc_error > 0
    assert re.search(r"\| fact_recall \|.*\| \d\.\d+(e-\d+)? ±0\.\d{4} \|", result.markdown)
    assert re.search(r"n=100 n_eff=\d+", result.markdown)


def test_three_arms_get_friedman_and_every_pair(tmp_path: Path) -> None:
    run = memory_run(RunSpec(adapters=("x", "y", "z"), scopes=6, questions_per_scope=30,
                             metrics=lambda a, s, q, r: shifted(
                                 {"x": 0.0, "y": 0.1, "z": 0.2}[a])(a, s, q, r)))
    from lens.report.figures.arm_comparison import compare_pairs, many_arms

    arms = arms_of([run])
    comps = compare_pairs(arms, ["fact_recall", "budget_compliance"], noise_floor=None)
    assert [(c.arm_a, c.arm_b) for c in comps] == [("x", "y"), ("x", "z"), ("y", "z")]
    # Holm within each family of 3 pairs (fact_recall, the first metric, is confirmatory;
    # budget_compliance exploratory): each family's smallest raw p is multiplied by 3.
    for metric in ("fact_recall", "budget_compliance"):
        rows = [r for c in comps for r in c.rows if r.metric == metric]
        smallest = min(rows, key=lambda r: r.p_value)  # type: ignore[arg-type, return-value]
        assert smallest.p_holm == pytest.approx(min(1.0, 3 * smallest.p_value))  # type: ignore[operator]
    friedman = {f.metric: f for f in many_arms(arms, ["fact_recall", "composite"])}
    # Every scope ranks x < y < z on fact_recall: W = 1.
    assert friedman["fact_recall"].kendall_w == pytest.approx(1.0)
    assert friedman["fact_recall"].scopes == 6 and friedman["fact_recall"].df == 2
    assert "composite" in friedman


def test_repeats_are_reduced_per_question_with_the_configured_reducer() -> None:
    # Two repeats that disagree on every third question: pass@... "any" lifts the rate, the
    # flip rate reports the noise, and pairs are made per question, not per repeat.
    def flaky(adapter: str, scope: str, qid: str, rep: int) -> dict[str, float | None]:
        solid = unit_draw("q", scope, qid) > 0.3
        flips = int(qid[-1]) % 3 == 0
        ok = solid if not flips else rep == 0
        return {"budget_compliance": 1.0 if ok else 0.0}

    from lens.report.figures.estimates import estimates

    base = RunSpec(adapters=("x",), scopes=5, questions_per_scope=30, repeats=2, metrics=flaky)
    run = memory_run(base)
    mean = estimates(run, run.rows, ["budget_compliance"], confidence=0.95)["budget_compliance"]
    run.manifest["config"] = {"scoring": {"repeat_reducer": "any"}}
    best = estimates(run, run.rows, ["budget_compliance"], confidence=0.95)["budget_compliance"]
    assert mean.n == best.n == 150  # questions, not question × repeat
    assert best.mean > mean.mean  # type: ignore[operator]
    assert mean.flip_rate is not None and 0.2 < mean.flip_rate < 0.45
    run.manifest["config"] = {"scoring": {"repeat_reducer": "median"}}
    with pytest.raises(UserError, match=r"repeat_reducer.*mean, majority, any or pass@K"):
        estimates(run, run.rows, ["budget_compliance"], confidence=0.95)


def test_three_runs_forced_label_the_friedman_table_too(tmp_path: Path) -> None:
    runs = [make_run(tmp_path, RunSpec(name=n, seed=i, adapters=(n,), scopes=5,
                                       questions_per_scope=12, metrics=shifted(0.05 * i)))
            for i, n in enumerate(("a", "b", "c"))]
    result = compare_runs(runs, force=True)
    assert result.summary.many_arms and len(result.summary.comparisons) == 3
    tables = _tables_with_headings(result.markdown)
    assert any(h == "## All arms at once" for h, _ in tables)
    for heading, between in tables:
        assert "**not comparable: seed**" in between, heading
    page = result.html
    assert 'id="many-arms"' in page
    before = page.split('<table class="data" id="many-arms"')[0]
    assert "not comparable: seed" in before[before.rfind("<h2>"):]


def test_run_report_with_three_adapters_has_friedman(tmp_path: Path) -> None:
    from lens.report import write_reports

    run = make_run(tmp_path, RunSpec(name="r", adapters=("x", "y", "z"), scopes=5,
                                     questions_per_scope=12))
    summary = write_reports(run).summary_data
    assert {f.metric for f in summary.many_arms} >= {"fact_recall"}
    assert "## All arms at once" in (run / "report.md").read_text()
    assert 'id="many-arms"' in (run / "report.html").read_text()


def test_refusal_shows_where_long_values_differ(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A long differing value is shown from where the runs differ (never cut before it), and of
    a dict only the keys that differ."""
    long_a = "/data/" + "x" * 120 + "/set-a.json"
    long_b = "/data/" + "x" * 120 + "/set-b.json"
    a = make_run(tmp_path, RunSpec(name="a", condition_overrides={
        "dataset_path_note": long_a, "budget": {"max_turns": 4, "max_tool_calls": 3}}))
    b = make_run(tmp_path, RunSpec(name="b", condition_overrides={
        "dataset_path_note": long_b, "budget": {"max_turns": 6, "max_tool_calls": 3}}))
    assert main(["compare", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    line = next(ln for ln in err.splitlines() if "dataset_path_note:" in ln)
    assert "set-a.json" in line and "set-b.json" in line and "…" in line
    budget = next(ln for ln in err.splitlines() if ln.strip().startswith("budget:"))
    assert '{"max_turns": 4}' in budget and '{"max_turns": 6}' in budget
    assert "max_tool_calls" not in budget


def test_verdict_words_and_reasons_in_compare_and_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lens.report import write_reports

    def lifted(adapter: str, scope: str, qid: str, rep: int) -> dict[str, float | None]:
        return shifted(0.2 if adapter == "good" else 0.0)(adapter, scope, qid, rep)

    spec = RunSpec(name="w", adapters=("base", "good"), scopes=50, questions_per_scope=4,
                   metrics=lifted)
    run = make_run(tmp_path, spec)
    out = tmp_path / "cmp"
    assert main(["compare", str(run), "--out", str(out)]) == 0
    md = capsys.readouterr().out
    row = next(line for line in md.splitlines()
               if line.startswith("| fact_recall | exploratory |"))
    # The verdict in words, its rule and its reason in one cell of one line.
    assert "| good better than base (significance rule): p (Holm) " in row
    assert "bounded-mean test over 50 scopes" in row and "beyond the margin of error" in row
    html = (out / "compare.html").read_text()
    assert ">good better than base</span> (significance rule): p (Holm) " in html
    report = write_reports(run)
    text = (run / "report.md").read_text()
    assert "good better than base (significance rule)" in text
    assert report.summary_data.comparisons[0].rows[0].verdict == "better"
