"""The viewer's index of a run directory: incremental, newest commit wins, broken files shown."""

from __future__ import annotations

from pathlib import Path

from lens.runs.store import RunStore
from lens.view.index import RunIndex
from tests.report.runfactory import RunSpec, build, make_run


def test_a_broken_scores_file_is_shown_and_a_fixed_one_read(tmp_path: Path) -> None:
    root = make_run(tmp_path, RunSpec(scopes=1, questions_per_scope=3))
    good = (root / "scores.json").read_text()
    (root / "scores.json").write_text("{not json")
    index = RunIndex(root).refresh()
    assert any("scores.json" in p and "not a valid scores file" in p for p in index.problems)
    assert index.metric_names() == []
    (root / "scores.json").write_text(good + " ")  # another size: read again
    index.refresh()
    assert index.problems == [] and "composite" in index.metric_names()


def test_a_question_asked_again_shows_its_newest_answer(tmp_path: Path) -> None:
    spec = RunSpec(scopes=1, questions_per_scope=2)
    store = RunStore.create(tmp_path, "r", "r-id")
    manifest, records, _ = build(spec, str(store.root))
    store.write_manifest(manifest)
    store.save_question(records[0].model_copy(update={"status": "error", "answer": "",
                                                       "error": "HTTP 500"}))
    index = RunIndex(store.root).refresh()
    assert [r.status for r in index.rows.values()] == ["error"]
    store.save_questions(records)
    store.close()
    index.refresh()
    assert [r.status for r in index.rows.values()] == ["answered", "answered"]
    row = index.rows[records[0].key]
    assert index.record(row).answer == records[0].answer
    assert index.progress.statuses[records[0].key] == "answered"
