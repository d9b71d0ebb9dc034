"""``lens report``: the four files, their numbers, escaping, sections and the CLI."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from lens.commands.cli import main
from lens.report import REPORT_FILES, write_reports
from lens.report.foundations.data import load_run
from lens.report.foundations.shapes import ReportSummary
from lens.report.sections.registry import _PROVIDERS, Section, register_section_provider
from lens.stats import wilson_bounds
from tests.report.runfactory import RunSpec, make_run

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> & "q" \'s\''


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return make_run(tmp_path, RunSpec(adapters=("sqlite_fts", "null"), error_every=17))


def test_writes_all_four_files_with_consistent_numbers(run_dir: Path) -> None:
    paths = write_reports(run_dir)
    for name in REPORT_FILES:
        assert (run_dir / name).is_file(), name
    summary = ReportSummary.model_validate_json((run_dir / "summary.json").read_text())
    assert summary.primary_metric == "composite"
    assert summary.metrics == ["composite", "fact_recall", "budget_compliance"]
    # The composite is the scorer's group statistic (weights and gate on the means).
    assert summary.adapters["null"].metrics["composite"].method == "group-bootstrap"
    # The reported interval is recomputed here from the raw per-question values and their
    # scopes: Wilson at the effective n the cluster-robust variance implies, t with k − 1 df.
    scores = json.loads((run_dir / "scores.json").read_text())
    qs = [q for q in scores["questions"]
          if q["adapter"] == "null" and q["metrics"]["budget_compliance"] is not None]
    vals = np.array([q["metrics"]["budget_compliance"] for q in qs])
    scopes = sorted({q["scope_id"] for q in qs})
    p = vals.mean()
    totals = np.array([sum(q["metrics"]["budget_compliance"] for q in qs if q["scope_id"] == s)
                       for s in scopes])
    sizes = np.array([sum(1 for q in qs if q["scope_id"] == s) for s in scopes])
    k = len(scopes)
    var = np.sum((totals - sizes * p) ** 2) / len(vals) ** 2 * k / (k - 1)
    low, high = wilson_bounds(p, p * (1 - p) / var, sps.t.ppf(0.975, k - 1))
    got = summary.adapters["null"].metrics["budget_compliance"]
    assert (got.n, got.mean) == (len(vals), p)
    assert got.low == pytest.approx(low, abs=1e-12) and got.high == pytest.approx(high, abs=1e-12)
    assert got.method == "wilson-clustered" and got.n_eff is not None
    comp = summary.adapters["null"].metrics["fact_recall"]
    assert comp.method == "cluster-robust-t" and comp.clusters == 3
    assert comp.low < comp.mean < comp.high  # type: ignore[operator]
    # Errored questions are counted, not scored as zero.
    assert summary.adapters["sqlite_fts"].errored + summary.adapters["null"].errored == 3
    assert summary == paths.summary_data


def test_report_is_deterministic(run_dir: Path, tmp_path: Path) -> None:
    write_reports(run_dir)
    first = (run_dir / "summary.json").read_text()
    write_reports(run_dir, out_dir=tmp_path / "again")
    second = json.loads((tmp_path / "again" / "summary.json").read_text())
    first_d = json.loads(first)
    assert first_d["adapters"] == second["adapters"]
    assert first_d["comparisons"] == second["comparisons"]


def test_markdown_shows_checklist_intervals_and_comparison(run_dir: Path) -> None:
    write_reports(run_dir)
    md = (run_dir / "report.md").read_text()
    assert "## Pre-flight checklist" in md
    for status in ("**PASS**", "**FAIL**"):
        assert status in md
    assert re.search(r"\| composite \| 0\.\d{3} \[0\.\d{3}, 0\.\d{3}\] n=\d+ n_eff=\w+ \|", md)
    assert "### null vs sqlite_fts" in md
    assert "mcnemar-exact" in md and "paired-bootstrap" in md


def test_csv_has_one_row_per_record(run_dir: Path) -> None:
    write_reports(run_dir)
    rows = list(csv.DictReader(io.StringIO((run_dir / "questions.csv").read_text())))
    assert len(rows) == 60
    errored = [r for r in rows if r["status"] == "error"]
    assert len(errored) == 3 and all(r["composite"] == "" for r in errored)
    answered = rows[0]
    assert float(answered["composite"]) >= 0 and answered["tool_calls"] == "1"
    assert answered["search_results"] == "3"


def test_unknown_metrics_stay_unknown(tmp_path: Path) -> None:
    spec = RunSpec(metrics=lambda a, s, q, r: {"fact_recall": 0.5, "answer_quality": None},
                   disagreement_rate=None)
    run_dir = make_run(tmp_path, spec)
    paths = write_reports(run_dir)
    # A metric the scorer defines but could not compute is listed as unknown, never as 0.
    est = paths.summary_data.adapters["sqlite_fts"].metrics["answer_quality"]
    assert (est.n, est.mean, est.low, est.high) == (0, None, None, None)
    md = paths.markdown.read_text()
    assert "| answer_quality | unknown (n=0) |" in md
    assert "No position-swapped judge verdicts" in md
    rows = list(csv.DictReader(io.StringIO(paths.csv.read_text())))
    assert rows[0]["answer_quality"] == "" and rows[0]["fact_recall"] == "0.500000"


def test_small_groups_get_no_bootstrap_interval(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, RunSpec(scopes=1, questions_per_scope=9))
    ests = write_reports(run_dir).summary_data.adapters["sqlite_fts"].metrics
    assert ests["fact_recall"].n == 9 and ests["fact_recall"].low is None
    assert ests["composite"].low is None and ests["composite"].mean is not None
    assert ests["budget_compliance"].low is not None  # Wilson is fine at small n


def test_unscored_run_still_reports(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, RunSpec(scored=False))
    paths = write_reports(run_dir)
    s = paths.summary_data
    assert not s.scored and s.primary_metric is None
    assert any("not scored" in n for n in s.notes)
    assert {c.id: c.status for c in s.checklist}["scored"] == "fail"
    html = paths.html.read_text()
    assert 'id="summary-table"' in html and "unknown" in html


def test_all_foreign_text_is_escaped(tmp_path: Path) -> None:
    spec = RunSpec(adapters=(HOSTILE,), answer=lambda s, q: HOSTILE,
                   detail={"facts_missed": [HOSTILE], HOSTILE: HOSTILE})
    run_dir = make_run(tmp_path, spec)
    write_reports(run_dir)
    html = (run_dir / "report.html").read_text()
    assert html.count("<script>") == 1  # only the report's own filter script
    assert "<img" not in html  # the only way an onerror= could run is inside a real tag
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert re.search(r"""(src|href)\s*=\s*["']?https?:""", html) is None
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    md = (run_dir / "report.md").read_text()
    assert "<script>" not in md and "<img" not in md
    assert "&lt;script&gt;alert(\"x\")&lt;/script&gt;" in md
    rows = list(csv.DictReader(io.StringIO((run_dir / "questions.csv").read_text())))
    assert rows[0]["adapter"] == HOSTILE


