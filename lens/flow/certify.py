"""``lens datasets certify``: run a dataset's questions with no memory and with every episode,
and write its certification (the file's shape and its use: :mod:`lens.runs.certification`)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import yaml

from lens.core.errors import UserError
from lens.data.dataset_load import load_dataset
from lens.flow.pipeline import execute
from lens.runs.certification import (
    Certification,
    QuestionCertificate,
    certification_path,
    classify,
)
from lens.runs.store import atomic_write_text, now_iso


def _config(dataset_path: Path, model: str, runs_dir: Path, context_bytes: int,
            seed: int) -> dict[str, object]:
    return {
        "name": "certify",
        "dataset": {"path": str(dataset_path.resolve())},
        "adapters": [{"name": "null"},
                     {"name": "full_context",
                      "options": {"max_chars": context_bytes, "max_results": 10_000}}],
        "agent": {"model": model, "budget": {"max_payload_bytes": context_bytes}},
        "out_dir": str(runs_dir.resolve()),
        "seed": seed,
        "report": False,
    }


def certify(dataset_path: str | Path, model: str, *, runs_dir: Path = Path("runs"),
            out: Path | None = None, threshold: float = 0.5, context_bytes: int = 64_000,
            seed: int = 0) -> tuple[Certification, Path]:
    """Run the two arms, classify every question and write the certification file."""
    if not 0 < threshold <= 1:
        raise UserError(f"--threshold must be within (0, 1] (got {threshold})")
    path = Path(dataset_path)
    dataset = load_dataset(path)
    with tempfile.TemporaryDirectory(prefix="lens-certify-") as tmp:
        cfg = Path(tmp) / "certify.yaml"
        cfg.write_text(yaml.safe_dump(_config(path, model, runs_dir, context_bytes, seed)),
                       encoding="utf-8")
        outcome = execute(cfg)
    scores = json.loads((outcome.run_dir / "scores.json").read_text(encoding="utf-8"))
    recall: dict[tuple[str, str, str], float | None] = {}
    for q in scores["questions"]:
        value = q["metrics"].get("fact_recall") if q["status"] == "answered" else None
        recall[(q["adapter"], q["scope_id"], q["question_id"])] = value
    certs = []
    for q in dataset.questions:
        null_fr = recall.get(("null", q.scope_id, q.question_id))
        full_fr = recall.get(("full_context", q.scope_id, q.question_id))
        certs.append(QuestionCertificate(
            scope_id=q.scope_id, question_id=q.question_id,
            status=classify(null_fr, full_fr, threshold),
            null_fact_recall=null_fr, full_context_fact_recall=full_fr))
    # The loader names a dataset without an id after its file.
    cert = Certification(dataset_id=dataset.dataset_id or path.stem,
                         dataset_hash=dataset.content_hash(), model=model, threshold=threshold,
                         context_bytes=context_bytes,
                         created_at=now_iso(), run_dir=str(outcome.run_dir), questions=certs)
    target = out or certification_path(path)
    atomic_write_text(target, cert.model_dump_json(indent=1))
    return cert, target


