"""Small builders shared by the core tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def make_dataset(
    n_episodes: int = 10,
    checkpoints: tuple[int, ...] = (3, 7, 10),
    questions_per_checkpoint: int = 2,
    scope_ids: tuple[str, ...] = ("s1",),
    secret: str = "GOLDSECRET",
) -> dict[str, Any]:
    """A small valid LENS dataset whose gold fields all carry ``secret`` so leaks are visible."""
    scopes, questions = [], []
    for sid in scope_ids:
        eps = []
        for i in range(1, n_episodes + 1):
            eps.append({
                "episode_id": f"{sid}_ep_{i:03d}",
                "scope_id": sid,
                # Out of order in the file: the stream must sort by timestamp.
                "timestamp": f"2024-01-{(n_episodes - i) % n_episodes + 1:02d}T10:00:00",
                "text": f"Day report {i} for {sid}. widget count {i * 10}. marker{i}",
                "meta": {"episode_type": "signal", "note": f"{secret}-meta"},
            })
        scopes.append({"scope_id": sid, "episodes": eps})
        k = 0
        for cp in checkpoints:
            for _ in range(questions_per_checkpoint):
                k += 1
                questions.append({
                    "question_id": f"{sid}_q{k:02d}",
                    "scope_id": sid,
                    "checkpoint_after": cp,
                    "question_type": "longitudinal",
                    "prompt": f"How did the widget count change? (question {k})",
                    "ground_truth": {
                        "canonical_answer": f"{secret}-answer",
                        # The episode streamed first (earliest timestamp): evidence must be
                        # ingested by the question's checkpoint.
                        "required_evidence_refs": [f"{sid}_ep_{n_episodes:03d}"],
                        "key_facts": [f"{secret}-fact"],
                    },
                })
    return {"version": "0.1.0", "scopes": scopes, "questions": questions}


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def write_config(path: Path, dataset: Path, **overrides: Any) -> Path:
    import yaml

    cfg: dict[str, Any] = {
        "name": "t",
        "dataset": {"path": str(dataset)},
        "adapters": [{"name": "sqlite_fts"}],
        "agent": {"model": "scripted/policy"},
        "out_dir": str(path.parent / "runs"),
    }
    cfg.update(overrides)
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path