def test_csv_neutralises_formulas(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, RunSpec(adapters=("=HYPERLINK(1)",)))
    write_reports(run_dir)
    rows = list(csv.DictReader(io.StringIO((run_dir / "questions.csv").read_text())))
    assert rows[0]["adapter"] == "'=HYPERLINK(1)"


def test_drill_down_holds_the_transcript(run_dir: Path) -> None:
    write_reports(run_dir)
    html = (run_dir / "report.html").read_text()
    assert html.count('<details class="q"') == 60
    assert "memory_search" in html and "Transcript" in html
    assert "p99 latency rose to 410ms" in html and 'class="missed"' in html
    assert "ModelError: HTTP 500" in html


def test_section_json_file_becomes_a_section(run_dir: Path) -> None:
    (run_dir / "sections").mkdir()
    (run_dir / "sections" / "goldevidence.json").write_text(json.dumps({
        "title": "GoldEvidence <b>",
        "metrics": {"value_acc": 0.8125, "cite_f1": {"mean": 0.7, "low": 0.6, "high": 0.8,
                                                     "n": 120}},
        "tables": [{"title": "by state mode", "columns": ["mode", "acc"],
                    "rows": [["kv", 0.9], ["set", None]]}],
        "notes": ["twins flip 3%"],
    }))
    paths = write_reports(run_dir)
    md = paths.markdown.read_text()
    assert "## GoldEvidence &lt;b&gt;" in md and "| value_acc | 0.812 |" in md
    assert "0.700 [0.600, 0.800] (n=120)" in md and "| set | unknown |" in md
    html = paths.html.read_text()
    assert "GoldEvidence &lt;b&gt;" in html
    ids = [s.id for s in paths.summary_data.sections]
    # lens's own sections (memory cost, retrieval) follow the scenario's.
    assert ids[0] == "goldevidence" and set(ids[1:]) <= {"memory_cost", "retrieval"}


