"""The fixed reader's history is cut as LongMemEval's generation cuts it (the reader's context
window less the answer's max_tokens and 1,000 tokens), ``max_payload_bytes`` only when the config
sets it, and a memory that returns fewer results than ``top_k`` is said in the console and the
report. Through ``lens run``, with a scripted reader."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from lens.data.config import parse_config
from lens.data.reader_prompts import (
    FALLBACK_WINDOW,
    EstimatedTokens,
    HistoryLimit,
    history_block,
    window_of,
)
from lens.runner.agent import DEFAULT_TURN_MAX_TOKENS
from tests.core.helpers import write_json
from tests.support.cli import Lens, cli_runner

EPISODES = 12
# The memory returns every episode whole (at most 12 results, whatever top_k asks).
MEMORY = {"max_results": EPISODES, "snippet_chars": 10_000}
FILLER = "The widget count was checked again and nothing else happened that day. " * 55


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _dataset(path: Path) -> Path:
    """One scope of 12 dated episodes of about 4,000 bytes each (48 KB in all, over lens's
    32,000-byte payload budget, about 12,000 tokens), the oldest and the newest marked; one
    question after the last."""
    eps = []
    for i in range(1, EPISODES + 1):
        mark = {1: "OLDEST-EVIDENCE ", EPISODES: "NEWEST-EVIDENCE "}.get(i, "")
        eps.append({"episode_id": f"s1_ep_{i:03d}", "scope_id": "s1",
                    "timestamp": f"2024-01-{i:02d}T10:00:00",
                    "text": f"Day {i}: {mark}widget count {i * 10}. {FILLER}"})
    question = {"question_id": "s1_q01", "scope_id": "s1", "checkpoint_after": EPISODES,
                "question_type": "longitudinal", "prompt": "What was the widget count?",
                "ground_truth": {"canonical_answer": "120",
                                 "required_evidence_refs": [f"s1_ep_{EPISODES:03d}"],
                                 "key_facts": ["120"]}}
    return write_json(path, {"version": "0.1.0", "scopes": [{"scope_id": "s1", "episodes": eps}],
                             "questions": [question]})


def _run(lens: Lens, tmp_path: Path, name: str, agent: dict[str, Any], *args: str
         ) -> tuple[Path, str]:
    ds = _dataset(tmp_path / "ds.json")
    replies = tmp_path / "replies.yaml"
    replies.write_text(yaml.safe_dump({"rules": [], "default": "I do not know"}),
                       encoding="utf-8")
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": name, "dataset": {"path": str(ds)},
        "adapters": [{"name": "sqlite_fts", "options": MEMORY}],
        "agent": {"model": "scripted/replies.yaml", "mode": "fixed_reader", **agent},
        "out_dir": str(tmp_path / "runs")}), encoding="utf-8")
    done = lens("run", str(cfg), *args)
    assert done.returncode in (0, 1), done.stderr
    return next((tmp_path / "runs").glob(f"{name}-*")), done.stdout


def _record(run: Path) -> dict[str, Any]:
    lines = (run / "records.jsonl").read_text(encoding="utf-8").split("\n")
    records = [json.loads(line) for line in lines if line]
    assert len(records) == 1
    return records[0]


def _row(run: Path) -> dict[str, Any]:
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    row: dict[str, Any] = next(c for c in summary["checklist"]
                               if c["id"] == "fixed_reader_results")
    return row


def test_the_default_cut_is_the_window_and_keeps_the_newest_evidence(lens: Lens,
                                                                     tmp_path: Path) -> None:
    """48 KB of history, over the 32,000 bytes that used to cut it, fits the window: every
    session reaches the reader, the newest evidence included; the memory's 12 results where
    top_k is 50 are said in the console summary, the checklist and the report."""
    run, out = _run(lens, tmp_path, "window", {"top_k": 50})
    rec = _record(run)
    prompt = rec["transcript"][0]["content"]
    assert "NEWEST-EVIDENCE" in prompt and "OLDEST-EVIDENCE" in prompt
    search = rec["tool_calls"][0]
    assert search["result_count"] == EPISODES and not search["truncated"]
    assert search["payload_bytes"] > 32_000
    budget = rec["budget"]
    expected = FALLBACK_WINDOW - DEFAULT_TURN_MAX_TOKENS - 1_000
    assert budget["limits"]["max_history_tokens"] == expected
    assert budget["limits"]["context_window"] == FALLBACK_WINDOW
    assert budget["limits"]["max_agent_tokens"] == FALLBACK_WINDOW
    assert "max_payload_bytes" not in budget["limits"]
    assert 0 < budget["used"]["max_history_tokens"] <= expected
    assert budget["compliant"] is True
    row = _row(run)
    assert row["status"] == "warn"
    notice = f"fewer results than top_k (50) on 1 of 1 questions (at most {EPISODES})"
    assert notice in row["value"]
    assert (f"history cut on 0 of 1 questions, at {expected:,} tokens (the context window "
            f"128,000 less {DEFAULT_TURN_MAX_TOKENS:,} for the answer and 1,000; window: "
            "unknown for scripted/replies.yaml, so lens used gpt-4o's") in row["value"]
    assert "tokens estimated at 4 characters a token" in row["value"]
    assert notice in out and "WARN" in out
    assert notice in (run / "report.md").read_text(encoding="utf-8")


def test_a_history_over_the_window_is_cut_as_the_official_generation_cuts(
        lens: Lens, tmp_path: Path) -> None:
    """A window of 6,000 tokens less 500 for the answer and 1,000: 4,500 tokens of history,
    its start kept (the official ``tokens[:max_retrieval_length]`` of the date-sorted
    history); top_k equal to what the memory holds passes."""
    run, _ = _run(lens, tmp_path, "small",
                  {"top_k": EPISODES, "max_tokens": 500, "budget": {"context_window": 6_000}},
                  "--quiet")
    rec = _record(run)
    prompt = rec["transcript"][0]["content"]
    assert "OLDEST-EVIDENCE" in prompt and "NEWEST-EVIDENCE" not in prompt
    assert "[truncated by lens" in prompt
    assert rec["tool_calls"][0]["truncated"] is True
    budget = rec["budget"]
    assert budget["limits"]["max_history_tokens"] == 4_500
    assert budget["limits"]["context_window"] == 6_000
    assert 4_000 < budget["used"]["max_history_tokens"] <= 4_500
    assert budget["compliant"] is True
    row = _row(run)
    assert row["status"] == "pass"
    assert f"top_k ({EPISODES}) results on every question" in row["value"]
    assert ("history cut on 1 of 1 questions, at 4,500 tokens (the context window 6,000 less "
            "500 for the answer and 1,000; window: agent.budget.context_window") in row["value"]


def test_max_payload_bytes_set_in_the_config_still_cuts(lens: Lens, tmp_path: Path) -> None:
    run, _ = _run(lens, tmp_path, "bytes",
                  {"top_k": EPISODES, "budget": {"max_payload_bytes": 32_000}}, "--quiet")
    rec = _record(run)
    prompt = rec["transcript"][0]["content"]
    assert "OLDEST-EVIDENCE" in prompt and "NEWEST-EVIDENCE" not in prompt
    search = rec["tool_calls"][0]
    assert search["truncated"] is True and search["payload_bytes"] <= 32_000
    limits = rec["budget"]["limits"]
    assert limits["max_payload_bytes"] == 32_000
    assert "max_history_tokens" not in limits and limits["max_agent_tokens"] == 16_000
    row = _row(run)
    assert ("history cut on 1 of 1 questions, at 32,000 bytes (agent.budget.max_payload_bytes, "
            "set in the config)") in row["value"]


def test_the_tool_agent_has_no_reader_window() -> None:
    data = {"name": "t", "dataset": {"path": "ds.json"}, "adapters": [{"name": "null"}],
            "agent": {"model": "scripted/policy", "budget": {"context_window": 8_000}}}
    with pytest.raises(Exception, match=r"'budget\.context_window' applies to mode "
                                        r"'fixed_reader' only"):
        parse_config(data, "run.yaml")
    # Unset, the budget (and the run's condition that holds it) is written as it was.
    data["agent"] = {"model": "scripted/policy"}
    assert "context_window" not in parse_config(data, "run.yaml").agent.budget.model_dump()


def test_the_windows_lens_knows() -> None:
    assert window_of("openai/gpt-4o-2024-08-06") == (
        128_000, "gpt-4o-2024-08-06's in LongMemEval's run_generation.py")
    assert window_of("openai/gpt-4o-mini")[0] == 128_000
    assert window_of("llama_cpp/default", n_ctx=8192) == (8192, "llama_cpp's options.n_ctx")
    assert window_of("openai/gpt-4o", configured=50_000)[0] == 50_000
    window, source = window_of("openai/some-model")
    assert window == FALLBACK_WINDOW and "so lens used gpt-4o's" in source


def test_the_token_cut_keeps_the_start() -> None:
    sessions: list[tuple[datetime | None, str]] = [(None, "a" * 400), (None, "b" * 400)]
    history = history_block(sessions, HistoryLimit(max_tokens=120, tokenizer=EstimatedTokens()),
                            " [cut]")
    assert history.cut and history.text.endswith(" [cut]") and "b" * 10 not in history.text
    assert history.tokens is not None and history.tokens <= 120
    whole = history_block(sessions, HistoryLimit(max_tokens=10_000), " [cut]")
    assert not whole.cut and "b" * 400 in whole.text


def test_the_llama_cpp_reader_counts_with_its_own_tokenizer() -> None:
    pytest.importorskip("llama_cpp")
    from lens.models.local_models import resolve_model_path
    from lens.runner.reader import LlamaTokens

    path, _ = resolve_model_path("default")
    if not path.is_file():
        pytest.skip("the default local model is not on this machine")
    tok = LlamaTokens(str(path))
    text = "The widget count was 120 on the twelfth day. " * 20
    n = tok.count(text)
    assert 0 < n < len(text) // 2
    head = tok.head(text, n // 2)
    assert text.startswith(head) and 0 < len(head) < len(text)
