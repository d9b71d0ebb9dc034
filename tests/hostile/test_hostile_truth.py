"""A run tells the truth about itself, through the real CLI: lost units, errored arms and arms that
broke the adapter contract exit 1, a checklist row gates the exit status when ``--fail-on``
asks, failed tool calls are counted per arm (terminal, usage table, questions.csv, checklist
with the first message) and refs that name nothing the adapter ingested or declared get a
checklist row naming the adapter. Each failure path checks the terminal, the checklist, the
report and the exit status."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.core.helpers import make_dataset, write_json
from tests.hostile.test_hostile_runs import only_run, write_config
from tests.support.cli import Lens, Result, cli_runner
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

MOD = "tests.hostile.truth_adapters"


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _dataset(tmp_path: Path) -> Path:
    data = make_dataset(n_episodes=4, checkpoints=(2, 4), questions_per_checkpoint=2)
    # Punctuation a query language may refuse: the scripted policy searches with the prompt.
    for q in data["questions"]:
        q["prompt"] = q["prompt"].rstrip("?") + ' (the "widget" count: per day?)'
    return write_json(tmp_path / "ds.json", data)


def _run(lens: Lens, tmp_path: Path, adapters: list[dict[str, Any]],
         *extra: str, agent: dict[str, Any] | None = None) -> tuple[Result, Path]:
    cfg = write_config(tmp_path / "run.yaml", name="truth",
                       dataset={"path": str(_dataset(tmp_path))}, adapters=adapters,
                       agent=agent or {"model": "scripted/policy"}, out_dir="runs",
                       cache={"enabled": False})
    res = lens("run", str(cfg), *extra)
    return res, only_run(tmp_path / "runs")


def _checklist(run_dir: Path) -> dict[str, dict[str, Any]]:
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    return {c["id"]: c for c in summary["checklist"]}


def _md_row(run_dir: Path, title: str) -> str:
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    return next(line for line in md.splitlines() if title in line)


def test_an_arm_whose_questions_all_errored_exits_1(tmp_path: Path, lens: Lens) -> None:
    def respond(req: RecordedRequest) -> Reply:
        return Reply.error(400, "invalid option value for 'reasoning_effort'")

    with FakeOpenAI(respond) as server:
        res, run_dir = _run(lens, tmp_path, [{"name": "sqlite_fts"}],
                            agent={"model": "openai/fake", "base_url": server.base_url})
    assert res.returncode == 1, res.stdout + res.stderr
    assert "0 answered now, 0 empty, 4 errored" in res.stdout
    assert "FAIL  failed or errored questions (per arm): failed by sqlite_fts — " \
           "sqlite_fts: 4 of 4" in res.stdout
    assert "lens: exit status 1: the run failed its purpose" in res.stderr
    assert "sqlite_fts: 4 of 4 (100.0%)" in res.stderr
    assert _checklist(run_dir)["failures"]["status"] == "fail"
    assert "**FAIL**" in _md_row(run_dir, "failed or errored questions")
    # Re-scoring says the same, whatever --fail-on says.
    score = lens("score", str(run_dir), "--tier", "1", "--fail-on", "never")
    assert score.returncode == 1, score.stderr
    assert "the run failed its purpose" in score.stderr


def test_a_unit_that_fails_exits_1_and_names_it(tmp_path: Path, lens: Lens) -> None:
    res, run_dir = _run(lens, tmp_path, [{"name": "sqlite_fts", "label": "fine"},
                                   {"name": f"{MOD}:FailsReset", "label": "locked",
                                    "isolation": "none"}])
    assert res.returncode == 1, res.stdout + res.stderr
    assert "unit failed: locked|s1|r0" in res.stderr
    assert "the index directory is locked" in res.stderr
    assert "lens: exit status 1" in res.stderr
    assert "FAIL  failed or errored questions" in res.stdout
    row = _checklist(run_dir)["failures"]
    assert row["status"] == "fail" and "1 unit failure(s)" in row["value"]
    assert "**FAIL**" in _md_row(run_dir, "failed or errored questions")


def test_tool_errors_are_counted_everywhere_and_gate_on_request(tmp_path: Path, lens: Lens) -> None:
    res, run_dir = _run(lens, tmp_path, [{"name": "sqlite_fts", "label": "fts"},
                                   {"name": f"{MOD}:StrictQuerySyntax", "label": "strict"}])
    # No question errored and no unit was lost, but every search failed: the arm broke the
    # adapter contract, which fails the run whatever --fail-on says ...
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAIL  the memory system answered its calls (per arm): strict: 4 of 4" in res.stderr
    assert "4 failed tool calls" in res.stdout
    line = next(x for x in res.stdout.splitlines() if x.strip().startswith("strict ("))
    assert "4 tool errors in 4 questions" in line and "Syntax Error" in line
    assert not any("tool errors" in x for x in res.stdout.splitlines()
                   if x.strip().startswith("fts ("))
    assert "FAIL  questions with a failed tool call (per arm)" in res.stdout
    row = _checklist(run_dir)["tool_errors"]
    assert row["status"] == "fail"
    assert "strict: 4 of 4 questions (100.0%)" in row["value"]
    assert "fts: 0 of 4 questions" in row["value"]
    assert "ValueError: Syntax Error: unexpected" in row["value"]
    assert "**FAIL**" in _md_row(run_dir, "questions with a failed tool call")
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "| tool errors |" in md.replace("  ", " ") or "tool errors" in md.split("## Usage")[1]
    rows = list(csv.DictReader(io.StringIO((run_dir / "questions.csv").read_text("utf-8"))))
    by_adapter = {a: [int(r["tool_errors"]) for r in rows if r["adapter"] == a]
                  for a in ("fts", "strict")}
    assert by_adapter == {"fts": [0, 0, 0, 0], "strict": [1, 1, 1, 1]}
    # ... and re-checking the stored run says the same, with the row that decided it.
    gated = lens("score", str(run_dir), "--tier", "1", "--fail-on", "fail")
    assert gated.returncode == 1, gated.stderr
    assert "lens: exit status 1: the run failed its purpose" in gated.stderr
    assert "the memory system answered its calls" in gated.stderr


@pytest.mark.parametrize(("arms", "codes"), [
    ([{"name": "sqlite_fts", "label": "fts"}, {"name": f"{MOD}:StrictQuerySyntax",
                                               "label": "strict"}], [1, 1, 1]),
    ([{"name": "sqlite_fts"}], [0, 0, 3]),  # only WARN rows (no judge): --fail-on warn gates
])
def test_score_decides_its_exit_status_from_its_own_scores(
        tmp_path: Path, lens: Lens, monkeypatch: pytest.MonkeyPatch,
        arms: list[dict[str, Any]], codes: list[int]) -> None:
    import lens.report.checks.gate as report_gate
    import lens.report.foundations.data as report_data
    from lens.runs.store import RunStore

    _res, run_dir = _run(lens, tmp_path, arms, "--quiet")
    assert lens("score", str(run_dir), "--tier", "1").returncode == codes[0]
    # What the status was when the whole run was loaded into the report layer for it.
    expected = {how: report_gate.run_gate(run_dir, how) for how in ("never", "fail", "warn")}

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("lens score loaded the run again for its exit status")

    # No second read of the run: not load_run, not scores.json, not the manifest's raw JSON.
    monkeypatch.setattr(report_data, "load_run", refused)
    monkeypatch.setattr(report_gate, "load_run", refused)
    monkeypatch.setattr(report_data, "_load_scores", refused)
    monkeypatch.setattr(RunStore, "manifest_data", refused)
    for (how, verdict), code in zip(expected.items(), codes, strict=True):
        got = lens("score", str(run_dir), "--tier", "1", "--fail-on", how)
        assert got.returncode == verdict.code == code, got.stderr
        said = [line for line in got.stderr.splitlines() if line.startswith(("lens: exit", "  "))]
        assert said == verdict.lines()


def test_refs_that_name_nothing_get_a_row_naming_the_adapter(tmp_path: Path, lens: Lens) -> None:
    res, run_dir = _run(lens, tmp_path, [{"name": "sqlite_fts", "label": "fts"},
                                   {"name": f"{MOD}:RowIds", "label": "rows"}])
    # Refs that name no episode break the adapter contract: the run fails.
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAIL  refs name episodes or declared synthetic refs: failed by rows — " \
           "rows: 4 question(s), e.g. 'row-" in res.stdout
    row = _checklist(run_dir)["unknown_refs"]
    assert row["status"] == "fail" and "fts" not in row["value"]
    assert "rows: 4 question(s), e.g. 'row-" in row["value"]
    assert "**FAIL**" in _md_row(run_dir, "refs name episodes or declared synthetic refs")
    scores = json.loads((run_dir / "scores.json").read_text(encoding="utf-8"))
    details = [q["detail"]["evidence_grounding"] for q in scores["questions"]
               if q["adapter"] == "rows"]
    assert all(d["unknown_refs"][0].startswith("row-") for d in details)
    gated = lens("score", str(run_dir), "--tier", "1", "--fail-on", "fail")
    assert gated.returncode == 1
    assert "refs name episodes or declared synthetic refs" in gated.stderr


def test_a_clean_run_exits_0_and_warn_gates_on_warnings(tmp_path: Path, lens: Lens) -> None:
    res, run_dir = _run(lens, tmp_path, [{"name": "sqlite_fts"}], "--quiet")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "exit status" not in res.stderr
    checklist = _checklist(run_dir)
    assert checklist["tool_errors"]["status"] == "pass"
    assert checklist["unknown_refs"]["status"] == "pass"
    assert checklist["failures"]["status"] == "pass"
    # Four questions of one scope: the sample-size rows do not apply (N/A, never a FAIL), so
    # only the WARN rows (no judge) gate, and only under --fail-on warn.
    assert checklist["sample_size"]["status"] == "na"
    gated = lens("score", str(run_dir), "--tier", "1", "--fail-on", "fail")
    assert gated.returncode == 0, gated.stderr
    warned = lens("score", str(run_dir), "--tier", "1", "--fail-on", "warn")
    assert warned.returncode == 3 and "n_eff" not in warned.stderr
    never = lens("score", str(run_dir), "--tier", "1")
    assert never.returncode == 0, never.stderr


def test_unknown_refs_spare_chunks_and_declared_synthetic_prefixes() -> None:
    from lens.scoring.text.refs import unknown_refs

    refs = ["s1_ep_001", "s1_ep_001#c2", "summary:3", "row-17", "s2_ep_001", "row-17"]
    assert unknown_refs(refs, frozenset({"s1_ep_001"}), ["summary:"]) == ["row-17", "s2_ep_001"]
    assert unknown_refs(refs, frozenset({"s1_ep_001", "s2_ep_001"}), ["summary:", "row-"]) == []