def test_goldevidence_grades_become_the_goldevidence_section(run_dir: Path) -> None:
    pytest.importorskip("goldevidence.report")
    grades = {"run_dir": str(run_dir), "agent_model": "scripted/policy", "groups": [{
        "adapter": "<b>ledger</b>", "adapter_name": "sqlite_fts", "adapter_options": {},
        "cell": {"k": 4, "order": "shuffle"}, "prefix": "p", "repeat": 0,
        "metrics": {"n": 40, "value_acc": 0.75, "exact_acc": 0.5, "cite_f1": float("nan"),
                    "errors": 0},
        "intervals": {"value_acc": [0.6, 0.86], "exact_acc": [0.35, 0.65]}}]}
    (run_dir / "goldevidence").mkdir()
    (run_dir / "goldevidence" / "grades.json").write_text(json.dumps(grades))
    paths = write_reports(run_dir)
    assert "## GoldEvidence" in paths.markdown.read_text()
    page = paths.html.read_text()
    assert '<table class="data" id="goldevidence">' in page and "&lt;b&gt;ledger&lt;/b&gt;" in page
    section = next(s for s in paths.summary_data.sections if s.id == "goldevidence")
    assert section.data["groups"][0]["metrics"]["cite_f1"] is None  # NaN made JSON-safe
    json.loads(paths.summary.read_text())


def test_broken_section_file_is_reported_not_fatal(run_dir: Path) -> None:
    (run_dir / "sections").mkdir()
    (run_dir / "sections" / "goldevidence.json").write_text("[1, 2")
    paths = write_reports(run_dir)
    assert "section 'goldevidence' failed" in paths.markdown.read_text()


def test_registered_section_provider(run_dir: Path) -> None:
    def provider(run: object) -> Section:
        return Section(id="extra", title="Extra", markdown="## Extra\n\nhello\n",
                       html="<h2>Extra</h2>", data={"k": 1})

    def broken(run: object) -> Section:
        raise RuntimeError("nope")

    register_section_provider(provider)
    register_section_provider(broken)
    try:
        paths = write_reports(run_dir)
    finally:
        _PROVIDERS.remove(provider)
        _PROVIDERS.remove(broken)
    md = paths.markdown.read_text()
    assert "## Extra" in md and "section 'broken' failed: RuntimeError: nope" in md


