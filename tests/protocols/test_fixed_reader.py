"""The fixed reader (``agent.mode: fixed_reader``): one search with the question, its top_k
results in the reader prompt, recorded in the run's condition; through `lens run` on LongMemEval
items imported with `lens datasets import`, and `lens compare` refusing to mix modes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from lens.core.errors import ConfigError
from lens.data.config import parse_config
from lens.data.importers.longmemeval import parse_lme_date
from lens.data.reader_prompts import reader_prompt
from tests.support.extras import missing_reason

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "datasets" / "fixtures" / "longmemeval_small.json"
MARK = " [cut]"


def test_prompt_has_the_benchmark_shape_sorted_by_date() -> None:
    prompt, size, cut = reader_prompt(
        "Where did I go?", datetime(2023, 5, 30, 23, 40),
        [(datetime(2023, 5, 2), "user: later"), (datetime(2023, 5, 1), "user: earlier")],
        10_000, MARK)
    assert not cut and size > 0
    history = prompt.split("History Chats:\n\n", 1)[1]
    assert history.index("earlier") < history.index("later")
    assert "### Session 1:\nSession Date: 2023/05/01 (Mon) 00:00\nSession Content:\nuser: earlier" \
        in history
    assert prompt.endswith("Current Date: 2023/05/30 (Tue) 23:40\nQuestion: Where did I go?\n"
                           "Answer:")
    # Step by step, as LongMemEval's official generation reads by default: asked, and marked.
    steps = reader_prompt("q", None, [(None, "x")], 100, MARK, "step_by_step")[0]
    assert "Answer step by step" in steps and steps.endswith("Answer (step by step):")
    # No "now" known: no date line, never a made-up one.
    assert "Current Date" not in reader_prompt("q", None, [(None, "x")], 100, MARK)[0]
    # The history is cut at the payload budget, visibly.
    small, size, cut = reader_prompt("q", None, [(None, "x" * 500)], 100, MARK)
    assert cut and size <= 100 and MARK in small


def _config(**agent: Any) -> dict[str, Any]:
    return {"dataset": {"path": "d.json"}, "adapters": [{"name": "sqlite_fts"}],
            "agent": {"model": "scripted/policy", **agent}}


def test_config_names_the_field_and_the_fix() -> None:
    cfg = parse_config(_config(mode="fixed_reader", top_k=5), "c.yaml")
    assert cfg.agent.mode == "fixed_reader" and cfg.agent.top_k == 5
    with pytest.raises(ConfigError) as err:
        parse_config(_config(top_k=5), "c.yaml")
    assert "c.yaml" in str(err.value) and "mode: fixed_reader" in str(err.value)
    assert parse_config(_config(mode="fixed_reader"), "c.yaml").agent.reading is None
    with pytest.raises(ConfigError) as err:
        parse_config(_config(reading="direct"), "c.yaml")
    assert "'reading' applies to mode 'fixed_reader' only" in str(err.value)
    with pytest.raises(ConfigError) as err:
        parse_config(_config(mode="fixed_reader", min_tool_rounds=1), "c.yaml")
    assert "min_tool_rounds" in str(err.value)
    with pytest.raises(ConfigError) as err:
        parse_config(_config(mode="reader"), "c.yaml")
    assert "agent.mode" in str(err.value)


def _lens(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LENS_CACHE_DIR": str(cwd / "cache")}
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=env)


def _run(tmp: Path, name: str, ds: Path, agent: dict[str, Any], adapter: str) -> Path:
    cfg = tmp / f"{name}.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": name, "dataset": {"path": str(ds)}, "adapters": [{"name": adapter}],
        "agent": agent, "out_dir": str(tmp / "runs"), "scoring": {"enabled": False},
        "report": False}), encoding="utf-8")
    r = _lens(tmp, "run", str(cfg), "--quiet")
    assert r.returncode == 0, r.stderr[-3000:]
    return sorted((tmp / "runs").glob(f"{name}-*"))[-1]


def _records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in
            (run / "records.jsonl").read_text(encoding="utf-8").splitlines()]


def test_fixed_reader_through_lens_run_and_compare(tmp_path: Path) -> None:
    reason = missing_reason("bm25")
    if reason:
        pytest.skip(reason)
    ds = tmp_path / "lme.json"
    r = _lens(tmp_path, "datasets", "import", "--format", "longmemeval", str(FIX), "--out",
              str(ds))
    assert r.returncode == 0, r.stderr
    # The question's date as the agent's "now" (Question.asked_at), from the item's own date.
    data = json.loads(ds.read_text(encoding="utf-8"))
    for q in data["questions"]:
        q["asked_at"] = parse_lme_date(q["meta"]["question_date"]).isoformat()
    ds.write_text(json.dumps(data), encoding="utf-8")
    reply = tmp_path / "replies.yaml"
    reply.write_text(yaml.safe_dump({"rules": [{"contains": "History Chats", "text": "Paris"}],
                                     "default": "no history"}), encoding="utf-8")
    reader = _run(tmp_path, "reader", ds, {"model": "scripted/replies.yaml", "mode": "fixed_reader",
                                           "top_k": 2}, "longmemeval_bm25")
    recs = _records(reader)
    dataset = json.loads(ds.read_text(encoding="utf-8"))
    assert len(recs) == len(dataset["questions"])
    for rec in recs:
        assert rec["status"] == "answered" and rec["answer"] == "Paris"
        (search,) = rec["tool_calls"]
        assert search["name"] == "memory_search" and search["arguments"]["limit"] == 2
        assert 1 <= len(search["result_refs"]) <= 2
        (prompt, _) = rec["transcript"]
        q = next(x for x in dataset["questions"] if x["question_id"] == rec["question_id"])
        assert prompt["role"] == "user" and "History Chats:" in prompt["content"]
        now = parse_lme_date(q["meta"]["question_date"]).strftime("%Y/%m/%d (%a) %H:%M")
        # LongMemEval's official generation reads step by step by default (agent.reading).
        assert prompt["content"].endswith(f"Current Date: {now}\nQuestion: {q['prompt']}\n"
                                          "Answer (step by step):")
        assert len(rec["model_calls"]) == 1
    manifest = json.loads((reader / "manifest.json").read_text(encoding="utf-8"))
    answerer = manifest["condition"]["answerer"]
    assert answerer["mode"] == "fixed_reader" and answerer["top_k"] == 2
    assert answerer["reading"] == "step_by_step"
    agent = _run(tmp_path, "agent", ds, {"model": "scripted/policy"}, "longmemeval_bm25")
    assert "answerer" not in json.loads((agent / "manifest.json").read_text())["condition"]
    for run in (reader, agent):
        assert _lens(tmp_path, "score", str(run), "--tier", "1").returncode == 0
    c = _lens(tmp_path, "compare", str(reader), str(agent))
    assert c.returncode == 2 and "answerer" in c.stdout + c.stderr, c.stdout + c.stderr
