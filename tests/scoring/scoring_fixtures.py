"""Builders for scoring tests: a small dataset, hand-made question records, a stored run, and
scripted judge clients."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from lens.data.dataset_load import load_dataset
from lens.models.base import Completion, CompletionRequest, ModelError, Usage
from lens.runs.records import BudgetOutcome, QuestionRecord, ToolCallRecord, unit_key
from lens.runs.store import RunStore

SCOPE = "s1"
LIMITS = {"max_turns": 8, "max_tool_calls": 12, "max_payload_bytes": 32000,
          "max_agent_tokens": 16000, "max_seconds": 300.0}


def ep(i: int, scope: str = SCOPE) -> str:
    return f"{scope}_ep_{i:03d}"


def dataset_dict(scope_ids: tuple[str, ...] = (SCOPE,)) -> dict[str, Any]:
    scopes, questions = [], []
    for sid in scope_ids:
        scopes.append({
            "scope_id": sid,
            "episodes": [
                {"episode_id": ep(i, sid), "scope_id": sid,
                 "timestamp": f"2024-01-{i:02d}T10:00:00",
                 "text": f"Day {i}: p99 latency {100 + 50 * i}ms; checkout errors {i * 12}."}
                for i in range(1, 11)
            ],
        })
        questions += [
            {"question_id": f"{sid}_q01_longitudinal", "scope_id": sid, "checkpoint_after": 5,
             "question_type": "longitudinal", "prompt": "How did latency change?",
             "ground_truth": {
                 "canonical_answer": "Geo-lookup latency rose from 200ms to 1,200 ms while the "
                                     "connection pool was exhausted.",
                 "required_evidence_refs": [ep(2, sid), ep(4, sid)],
                 "key_facts": ["geo-lookup latency increased from 200ms to 1,200ms",
                               "connection pool exhaustion"]}},
            {"question_id": f"{sid}_q02_null", "scope_id": sid, "checkpoint_after": 5,
             "question_type": "null_hypothesis", "prompt": "What happened on day 3?",
             "ground_truth": {"canonical_answer": "A routine day.",
                              "required_evidence_refs": [ep(3, sid)], "key_facts": []}},
            {"question_id": f"{sid}_q03_action", "scope_id": sid, "checkpoint_after": 10,
             "question_type": "action_recommendation", "prompt": "What should the team do?",
             "ground_truth": {"canonical_answer": "Add a circuit breaker on geo-lookup calls.",
                              "required_evidence_refs": [ep(8, sid)],
                              "key_facts": ["connection pool exhaustion"]}},
            {"question_id": f"{sid}_q04_negative", "scope_id": sid, "checkpoint_after": 10,
             "question_type": "negative", "prompt": "Is DNS failing?",
             "ground_truth": {"canonical_answer": "No. DNS is stable.",
                              "required_evidence_refs": [ep(9, sid)],
                              "key_facts": ["DNS infrastructure is not the root cause"]}},
        ]
    return {"version": "0.1.0", "scopes": scopes, "questions": questions}


def write_dataset(path: Path, data: dict[str, Any] | None = None) -> Path:
    path.write_text(json.dumps(data or dataset_dict()), encoding="utf-8")
    return path


def record(question_id: str, answer: str, *, adapter: str = "fts", scope: str = SCOPE,
           repeat: int = 0, checkpoint: int = 5, retrieved: list[str] | None = None,
           cited: list[str] | None = None, compliant: bool = True, tools_ok: int = 1,
           status: str = "answered", stop_reason: str = "answered") -> QuestionRecord:
    """A record as the runner stores it; cited refs default to the ``[ref]`` in the answer."""
    if cited is None:
        cited = list(dict.fromkeys(re.findall(r"\[([^\[\]\s,]+)\]", answer)))
    used = dict.fromkeys(LIMITS, 1.0)
    if not compliant:
        used["max_tool_calls"] = LIMITS["max_tool_calls"] + 1
    return QuestionRecord(
        unit_key=unit_key(adapter, scope, repeat), adapter=adapter, scope_id=scope,
        repeat=repeat, question_id=question_id, checkpoint=checkpoint, status=status,
        answer=answer if status == "answered" else "", cited_refs=cited,
        retrieved_refs=list(retrieved or []),
        tool_calls=[ToolCallRecord(name="memory_search", arguments={"query": "q"}, ok=True,
                                   result_refs=list(retrieved or []))
                    for _ in range(tools_ok)],
        budget=(BudgetOutcome(limits=LIMITS, used=used, stop_reason=stop_reason,
                              compliant=compliant) if status == "answered" else None),
        error=None if status == "answered" else "boom",
    )


def build_run(root: Path, dataset_path: Path, records: list[QuestionRecord], *,
              synthetic_prefixes: dict[str, list[str]] | None = None) -> Path:
    """A run directory as the runner leaves it, written through RunStore."""
    ds = load_dataset(dataset_path)
    store = RunStore.create(root, "t", "run1")
    store.write_manifest({
        "run_id": "run1", "status": "complete",
        "config": {"name": "t", "dataset": {"path": str(dataset_path)},
                   "adapters": [{"name": "sqlite_fts"}], "agent": {"model": "scripted/policy"}},
        "dataset": {"id": ds.dataset_id, "path": str(dataset_path),
                    "content_hash": ds.content_hash()},
        "condition": {"dataset_hash": ds.content_hash()},
    })
    for unit in dict.fromkeys(r.unit_key for r in records):
        caps = {"synthetic_ref_prefixes": (synthetic_prefixes or {}).get(unit, [])}
        store.append_event("unit_started", unit, capabilities=caps)
    for r in records:
        store.save_question(r)
    store.close()
    return store.root


class ScriptedJudge:
    """A deterministic judge client. ``policy`` maps a request to the reply text."""

    provider = "scripted"

    def __init__(self, name: str, policy: Any) -> None:
        self.model = name
        self.policy = policy
        self.calls = 0
        self.requests: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> Completion:
        self.calls += 1
        self.requests.append(request)
        text = self.policy(request)
        return Completion(text=text, usage=Usage(prompt_tokens=100, completion_tokens=5),
                          provider=self.provider, model=self.model, cost_usd=0.0)

    async def aclose(self) -> None:
        return None


def _prompt(request: CompletionRequest) -> str:
    return request.messages[-1].content


def position_a(request: CompletionRequest) -> str:
    if "Criterion:" in _prompt(request):
        return json.dumps({"verdict": "A", "reason": "A is first"})
    return json.dumps({"grade": "absent"})


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def fair(request: CompletionRequest) -> str:
    """Prefers the response that says more of the criterion's words; ties when equal. It looks
    at content only, so it gives the same verdict in both orders."""
    p = _prompt(request)
    if "Criterion:" not in p:
        fact = _between(p, "Key fact: ", "\n")
        answer = _between(p, "<<<\n", "\n>>>").lower()
        present = all(w in answer for w in re.findall(r"[a-z]{4,}", fact.lower()))
        return json.dumps({"grade": "present" if present else "absent"})
    crit = set(re.findall(r"[a-z]{4,}", _between(p, "Criterion: ", "\n").lower()))
    a = _between(p, "Response A:\n<<<\n", "\n>>>").lower()
    b = _between(p, "Response B:\n<<<\n", "\n>>>").lower()
    sa = sum(w in a for w in crit)
    sb = sum(w in b for w in crit)
    return json.dumps({"verdict": "A" if sa > sb else "B" if sb > sa else "TIE"})


def failing(request: CompletionRequest) -> str:
    raise ModelError("judge endpoint unavailable (HTTP 503 after 5 retries)", status=503)