def test_cli_report(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "wrote" in out and "pre-flight:" in out and "composite" in out


def test_cli_report_user_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "no such run directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 2
    assert "not a lens run directory" in capsys.readouterr().err
    run_dir = make_run(tmp_path, RunSpec())
    (run_dir / "scores.json").write_text('{"run_dir": 1}')
    assert main(["report", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "scores.json" in err and "Traceback" not in err
    assert not (run_dir / "report.md").exists()


def test_python_m_lens_report_subprocess(run_dir: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "lens", "report", str(run_dir)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (run_dir / "report.html").is_file()


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A real run (scripted policy over SQLite FTS5 on the shipped standard dataset), made once:
    its directory and how many questions it answered. Each test reports a copy of its own."""
    from lens.flow.pipeline import execute

    root = Path(__file__).resolve().parents[2]
    outcome = execute(root / "configs" / "scripted.yaml",
                      out=tmp_path_factory.mktemp("scripted"))
    return outcome.run_dir, outcome.summary.questions


def _copy(run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run, tmp_path / run.name))


def test_composite_matches_the_scorer_on_a_really_scored_run(
        scripted_run: tuple[Path, int], tmp_path: Path) -> None:
    """The report's composite and metric means are the scorer's own aggregates (scored here by
    the real tier-1 scorer on a real run), now with intervals."""
    from lens.scoring.scorer import score_run_sync

    run_dir = _copy(scripted_run[0], tmp_path)
    scores = score_run_sync(run_dir, tiers={1})
    summary = write_reports(run_dir).summary_data
    assert summary.primary_metric == "composite"
    for label, ad in summary.adapters.items():
        agg = scores.aggregates["adapter"][label]
        comp = ad.metrics["composite"]
        assert comp.method == "group-bootstrap"
        assert comp.mean == pytest.approx(agg["composite"], abs=1e-12)
        if comp.low is not None:
            assert comp.low <= comp.mean <= comp.high  # type: ignore[operator]
        for metric in ("evidence_grounding", "fact_recall", "budget_compliance"):
            if agg.get(metric) is not None:
                assert ad.metrics[metric].mean == pytest.approx(agg[metric], abs=1e-12)


def test_report_of_a_real_scripted_run(scripted_run: tuple[Path, int], tmp_path: Path) -> None:
    """A real run (scripted policy over SQLite FTS5 on the shipped standard dataset), reported
    before and after scores exist: the retrieval checks measure real tool use."""
    from lens.scoring.foundations.types import QuestionScores, RunScores

    run_dir = _copy(scripted_run[0], tmp_path)
    (run_dir / "scores.json").unlink(missing_ok=True)  # report it unscored first
    run = load_run(run_dir)
    assert len(run.rows) == scripted_run[1] > 0
    checks = {c.id: c for c in write_reports(run_dir).summary_data.checklist}
    assert checks["search_results"].status == "pass"
    assert checks["tool_calls"].status == "pass"
    assert checks["scored"].status == "fail"
    # Score budget compliance from the records themselves and report again.
    qs = [QuestionScores(key=r.record.key, unit_key=r.record.unit_key, adapter=r.record.adapter,
                         scope_id=r.record.scope_id, repeat=r.record.repeat,
                         question_id=r.record.question_id, question_type="longitudinal",
                         checkpoint=r.record.checkpoint, status=r.record.status,
                         metrics={"budget_compliance": float(bool(r.record.budget
                                                                  and r.record.budget.compliant))})
          for r in run.rows]
    (run_dir / "scores.json").write_text(RunScores(
        run_dir=str(run_dir), tiers=[1], questions=qs).model_dump_json())
    summary = write_reports(run_dir).summary_data
    est = next(iter(summary.adapters.values())).metrics["budget_compliance"]
    assert est.n == len(qs)
    if len({r.record.scope_id for r in run.rows}) == 1:
        # One scope: nothing is known of scope-to-scope variation, so the interval says so.
        assert est.method == "wilson (one scope)" and est.n_eff is None
    else:
        # Several scopes (the shipped dataset): the interval is clustered on them.
        assert est.method == "wilson-deff" and est.n_eff is not None and est.n_eff <= est.n


def test_run_without_any_question_still_reports(tmp_path: Path) -> None:
    from lens.runs.store import RunStore

    store = RunStore.create(tmp_path, "empty", "e1")
    store.write_manifest({"run_id": "e1"})  # crashed before the condition was even recorded
    store.close()
    paths = write_reports(store.root)
    status = {c.id: c.status for c in paths.summary_data.checklist}
    assert status == {"scored": "fail", "sample_size": "fail", "compare_size": "fail",
                      "seed": "warn", "search_results": "fail", "tool_calls": "fail",
                      "judge": "warn", "failures": "fail", "tool_errors": "warn",
                      "memory_calls": "warn", "adapter_lost": "pass", "future_leak": "warn",
                      "unknown_refs": "warn",
                      "dropped_questions": "pass", "empty_answer": "warn", "no_memory": "warn"}
    assert "no values to plot" in paths.html.read_text() or "not scored" in paths.html.read_text()


def test_confidence_option_narrows_every_interval(run_dir: Path, tmp_path: Path) -> None:
    assert main(["report", str(run_dir), "--out", str(tmp_path / "r90"),
                 "--confidence", "0.9"]) == 0
    assert main(["report", str(run_dir), "--out", str(tmp_path / "r95")]) == 0
    s90 = json.loads((tmp_path / "r90" / "summary.json").read_text())
    s95 = json.loads((tmp_path / "r95" / "summary.json").read_text())
    assert s90["confidence"] == 0.9
    for metric in ("budget_compliance", "fact_recall", "composite"):
        a = s90["adapters"]["null"]["metrics"][metric]
        b = s95["adapters"]["null"]["metrics"][metric]
        assert a["mean"] == b["mean"] and a["margin"] < b["margin"], metric
    assert not (run_dir / "report.md").exists()  # --out leaves the run directory alone
    assert main(["report", str(run_dir), "--confidence", "1.5"]) == 2
