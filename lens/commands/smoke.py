"""``lens smoke``: a self-check that needs no network and no model download.

It builds a tiny dataset in a temporary folder, runs it through the real runner with SQLite FTS5
and the scripted retrieval policy, and checks the run directory it wrote."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from lens.flow.pipeline import execute
from lens.runs.store import RunStore

_FACTS = [
    "Checkout p99 latency was 310ms with 0.1% errors.",
    "Checkout p99 latency rose to 420ms after the cache config change.",
    "Checkout p99 latency reached 780ms; retries on the payment service doubled.",
    "The cafeteria switched to a new coffee supplier.",
    "Checkout p99 latency hit 1200ms and the payment service paged on-call.",
]


def _dataset() -> dict[str, Any]:
    episodes = [
        {"episode_id": f"smoke_ep_{i + 1}", "scope_id": "smoke",
         "timestamp": f"2024-05-0{i + 1}T09:00:00", "text": f"Daily report. {t}"}
        for i, t in enumerate(_FACTS)
    ]
    questions = [
        {"question_id": "smoke_q1", "scope_id": "smoke", "checkpoint_after": 2,
         "question_type": "longitudinal", "prompt": "How has checkout p99 latency changed?",
         "ground_truth": {"canonical_answer": "It rose from 310ms to 420ms.",
                          "required_evidence_refs": ["smoke_ep_1", "smoke_ep_2"],
                          "key_facts": ["310ms", "420ms"]}},
        {"question_id": "smoke_q2", "scope_id": "smoke", "checkpoint_after": 5,
         "question_type": "temporal", "prompt": "When did the payment service page on-call "
         "about checkout latency?",
         "ground_truth": {"canonical_answer": "On 2024-05-05 at 1200ms.",
                          "required_evidence_refs": ["smoke_ep_5"],
                          "key_facts": ["1200ms"]}},
    ]
    return {"version": "0.1.0", "scopes": [{"scope_id": "smoke", "episodes": episodes}],
            "questions": questions}


def run_smoke() -> list[str]:
    """Run the self-check; return the failed checks (empty when all pass)."""
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="lens-smoke-") as tmp:
        root = Path(tmp)
        (root / "smoke.json").write_text(json.dumps(_dataset()), encoding="utf-8")
        cfg = {"name": "smoke", "dataset": {"path": "smoke.json"},
               "adapters": [{"name": "sqlite_fts"}, {"name": "null"}],
               "agent": {"model": "scripted/policy"}, "out_dir": str(root / "runs"),
               "cache": {"enabled": False}, "scoring": {"enabled": False}}
        (root / "smoke.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
        outcome = execute(root / "smoke.yaml", out=root / "runs")
        records = {(r.adapter, r.question_id): r for r in RunStore(outcome.run_dir)
                   .load_records()}
        if len(records) != 4:
            failures.append(f"expected 4 answered questions, found {len(records)}")
        fts = records.get(("sqlite_fts", "smoke_q1"))
        if fts is None or "420ms" not in fts.answer or "smoke_ep_2" not in fts.cited_refs:
            failures.append("sqlite_fts + scripted policy did not cite the 420ms episode")
        if fts is not None and "smoke_ep_5" in fts.retrieved_refs:
            failures.append("a question saw an episode from after its checkpoint")
        null = records.get(("null", "smoke_q1"))
        if null is None or null.retrieved_refs:
            failures.append("the null adapter returned something")
        manifest = RunStore(outcome.run_dir).manifest()
        if manifest.status != "complete" or len(manifest.condition_hash or "") != 64:
            failures.append("manifest incomplete")
    return failures


def register(sub: Any) -> None:
    p = sub.add_parser("smoke", help="self-check: a tiny offline run (no network, no model)")
    p.set_defaults(handler=_smoke)


def _smoke(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    failures = run_smoke()
    took = time.perf_counter() - started
    if failures:
        for f in failures:
            print(f"FAIL {f}")
        return 1
    print(f"lens smoke: ok ({took:.1f} s): dataset, sqlite_fts, null adapter, scripted agent, "
          "run store and manifest all work")
    return 0
