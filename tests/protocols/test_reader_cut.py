"""The fixed reader's cut is one rule (``reader_cut``, from the run's agent config) that the
reader applies, the run's condition records and ``lens plan`` prices: two runs cut differently
are not comparable (``lens compare`` names ``reader_cut``), a run written before the condition
held it stays readable, and the plan's worst case bounds what a run spent. Through ``lens run``,
``lens compare``, ``lens report`` and ``lens plan``, with a scripted reader."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from lens.data.config import AgentConfig
from lens.data.reader_prompts import LLAMA_N_CTX, READER_MAX_TOKENS, reader_cut
from tests.core.helpers import write_json
from tests.support.cli import Lens, cli_runner

EPISODES = 12
QUESTIONS = 3
# The memory returns every episode whole (12 results of about 4,000 bytes: 12,000 tokens).
MEMORY = {"max_results": EPISODES, "snippet_chars": 10_000}
FILLER = "The widget count was checked again and nothing else happened that day. " * 55
SMALL = {"max_tokens": 500, "budget": {"context_window": 6_000}}
SMALL_CUT = {"rule": "window", "answer_tokens": 500, "context_window": 6_000,
             "margin_tokens": 1_000, "max_history_tokens": 4_500, "tokens": "estimate"}


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _dataset(path: Path) -> Path:
    """One scope of 12 dated episodes of about 4,000 bytes each; three questions after the
    last."""
    eps = [{"episode_id": f"s1_ep_{i:03d}", "scope_id": "s1",
            "timestamp": f"2024-01-{i:02d}T10:00:00",
            "text": f"Day {i}: widget count {i * 10}. {FILLER}"} for i in range(1, EPISODES + 1)]
    questions = [{"question_id": f"s1_q{k:02d}", "scope_id": "s1", "checkpoint_after": EPISODES,
                  "question_type": "longitudinal", "prompt": f"What was the widget count? ({k})",
                  "ground_truth": {"canonical_answer": "120",
                                   "required_evidence_refs": [f"s1_ep_{EPISODES:03d}"],
                                   "key_facts": ["120"]}}
                 for k in range(1, QUESTIONS + 1)]
    return write_json(path, {"version": "0.1.0", "scopes": [{"scope_id": "s1", "episodes": eps}],
                             "questions": questions})


def _config(tmp_path: Path, name: str, agent: dict[str, Any], **extra: Any) -> Path:
    ds = _dataset(tmp_path / "ds.json")
    (tmp_path / "replies.yaml").write_text(
        yaml.safe_dump({"rules": [], "default": "The widget count was 120."}), encoding="utf-8")
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": name, "dataset": {"path": str(ds)},
        "adapters": [{"name": "sqlite_fts", "options": MEMORY}],
        "agent": {"model": "scripted/replies.yaml", "mode": "fixed_reader", "top_k": EPISODES,
                  **agent},
        "out_dir": str(tmp_path / "runs"), **extra}), encoding="utf-8")
    return cfg


def _run(lens: Lens, tmp_path: Path, name: str, agent: dict[str, Any]) -> Path:
    done = lens("run", str(_config(tmp_path, name, agent)), "--quiet")
    assert done.returncode == 0, done.stderr
    return next((tmp_path / "runs").glob(f"{name}-*"))


def _manifest(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    return data


def _records(run: Path) -> list[dict[str, Any]]:
    lines = (run / "records.jsonl").read_text(encoding="utf-8").split("\n")
    return [json.loads(line) for line in lines if line]


def _forget_cut(run: Path) -> None:
    """The run as lens wrote it before the condition recorded the reader's cut."""
    manifest = _manifest(run)
    del manifest["condition"]["reader_cut"]
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def test_the_condition_records_the_cut_the_reader_used(lens: Lens, tmp_path: Path) -> None:
    """The window's rule with its numbers (not where the window came from), or the bytes'
    rule; every record's budget shows the reader cut where the condition says."""
    small = _run(lens, tmp_path, "small", SMALL)
    assert _manifest(small)["condition"]["reader_cut"] == SMALL_CUT
    records = _records(small)
    assert len(records) == QUESTIONS
    for rec in records:
        assert rec["budget"]["limits"]["max_history_tokens"] == 4_500
        assert rec["budget"]["limits"]["context_window"] == 6_000
        assert rec["tool_calls"][0]["truncated"] is True
    cut = _run(lens, tmp_path, "bytes", {"budget": {"max_payload_bytes": 20_000}})
    assert _manifest(cut)["condition"]["reader_cut"] == {
        "rule": "bytes", "answer_tokens": READER_MAX_TOKENS, "max_payload_bytes": 20_000}
    for rec in _records(cut):
        assert rec["budget"]["limits"]["max_payload_bytes"] == 20_000
        assert rec["tool_calls"][0]["payload_bytes"] <= 20_000


