"""A 200-question run against a real loopback OpenAI-compatible server that misbehaves in every
ordinary way: transient faults are retried, permanent ones mark only their question."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from lens.data.prompts import EMPTY_ANSWER_REMINDER
from lens.flow.pipeline import execute
from lens.runs.store import RunStore
from tests.core.helpers import make_dataset, write_json
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

FAULTS = ["clean", "clean", "429_retry_after", "429", "500", "502", "503", "reset", "hang",
          "bad_args", "unknown_tool", "empty", "permanent"]
_QID = re.compile(r"\(id ([a-z]_q\d+)\)")


def fault_of(qid: str) -> str:
    digest = hashlib.sha256(qid.encode()).digest()
    return FAULTS[digest[0] % len(FAULTS)]


class FaultyProvider:
    """Plays an agent-shaped model, failing each question in its own planned way."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.attempts: Counter[tuple[str, int]] = Counter()

    def __call__(self, req: RecordedRequest) -> Reply:
        messages = req.body["messages"]
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        qid = _QID.search(prompt).group(1)  # type: ignore[union-attr]
        turn = sum(1 for m in messages if m["role"] == "assistant")
        with self.lock:
            self.attempts[(qid, turn)] += 1
            attempt = self.attempts[(qid, turn)]
        fault = fault_of(qid)
        if turn == 0 and attempt == 1:
            transient = {
                "429_retry_after": lambda: Reply.error(429, "slow down", retry_after=0.2),
                "429": lambda: Reply.error(429, "rate limited"),
                "500": lambda: Reply.error(500, "internal error"),
                "502": lambda: Reply.error(502, "bad gateway"),
                "503": lambda: Reply.error(503, "overloaded"),
                "reset": Reply.connection_reset,
                "hang": Reply.hang_up,
            }
            if fault in transient:
                return transient[fault]()
        if fault == "permanent":
            return Reply.error(400, "this model does not support tools")
        if turn == 0:
            if fault == "bad_args":
                return Reply.tool_call("memory_search", '{"query": "widg')
            if fault == "unknown_tool":
                return Reply.tool_call("drop_database", {"all": True})
            if fault == "empty":
                return Reply.empty()
            return Reply.tool_call("memory_search", {"query": "widget count"})
        scope = qid.split("_")[0]
        return Reply.text(f"The widget count rose to 50 [{scope}_ep_005].")


def write_run_config(tmp_path: Path, base_url: str, **extra: Any) -> Path:
    data = make_dataset(n_episodes=20, checkpoints=(5, 10, 15, 20), questions_per_checkpoint=25,
                        scope_ids=("a", "b"))
    for q in data["questions"]:
        q["prompt"] += f" (id {q['question_id']})"
    ds = write_json(tmp_path / "ds.json", data)
    cfg = {
        "name": "faults",
        "dataset": {"path": str(ds)},
        "adapters": [{"name": "sqlite_fts"}],
        "agent": {"model": "openai/fake-model", "base_url": base_url,
                  "api_key_env": "LENS_FAULT_TEST_KEY", "timeout_s": 1.0, "max_retries": 4,
                  "max_concurrency": 32,
                  "budget": {"max_turns": 4, "max_tool_calls": 4, "max_seconds": 60}},
        "concurrency": {"units": 2, "questions": 32},
        "cache": {"path": str(tmp_path / "cache.sqlite")},
        "out_dir": str(tmp_path / "runs"),
        **extra,
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


@pytest.mark.slow
def test_200_questions_survive_provider_faults(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LENS_FAULT_TEST_KEY", "sk-fault-test")
    provider = FaultyProvider()
    with FakeOpenAI(provider, hang_limit_s=3.0) as server:
        outcome = execute(write_run_config(tmp_path, server.base_url))
    store = RunStore(outcome.run_dir)
    events = list(store.events())
    done = Counter(e["key"] for e in events if e["kind"] == "question_done")
    assert len(done) == 200 and set(done.values()) == {1}  # none lost, none duplicated
    records = {r.question_id + r.scope_id: r for r in store.load_records()}
    by_fault: dict[str, list[Any]] = {}
    for r in records.values():
        by_fault.setdefault(fault_of(r.question_id), []).append(r)
    assert set(by_fault) == set(FAULTS)  # every fault was exercised
    for fault, recs in by_fault.items():
        for r in recs:
            if fault == "permanent":
                assert r.status == "error"
                assert "this model does not support tools" in (r.error or "")
                continue
            # The empty fault never searches: its answer after the reminder is not from memory.
            assert r.status == ("no_memory" if fault == "empty" else "answered"), (fault, r.error)
            if fault in ("bad_args", "unknown_tool"):
                assert r.tool_errors == 1
                assert r.answer.startswith("The widget count rose to 50")
            elif fault == "empty":
                # An empty reply gets one reminder turn, which this provider answers.
                assert r.answer.startswith("The widget count rose to 50")
                assert r.budget and r.budget.stop_reason == "answered"
                assert [m.content for m in r.transcript if m.role == "user"][-1] == \
                    EMPTY_ANSWER_REMINDER
            else:
                assert r.answer.startswith("The widget count rose to 50")
                assert r.cited_refs == [f"{r.scope_id}_ep_005"]
            if fault not in ("clean", "bad_args", "unknown_tool", "empty"):
                assert r.model_calls[0].retries >= 1, fault
    n_perm = len(by_fault["permanent"])
    n_empty = len(by_fault["empty"])
    assert outcome.summary.errored == n_perm and outcome.summary.no_memory == n_empty
    assert outcome.summary.answered == 200 - n_perm - n_empty
    # Permanent errors are not retried: one request per such question.
    assert all(provider.attempts[(r.question_id, 0)] == 1 for r in by_fault["permanent"])
    # The report counts errored questions on their own, never as wrong answers.
    summary = json.loads((outcome.run_dir / "summary.json").read_text())
    text = json.dumps(summary)
    assert f'"errored": {n_perm}' in text or f'"n_errored": {n_perm}' in text
    scores = json.loads((outcome.run_dir / "scores.json").read_text())
    errored_rows = [q for q in scores["questions"] if q["status"] == "error"]
    assert len(errored_rows) == n_perm
    assert all(v is None for q in errored_rows for v in q["metrics"].values())
    report = (outcome.run_dir / "report.md").read_text()
    assert f": {n_perm} of 200 (" in report  # per arm: "<adapter>: N of 200 (x%)"
