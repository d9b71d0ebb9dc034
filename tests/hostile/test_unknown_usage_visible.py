"""A model reply whose only fault is its usage block, through the real CLI: `python -m lens run`
against a loopback OpenAI-compatible server whose answer says ``"prompt_tokens": "many"``.

The answer is kept (not retried, not an error) and charged at the most the call can have cost;
and nothing about it is silent: the terminal, the checklist, the report (Markdown and HTML) and
the exit status each say that the token and cost figures are upper bounds."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from lens.runs.store import RunStore
from tests.core.helpers import make_dataset, write_json
from tests.hostile.test_hostile_model_output import EVIDENCE, GOOD_USAGE, assert_clean, honest
from tests.hostile.test_hostile_runs import lens, only_run, write_config
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

KEY_ENV = "LENS_TEST_HOSTILE_MODEL_KEY"
KEY = "sk-hostile-model-output-5e1f0a"
MODEL = "openai/fake-model"
PRICE_IN, PRICE_OUT = 2.0, 8.0  # dollars per million tokens
ROW = "model replies reported their usage"


def answer_with_many(req: RecordedRequest) -> Reply:
    """The honest agent, whose answer (after a search) carries a prompt count that is a word."""
    reply = honest(req)
    assert reply.body is not None
    if reply.body["choices"][0]["message"].get("content"):
        reply.body["usage"] = {"prompt_tokens": "many", "completion_tokens": 8,
                               "total_tokens": "many"}
    return reply


def test_unknown_usage_is_kept_charged_and_shown_everywhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = write_json(tmp_path / "ds.json",
                    make_dataset(n_episodes=4, checkpoints=(4,), questions_per_checkpoint=1))
    monkeypatch.setenv(KEY_ENV, KEY)
    with FakeOpenAI(answer_with_many) as server:
        cfg = write_config(tmp_path / "run.yaml", name="unknown-usage",
                           dataset={"path": str(ds)}, adapters=[{"name": "sqlite_fts"}],
                           agent={"model": MODEL, "base_url": server.base_url,
                                  "api_key_env": KEY_ENV, "max_retries": 3,
                                  "price_input_per_mtok": PRICE_IN,
                                  "price_output_per_mtok": PRICE_OUT},
                           cache={"enabled": False}, out_dir="runs")
        res = lens("run", str(cfg), cwd=tmp_path)
        count, sent = server.count, server.requests[-1].body
    run_dir = only_run(tmp_path / "runs")
    # One run answers all five (each run of the real CLI costs seconds of a shared machine).
    answer_kept_and_charged_at_its_limit(res, run_dir, count, sent)
    terminal_says_it(res)
    checklist_has_a_warn_row(run_dir)
    report_marks_the_figures(run_dir)
    exit_status_is_that_of_a_complete_run_with_a_warning(res, run_dir)


def answer_kept_and_charged_at_its_limit(res: Any, run_dir: Path, count: int,
                                         sent: dict[str, Any]) -> None:
    assert "1 answered now, 0 empty, 0 errored" in res.stdout, res.stdout + res.stderr
    assert count == 2  # the search and the answer: nothing retried
    (record,) = RunStore.open(run_dir).load_records()
    assert record.status == "answered" and record.error is None
    assert EVIDENCE in record.cited_refs
    search, answer = record.model_calls
    assert answer.usage_unknown == ["prompt_tokens"] and answer.retries == 0
    # Charged at its limit: at least the prompt's bytes, far above what an honest reply reports.
    prompt_bytes = sum(len((m.get("content") or "").encode()) for m in sent["messages"])
    assert answer.prompt_tokens >= prompt_bytes > GOOD_USAGE[0]
    assert answer.completion_tokens == 8  # the count that was readable stays as reported
    # The budget counted the bound, and the cost is priced on it.
    assert record.budget is not None
    assert record.budget.used["max_agent_tokens"] == record.tokens()
    assert record.tokens() == search.prompt_tokens + search.completion_tokens \
        + answer.prompt_tokens + answer.completion_tokens
    expected = (answer.prompt_tokens * PRICE_IN + answer.completion_tokens * PRICE_OUT) / 1e6
    assert answer.cost_usd == pytest.approx(expected)
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["usage"]["by_model"][MODEL]["unknown_usage_calls"] == 1
    assert manifest["usage"]["by_role"]["agent"]["unknown_usage_calls"] == 1
    assert_clean(res, run_dir)


def terminal_says_it(res: Any) -> None:
    assert "1 model call(s) of unknown usage (budgeted at their limit)" in res.stdout, res.stdout
    # The checklist's WARN line, with the model and what was done.
    (line,) = [x for x in res.stdout.splitlines() if ROW in x]
    assert line.strip().startswith("WARN"), line
    assert f"model {MODEL}: 1; role agent: 1" in line, line
    assert "budgeted at the most each can have cost" in line and "upper bounds" in line, line


def checklist_has_a_warn_row(run_dir: Path) -> None:
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    (row,) = [c for c in summary["checklist"] if c["id"] == "unknown_usage"]
    assert row["status"] == "warn" and row["title"] == ROW
    assert MODEL in row["value"] and "upper bounds" in row["value"]
    assert summary["unknown_usage"] == {"by_model": {MODEL: 1}, "by_role": {"agent": 1}}
    assert summary["model_usage"]["agent"]["unknown_usage_calls"] == 1


def report_marks_the_figures(run_dir: Path) -> None:
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    for text in (md, html):
        assert "Token and cost figures are incomplete: 1 model call with an unreadable usage " \
               "block" in text
        assert ROW in text
    # The usage section says it beside its figures, which are shown as upper bounds.
    usage = md.split("## Usage", 1)[1].split("\n## ", 1)[0]
    assert "Token and cost figures are incomplete" in usage
    agent_row = next(line for line in usage.splitlines() if line.startswith("| agent |"))
    assert agent_row.count("≤ ") == 3, agent_row  # prompt tokens, completion tokens, cost
    arm_row = next(line for line in usage.splitlines() if line.startswith("| sqlite_fts |"))
    assert arm_row.count("≤ ") == 2, arm_row  # agent tokens/q, cost/q
    # The per-question CSV counts the question's calls of unknown usage beside its figures.
    (row,) = csv.DictReader(io.StringIO((run_dir / "questions.csv").read_text("utf-8")))
    assert row["usage_unknown_calls"] == "1", row


def exit_status_is_that_of_a_complete_run_with_a_warning(res: Any, run_dir: Path) -> None:
    # Complete: every question answered and counted; the WARN row gates only under --fail-on.
    assert res.returncode == 0, res.stderr[-2000:]
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "complete"
    again = lens("score", str(run_dir), "--fail-on", "warn", cwd=run_dir.parent.parent)
    assert again.returncode == 3, again.stdout + again.stderr
    assert f"WARN  {ROW}: 1 model call" in again.stderr, again.stderr