def test_compare_names_a_changed_cut(lens: Lens, tmp_path: Path) -> None:
    """Runs cut at two windows, or one at the window and one at the default payload bytes set
    in the config (a budget that reads the same either way), are refused by ``lens compare``
    with ``reader_cut`` among the differing fields and its differing numbers shown;
    ``--force`` compares them labelled as not comparable."""
    a = _run(lens, tmp_path, "a", SMALL)
    b = _run(lens, tmp_path, "b", {"max_tokens": 500, "budget": {"context_window": 9_000}})
    refused = lens("compare", str(a), str(b))
    assert refused.returncode == 2
    assert "differing fields: " in refused.stderr and "reader_cut" in refused.stderr
    (line,) = [ln for ln in refused.stderr.splitlines() if ln.startswith("  reader_cut: ")]
    assert '"context_window": 6000' in line and '"context_window": 9000' in line
    assert '"max_history_tokens": 4500' in line and '"max_history_tokens": 7500' in line
    forced = lens("compare", str(a), str(b), "--force", "--out", str(tmp_path / "forced"))
    assert forced.returncode == 0, forced.stderr
    assert "not comparable: " in forced.stdout and "reader_cut" in forced.stdout

    window = _run(lens, tmp_path, "window", {})
    payload = _run(lens, tmp_path, "payload", {"budget": {"max_payload_bytes": 32_000}})
    conditions = [_manifest(r)["condition"] for r in (window, payload)]
    assert conditions[0]["budget"] == conditions[1]["budget"]
    refused = lens("compare", str(window), str(payload))
    assert refused.returncode == 2
    assert "differing fields: reader_cut\n" in refused.stderr


def test_runs_written_before_the_cut_was_recorded(lens: Lens, tmp_path: Path) -> None:
    """Two such runs compare with each other as they did; set beside a run that records its
    cut, the missing record is a difference ``lens compare`` names; the old run's report is
    written as before."""
    old = _run(lens, tmp_path, "old", SMALL)
    older = _run(lens, tmp_path, "older", SMALL)
    new = _run(lens, tmp_path, "new", SMALL)
    for run in (old, older):
        _forget_cut(run)
    same = lens("compare", str(old), str(older), "--out", str(tmp_path / "same"))
    assert same.returncode == 0, same.stderr
    assert "not comparable" not in same.stdout
    refused = lens("compare", str(old), str(new))
    assert refused.returncode == 2
    assert "differing fields: reader_cut\n" in refused.stderr
    (line,) = [ln for ln in refused.stderr.splitlines() if ln.startswith("  reader_cut: ")]
    assert f"{old.name.removeprefix('old-')}=null" in line and '"context_window": 6000' in line
    report = lens("report", str(old))
    assert report.returncode == 0, report.stderr
    assert "history cut on 3 of 3 questions, at 4,500 tokens" in (
        old / "report.md").read_text("utf-8")


