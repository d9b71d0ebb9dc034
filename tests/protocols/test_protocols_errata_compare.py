"""Gold errata (format, application, the ceiling they imply) and the scoring condition that keeps
protocols apart, through the real CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lens.core.errors import UserError
from lens.scoring.foundations.errata import load_errata
from lens.scoring.scorer import score_run_sync
from tests.protocols.builders import LOCOMO_FAITHFUL, imported, stored_run

ROOT = Path(__file__).resolve().parents[2]


def _errata(tmp: Path, body: str, name: str = "errata.yaml") -> Path:
    path = tmp / name
    path.write_text(body, encoding="utf-8")
    return path


GOOD = """\
source: hand-checked against the conversation
errata:
  - question_id: locomo_conv-1_q001
    action: correct
    answer: a dog named Rex
    source: session 1, turn 1
  - question_id: locomo_conv-1_q002
    action: exclude
"""


def test_errata_correct_and_exclude_by_hand(tmp_path: Path) -> None:
    ds = imported(tmp_path, "locomo")
    run = stored_run(tmp_path, ds, {"faithful": LOCOMO_FAITHFUL})
    scores = score_run_sync(run, protocol="locomo", errata=_errata(tmp_path, GOOD))
    f = scores.aggregates["adapter"]["faithful"]
    # q1 against "a dog named Rex": P 3/5, R 3/3 -> 0.75; q2 excluded; the rest as before.
    f1s = [0.75, 6 / 7, 2 / 3, 1.0, 0.0]
    assert f["n_questions"] == 5
    assert f["locomo_f1"] == pytest.approx(sum(f1s) / 5)
    q2 = next(q for q in scores.questions if q.question_id.endswith("q002"))
    assert q2.metrics == {} and "excluded" in q2.detail["errata"]
    note = next(n for n in scores.notes if n.startswith("gold errata"))
    # 2 of 6 gold answers are wrong as published: the ceiling against them is 4/6.
    assert "touched 2 of 6" in note and "1 excluded, 1 corrected" in note and "66.7%" in note
    section = json.loads((run / "sections" / "protocol.json").read_text())
    assert section["metrics"]["errata_touched"] == 2
    assert section["metrics"]["score_ceiling_uncorrected_gold"] == pytest.approx(0.6667)
    assert scores.condition["settings"]["errata"]["entries"] == 2


def test_errata_under_lens_own_protocol(tmp_path: Path) -> None:
    ds = imported(tmp_path, "locomo")
    run = stored_run(tmp_path, ds, {"faithful": LOCOMO_FAITHFUL})
    scores = score_run_sync(run, tiers={1}, errata=_errata(tmp_path, GOOD))
    assert len(scores.questions) == 5
    assert "errata" in scores.condition["settings"]
    assert any("touched 2 of 6" in n for n in scores.notes)


@pytest.mark.parametrize("body, message", [
    ("errata:\n  - question_id: x\n    action: correct\n    source: s\n",
     "errata[0]: action 'correct' needs the corrected 'answer'"),
    ("errata:\n  - question_id: x\n    action: exclude\n",
     "errata[0].source: every entry needs a source"),
    ("errata:\n  - question_id: x\n    action: drop\n    source: s\n", "errata[0].action"),
    ("errata:\n  - question_id: x\n    action: exclude\n    source: s\n    colour: red\n",
     "errata[0].colour: unknown field"),
    ("source: s\nerrata:\n  - {question_id: x, action: exclude}\n"
     "  - {question_id: x, action: exclude}\n", "errata[1].question_id: 'x' is listed twice"),
])
def test_bad_errata_name_the_file_and_field(tmp_path: Path, body: str, message: str) -> None:
    path = _errata(tmp_path, body)
    with pytest.raises(UserError) as exc:
        load_errata(path)
    assert str(path) in str(exc.value) and message in str(exc.value)


def test_errata_of_another_dataset_are_refused(tmp_path: Path) -> None:
    ds = imported(tmp_path, "locomo")
    run = stored_run(tmp_path, ds, {"faithful": LOCOMO_FAITHFUL})
    path = _errata(tmp_path, "dataset: longmemeval_s\n" + GOOD)
    with pytest.raises(UserError, match="errata are for dataset 'longmemeval_s'"):
        score_run_sync(run, protocol="locomo", errata=path)


def _lens(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_cli_scores_under_a_protocol_and_compare_refuses_to_mix_protocols(
        tmp_path: Path) -> None:
    ds = imported(tmp_path, "locomo")
    run_a = stored_run(tmp_path, ds, {"faithful": LOCOMO_FAITHFUL}, name="a")
    run_b = tmp_path / "b"
    shutil.copytree(run_a, run_b)
    manifest = json.loads((run_b / "manifest.json").read_text())
    manifest["run_id"] = "run2"
    (run_b / "manifest.json").write_text(json.dumps(manifest))
    r = _lens("score", str(run_a), "--tier", "1", "--protocol", "locomo")
    assert r.returncode == 0, r.stderr
    assert "faithful|single-hop" in r.stdout and "locomo_f1" in r.stdout
    r = _lens("score", str(run_b), "--tier", "1")
    assert r.returncode == 0, r.stderr
    c = _lens("compare", str(run_a), str(run_b))
    assert c.returncode == 2, c.stdout + c.stderr
    assert "scoring_protocol" in c.stderr and "locomo" in c.stderr
    bad = _lens("score", str(run_a), "--tier", "1", "--protocol", "locomo", "--errata",
                str(_errata(tmp_path, "errata: []\nsurprise: 1\n")))
    assert bad.returncode == 2 and "surprise" in bad.stderr


def test_report_shows_the_protocol_section(tmp_path: Path) -> None:
    ds = imported(tmp_path, "locomo")
    run = stored_run(tmp_path, ds, {"faithful": LOCOMO_FAITHFUL})
    assert _lens("score", str(run), "--tier", "1", "--protocol", "locomo", "--errata",
                 str(_errata(tmp_path, GOOD))).returncode == 0
    r = _lens("report", str(run))
    assert r.returncode == 0, r.stderr
    md = (run / "report.md").read_text()
    assert "LoCoMo protocol (version 1)" in md
    assert "faithful: by category" in md and "open-domain" in md
    assert "score ceiling is 66.7%" in md
    assert "LoCoMo protocol" in (run / "report.html").read_text()


def test_lens_run_scores_under_the_configured_protocol_and_errata(tmp_path: Path) -> None:
    ds = imported(tmp_path, "locomo")
    _errata(tmp_path, GOOD)
    config = tmp_path / "run.yaml"
    config.write_text(
        f"name: locomo-protocol\ndataset: {{path: {ds.name}}}\nout_dir: {tmp_path / 'runs'}\n"
        "adapters: [{name: sqlite_fts}]\nagent: {model: scripted/policy}\n"
        "cache: {enabled: false}\nscoring: {protocol: locomo, errata: errata.yaml}\n")
    r = _lens("run", str(config))
    assert r.returncode == 0, r.stderr[-2000:]
    (run,) = (tmp_path / "runs").iterdir()
    scores = json.loads((run / "scores.json").read_text())
    assert scores["settings"]["protocol"]["name"] == "locomo"
    assert scores["settings"]["errata"]["entries"] == 2
    assert scores["aggregates"]["adapter"]["sqlite_fts"]["n_questions"] == 5
    assert "LoCoMo protocol" in (run / "report.md").read_text()
