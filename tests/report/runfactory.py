"""Build run directories programmatically (records + scores), independent of the runner."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lens.models.base import Message, ToolCall
from lens.report.foundations.data import QuestionRow, RunData
from lens.runs.records import (
    BudgetOutcome,
    ModelCallRecord,
    QuestionRecord,
    ToolCallRecord,
    unit_key,
)
from lens.runs.store import RunStore
from lens.scoring.types import JudgeSummary, QuestionScores, RunScores

TYPES = ("longitudinal", "null_hypothesis", "temporal", "paraphrase", "negative")


def unit_draw(*parts: object) -> float:
    """A deterministic number in [0, 1) from its labels."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def condition(seed: int = 0, adapters: tuple[str, ...] = ("sqlite_fts",), **over: Any) -> dict:
    cond = {
        "lens_version": "0.1.0", "dataset_id": "synthetic", "dataset_hash": "d" * 64,
        "adapters": [{"name": a, "label": a, "options_hash": "0" * 8} for a in adapters],
        "agent_model": "scripted/policy", "agent_settings_hash": "a" * 16,
        "judge_model": "scripted/judge", "prompts_hash": "p" * 16,
        "budget": {"max_turns": 6, "max_tool_calls": 8}, "seed": seed, "repeats": 1,
    }
    cond.update(over)
    return cond


MetricFn = Callable[[str, str, str, int], dict[str, float | None]]


def default_metrics(adapter: str, scope: str, qid: str, repeat: int) -> dict[str, float | None]:
    u = unit_draw(adapter, scope, qid, repeat)
    return {"fact_recall": round(u, 4), "budget_compliance": 1.0 if u > 0.1 else 0.0,
            "composite": round(0.5 * u + 0.25, 4)}


@dataclass
class RunSpec:
    name: str = "run"
    adapters: tuple[str, ...] = ("sqlite_fts",)
    scopes: int = 3
    questions_per_scope: int = 10
    repeats: int = 1
    seed: int = 0
    condition_overrides: dict[str, Any] = field(default_factory=dict)
    metrics: MetricFn = default_metrics
    disagreement_rate: float | None = 0.05
    judge_pairs: int = 200
    search_results: int = 3
    tool_calls: bool = True
    error_every: int = 0  # every Nth question errors (0: none)
    cost_per_call: float | None = 0.0001
    scored: bool = True
    answer: Callable[[str, str], str] = lambda scope, qid: f"answer to {qid} [ep_{scope}_1]"
    detail: dict[str, Any] = field(default_factory=lambda: {
        "facts_matched": ["p99 latency rose to 410ms"], "facts_missed": ["retries doubled"]})


def build(spec: RunSpec, root: str = "") -> tuple[dict, list[QuestionRecord], RunScores | None]:
    """The manifest, records and scores of a run described by ``spec``."""
    cond = condition(spec.seed, spec.adapters, **spec.condition_overrides)
    manifest = {"run_id": f"{spec.name}-id", "created_at": "2026-01-01T00:00:00Z",
                "status": "complete", "config": {}, "versions": {},
                "dataset": {"id": "synthetic", "path": "x", "content_hash": "d" * 64},
                "condition": cond,
                "condition_hash": hashlib.sha256(repr(sorted(cond.items())).encode()).hexdigest()}
    records: list[QuestionRecord] = []
    scores: list[QuestionScores] = []
    n = 0
    for adapter in spec.adapters:
        for s in range(spec.scopes):
            scope = f"scope_{s:02d}"
            for rep in range(spec.repeats):
                unit = unit_key(adapter, scope, rep)
                for q in range(spec.questions_per_scope):
                    n += 1
                    qid = f"q{s:02d}_{q:03d}"
                    checkpoint = 5 + 5 * (q % 4)
                    qtype = TYPES[q % len(TYPES)]
                    errored = bool(spec.error_every and n % spec.error_every == 0)
                    rec = _record(spec, unit, adapter, scope, rep, qid, checkpoint, errored)
                    records.append(rec)
                    metrics = spec.metrics(adapter, scope, qid, rep)
                    if errored:
                        metrics = {k: None for k in metrics}
                    scores.append(QuestionScores(
                        key=rec.key, unit_key=unit, adapter=adapter, scope_id=scope,
                        repeat=rep, question_id=qid, question_type=qtype,
                        checkpoint=checkpoint, status=rec.status, metrics=metrics,
                        detail=spec.detail))
    if not spec.scored:
        return manifest, records, None
    rs = RunScores(run_dir=root, tiers=[1, 2], questions=scores,
                   judge=JudgeSummary(model="scripted/judge", pairs=spec.judge_pairs,
                                      disagreement_rate=spec.disagreement_rate))
    return manifest, records, rs


def make_run(parent: Path, spec: RunSpec) -> Path:
    """Write the run to disk through the real RunStore."""
    store = RunStore.create(parent, spec.name, f"{spec.name}-id")
    manifest, records, scores = build(spec, str(store.root))
    store.write_manifest(manifest)
    for rec in records:
        store.save_question(rec)
    store.close()
    if scores is not None:
        (store.root / "scores.json").write_text(scores.model_dump_json(indent=1),
                                                encoding="utf-8")
    return store.root


def memory_run(spec: RunSpec) -> RunData:
    """The same run as :func:`make_run`, in memory (for statistics-heavy tests)."""
    manifest, records, scores = build(spec)
    by_key = {q.key: q for q in scores.questions} if scores else {}
    rows = [QuestionRow(record=r, scores=by_key.get(r.key)) for r in records]
    return RunData(root=Path(spec.name), manifest=manifest, rows=rows, scores=scores)


def _record(spec: RunSpec, unit: str, adapter: str, scope: str, rep: int, qid: str,
            checkpoint: int, errored: bool) -> QuestionRecord:
    base = dict(unit_key=unit, adapter=adapter, scope_id=scope, repeat=rep, question_id=qid,
                checkpoint=checkpoint, episodes_ingested=checkpoint)
    if errored:
        return QuestionRecord(**base, status="error", error="ModelError: HTTP 500")
    refs = [f"ep_{scope}_{i}" for i in range(spec.search_results)]
    calls = []
    transcript = [Message(role="system", content="Answer only from memory."),
                  Message(role="user", content=f"What changed in {scope}? ({qid})")]
    if spec.tool_calls:
        calls = [ToolCallRecord(name="memory_search", arguments={"query": "what changed"},
                                ok=True, result_refs=refs, result_count=len(refs),
                                payload_bytes=300, latency_s=0.01)]
        transcript += [
            Message(role="assistant", tool_calls=[ToolCall(
                id="c1", name="memory_search", arguments='{"query": "what changed"}')]),
            Message(role="tool", tool_call_id="c1", name="memory_search",
                    content=json.dumps({"results": [{"ref_id": r, "text": "p99 rose"}
                                                    for r in refs[:1]]})),
        ]
    answer = spec.answer(scope, qid)
    transcript.append(Message(role="assistant", content=answer))
    return QuestionRecord(
        **base, status="answered", answer=answer, cited_refs=refs[:1], retrieved_refs=refs,
        tool_calls=calls, model_calls=[ModelCallRecord(
            role="agent", provider="scripted", model="policy", prompt_tokens=120,
            completion_tokens=30 + len(qid), latency_s=0.01, cost_usd=spec.cost_per_call)],
        transcript=transcript,
        budget=BudgetOutcome(limits={"max_turns": 6}, used={"turns": 2},
                             stop_reason="answered", compliant=True),
        wall_s=0.05)