@pytest.mark.parametrize(("agent", "per_question"), [
    (SMALL, (6_000, 500)),
    # The history's 20,000 bytes and the prompt's own text, at four characters a token.
    ({"max_tokens": 500, "budget": {"max_payload_bytes": 20_000}}, None),
], ids=["window", "bytes"])
def test_plan_prices_the_reader_by_what_it_sends(
        lens: Lens, tmp_path: Path, agent: dict[str, Any],
        per_question: tuple[int, int] | None) -> None:
    """``lens plan`` on a fixed-reader config: one call a question, at most the window in and
    max_tokens out (or the history's bytes and the prompt's text); the run then spends no more
    than that worst case, and about what the plan expected."""
    cfg = _config(tmp_path, "plan", agent)
    shown = lens("plan", str(cfg))
    assert shown.returncode == 0, shown.stderr
    (worst_line,) = [ln for ln in shown.stdout.splitlines()
                     if ln.strip().startswith("worst case (one reader call a question)")]
    planned = lens("plan", str(cfg), "--json")
    (arm,) = json.loads(planned.stdout)["arms"]
    worst = arm["agent_worst"]
    assert worst["calls"] == QUESTIONS
    assert worst["completion_tokens"] == QUESTIONS * 500
    if per_question is not None:
        assert (worst["prompt_tokens"], worst["completion_tokens"]) == (
            QUESTIONS * per_question[0], QUESTIONS * per_question[1])
        assert ("note: fixed reader: one call a question, at most 6,000 tokens in (the context "
                "window, agent.budget.context_window; the history is cut at 4,500 tokens, the "
                "window less 500 for the answer and 1,000) and 500 out") in shown.stdout
    else:
        assert 5_000 < worst["prompt_tokens"] / QUESTIONS < 5_200
        assert ("note: fixed reader: one call a question, at most the history's 20,000 bytes "
                "(agent.budget.max_payload_bytes) and the prompt's own text in, counted at 4 "
                "characters a token, and 500 out") in shown.stdout
    assert worst_line.split()[-4:-1] == [
        f"{QUESTIONS}", f"{worst['prompt_tokens']:,.0f}", f"{worst['completion_tokens']:,.0f}"]

    done = lens("run", str(cfg), "--quiet")
    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "runs").iterdir()
    calls = [c for r in _records(run) for c in r["model_calls"] if c["role"] == "agent"]
    assert len(calls) == QUESTIONS
    prompt = sum(c["prompt_tokens"] for c in calls)
    completion = sum(c["completion_tokens"] for c in calls)
    assert prompt <= worst["prompt_tokens"] and completion <= worst["completion_tokens"]
    if per_question is not None:
        assert all(c["prompt_tokens"] <= per_question[0] for c in calls)
    # The expected call: the prompt's text and the cut history, within a tenth of the spend.
    assert arm["agent"]["calls"] == QUESTIONS
    assert math.isclose(arm["agent"]["prompt_tokens"], prompt, rel_tol=0.1), (arm, prompt)


def test_the_plans_worst_case_carries_the_judge(lens: Lens, tmp_path: Path) -> None:
    cfg = _config(tmp_path, "judged", SMALL,
                  judge={"model": "openai/gpt-4o-mini", "price_input_per_mtok": 0.15,
                         "price_output_per_mtok": 0.6})
    planned = lens("plan", str(cfg), "--json")
    assert planned.returncode == 0, planned.stderr
    (arm,) = json.loads(planned.stdout)["arms"]
    shown = lens("plan", str(cfg)).stdout
    (worst_line,) = [ln for ln in shown.splitlines() if ln.strip().startswith(
        "worst case (one reader call a question, judge at list price)")]
    tokens = arm["agent_worst"]["prompt_tokens"] + arm["judge"]["prompt_tokens"]
    calls = arm["agent_worst"]["calls"] + arm["judge"]["calls"]
    assert arm["judge"]["calls"] == 2 * QUESTIONS
    assert worst_line.split()[-4:-2] == [f"{calls:,.0f}", f"{tokens:,.0f}"]


def test_a_local_models_window_is_the_one_llama_cpp_loads(tmp_path: Path) -> None:
    """The cut of a ``llama_cpp`` reader is at the window its backend loads the model with
    (``options.n_ctx``, else the backend's default), counted by its tokenizer."""
    from lens.models.llama_backend import LlamaCppClient

    model = tmp_path / "reader.gguf"
    model.write_bytes(b"")
    for options, window in (({}, LLAMA_N_CTX), ({"n_ctx": 4_096}, 4_096)):
        agent = AgentConfig(model=f"llama_cpp/{model}", mode="fixed_reader", options=options)
        assert LlamaCppClient(agent).settings.n_ctx == window
        cut = reader_cut(agent)
        assert (cut.context_window, cut.tokens) == (window, "tokenizer")
        assert cut.max_history_tokens == window - READER_MAX_TOKENS - 1_000
        assert cut.window_source == "llama_cpp's options.n_ctx"
