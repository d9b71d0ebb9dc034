"""A published protocol scores the certified subset as lens's own metrics do: only the certified
questions, the exclusion said in the notes and the subset part of the scoring condition."""

from __future__ import annotations

import json
from pathlib import Path

from lens.data.dataset_load import load_dataset
from lens.runs.certification import Certification, QuestionCertificate, certification_path
from lens.scoring.scorer import score_run_sync
from tests.protocols.builders import LOCOMO_FAITHFUL, imported, stored_run


def _certify(ds: Path, certified: set[str]) -> None:
    data = json.loads(ds.read_text(encoding="utf-8"))
    cert = Certification(
        dataset_id="locomo", dataset_hash=load_dataset(ds).content_hash(), model="m",
        threshold=0.5, context_bytes=1000, created_at="", run_dir="", questions=[
            QuestionCertificate(scope_id=q["scope_id"], question_id=q["question_id"],
                                status="certified" if q["question_id"] in certified
                                else "parametric_leak",
                                null_fact_recall=0.0, full_context_fact_recall=1.0)
            for q in data["questions"]])
    certification_path(ds).write_text(cert.model_dump_json(), encoding="utf-8")


def test_protocol_scoring_of_the_certified_subset(tmp_path: Path) -> None:
    ds = imported(tmp_path, "locomo")
    qids = [q["question_id"] for q in json.loads(ds.read_text(encoding="utf-8"))["questions"]]
    _certify(ds, set(qids[:2]))
    run = stored_run(tmp_path, ds, {"faithful": LOCOMO_FAITHFUL})

    every = score_run_sync(run, protocol="locomo", write=False)
    subset = score_run_sync(run, protocol="locomo", subset="certified", write=False)

    assert [q.question_id for q in every.questions] == qids
    assert [q.question_id for q in subset.questions] == qids[:2]
    assert subset.aggregates["adapter"]["faithful"]["n_questions"] == 2
    assert subset.settings["subset"] == "certified"
    assert subset.condition["settings"]["subset"] == "certified"
    assert subset.condition_hash != every.condition_hash
    assert "2 certified question(s) scored; 4 excluded" in subset.notes[0]
    # Scoring every question records no subset: its condition is the one recorded before.
    assert "subset" not in every.settings
    assert not any("certified" in n for n in every.notes)
