"""Every protocol, lens's own and the published ones, scores on one path: a question the run
dropped is skipped (and an erratum naming it counts as excluded) whichever protocol scores, and
the ``scoring_done`` event carries the same fields for each. Through ``lens score`` over a real
run directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lens.data.dataset_load import load_dataset_dropping
from lens.runs.events import ScoringDone
from lens.runs.store import RunStore
from lens.scoring.protocols import PROTOCOLS, ScoringProtocol, scoring_protocol
from lens.scoring.protocols.lens import LensProtocol
from lens.scoring.protocols.run import PublishedProtocol
from tests.protocols.builders import LOCOMO_FAITHFUL, imported
from tests.scoring.scoring_fixtures import record
from tests.support.cli import Lens, cli_runner

DROPPED = "locomo_conv-1_q006"
ERRATA = f"""\
source: hand-checked against the conversation
errata:
  - question_id: locomo_conv-1_q002
    action: exclude
  - question_id: {DROPPED}
    action: exclude
"""


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _run_with_a_dropped_question(tmp: Path) -> Path:
    """A LoCoMo run whose sixth question has a checkpoint out of range, so the run dropped it
    (as ``lens run --drop-invalid-questions`` does): the manifest lists it in
    ``dataset.dropped`` and the run stored answers to the other five."""
    path = imported(tmp, "locomo")
    data = json.loads(path.read_text(encoding="utf-8"))
    bad = next(q for q in data["questions"] if q["question_id"] == DROPPED)
    bad["checkpoint_after"] = 99
    path.write_text(json.dumps(data), encoding="utf-8")
    ds, dropped = load_dataset_dropping(path, drop_invalid=True)
    assert [d.question_id for d in dropped] == [DROPPED]
    store = RunStore.create(tmp / "run", "t", "run1")
    store.write_manifest({
        "run_id": "run1", "status": "complete",
        "config": {"name": "t", "dataset": {"path": str(path)},
                   "adapters": [{"name": "sqlite_fts"}], "agent": {"model": "scripted/policy"}},
        "dataset": {"id": ds.dataset_id, "path": str(path), "content_hash": ds.content_hash(),
                    "dropped": [d.model_dump() for d in dropped]},
        "condition": {"dataset_hash": ds.content_hash()},
    })
    records = [record(q.question_id, text, adapter="faithful", scope=q.scope_id,
                      checkpoint=q.checkpoint_after)
               for q, text in zip(ds.questions, LOCOMO_FAITHFUL, strict=False)]
    store.append_event("unit_started", records[0].unit_key, capabilities={})
    for r in records:
        store.save_question(r)
    store.close()
    return store.root


def _scores(run: Path) -> dict:
    return json.loads((run / "scores.json").read_text(encoding="utf-8"))


def _done(run: Path) -> ScoringDone:
    done = ScoringDone.latest(RunStore.open(run).events())
    assert done is not None
    return done


@pytest.mark.parametrize("protocol", ["locomo", "lens"])
def test_a_dropped_question_is_skipped_under_every_protocol(tmp_path: Path, lens: Lens,
                                                             protocol: str) -> None:
    run = _run_with_a_dropped_question(tmp_path)
    result = lens("score", str(run), "--tier", "1", "--protocol", protocol)
    assert result.returncode == 0, result.stderr
    scores = _scores(run)
    ids = [q["question_id"] for q in scores["questions"]]
    assert len(ids) == 5 and DROPPED not in ids
    assert scores["aggregates"]["adapter"]["faithful"]["n_questions"] == 5
    done = _done(run)
    assert done.protocol == protocol and done.tiers == [1] and done.errata is None


@pytest.mark.parametrize("protocol", ["locomo", "lens"])
def test_an_erratum_naming_a_dropped_question_counts_as_excluded_under_every_protocol(
        tmp_path: Path, lens: Lens, protocol: str) -> None:
    run = _run_with_a_dropped_question(tmp_path)
    errata = tmp_path / "errata.yaml"
    errata.write_text(ERRATA, encoding="utf-8")
    result = lens("score", str(run), "--tier", "1", "--protocol", protocol,
                  "--errata", str(errata))
    assert result.returncode == 0, result.stderr
    scores = _scores(run)
    # The dropped question is not scored; q002 is excluded from the numbers.
    assert DROPPED not in [q["question_id"] for q in scores["questions"]]
    assert scores["aggregates"]["adapter"]["faithful"]["n_questions"] == 4
    # Both entries touched the run: the dropped question counts among the six asked of the
    # dataset and is excluded, not an entry naming no question.
    note = next(n for n in scores["notes"] if n.startswith("gold errata"))
    assert "touched 2 of 6" in note and "2 excluded, 0 corrected" in note
    assert "name no question" not in note
    assert scores["settings"]["errata"]["entries"] == 2
    done = _done(run)
    assert (done.protocol, done.errata, done.errata_touched) == (protocol, "errata.yaml", 2)


def test_every_protocol_name_gives_a_protocol_on_the_one_path() -> None:
    assert isinstance(scoring_protocol("lens"), LensProtocol)
    for name in PROTOCOLS:
        chosen = scoring_protocol(name)
        assert isinstance(chosen, PublishedProtocol) and isinstance(chosen, ScoringProtocol)
        assert chosen.name == name == chosen.protocol.name
