"""``lens judge calibrate``: answers of known quality, and judges with known habits measured
through the real CLI against the fake OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lens.data.dataset_load import load_dataset
from lens.scoring.judging.calibration import Calibration, calibration_path
from lens.scoring.judging.calibration_answers import FLAWED_KINDS, build_items, subtly_wrong
from lens.scoring.judging.judge_prompts import judge_prompts_hash
from tests.scoring import judge_fakes
from tests.support.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "datasets" / "quickstart.json"


def test_subtly_wrong_changes_one_token_of_each_kind() -> None:
    cases = {
        "CHG-9437 caused it.": ("CHG-9437", "CHG-9438", "identifier"),
        "It started on 2024-09-25.": ("2024-09-25", "2024-09-28", "date"),
        "p99 reached 1,200 ms.": ("1,200", "1,560", "number"),
        "Latency rose sharply.": ("rose", "fell", "direction"),
    }
    for text, (old, new, what) in cases.items():
        changed, change = subtly_wrong(text, [text], seed=0) or ("", None)
        assert change is not None and (change.old, change.new, change.what) == (old, new, what)
        assert changed == text.replace(old, new)
    assert subtly_wrong("Nothing to change here.", [], seed=0) is None
    # The kind of change rotates with the seed; within a kind, a token a key fact names is
    # preferred, so the change contradicts a graded fact.
    text = "Latency rose to 290 ms after CHG-9437, not after DEP-5266."
    kinds = set()
    for seed in range(12):
        _, change = subtly_wrong(text, ["CHG-9437 raised latency"], seed) or ("", None)
        assert change is not None
        kinds.add(change.what)
        if change.what == "identifier":
            assert change.old == "CHG-9437"
    assert kinds == {"identifier", "number", "direction"}


def test_items_are_seeded_by_the_data_and_flawed_answers_are_flawed() -> None:
    ds = load_dataset(QUICKSTART)
    items = build_items(ds, 6)
    assert [i.question_id for i in items] == [i.question_id for i in build_items(ds, 6)]
    assert len(items) == 6
    for it in items:
        assert {"wrong", "stuffed", "vague"} <= set(it.flawed) <= set(FLAWED_KINDS)
        assert all(answer != it.correct for answer in it.flawed.values())
        # A yes/no conclusion is reversed; the key facts' values are listed bare.
        if it.conclusion and it.conclusion.split(":")[0] in ("yes", "no"):
            assert "reversed" in it.flawed
        if it.key_facts:
            assert "bare_list" in it.flawed and "other_question" in it.flawed
        assert len(it.flawed["stuffed"]) > 1.2 * len(it.correct)
        assert len(it.flawed["vague"]) < len(it.flawed["stuffed"])
        # Shorter than the correct answer wherever one fits, so both sides of the length
        # bias are measured.
        assert len(it.flawed["vague"]) * 1.2 <= len(it.correct) or len(it.correct) < 80
        assert not any(f in it.flawed["vague"] for f in it.key_facts)


def _calibrate(tmp_path: Path, policy: judge_fakes.Policy, *extra: str,
               limit: int = 6) -> tuple[subprocess.CompletedProcess[str], FakeOpenAI, Path]:
    out = tmp_path / "cal.json"
    with FakeOpenAI(judge_fakes.responder(policy)) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LENS_CACHE_DIR": str(tmp_path / "cache")}
        proc = subprocess.run(
            [sys.executable, "-m", "lens", "judge", "calibrate", "--judge", "openai/fake-judge",
             "--base-url", server.base_url, str(QUICKSTART), "--limit", str(limit),
             "--out", str(out), *extra],
            capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    return proc, server, out


def test_an_honest_judge_passes(tmp_path: Path) -> None:
    faithful: dict[str, list[str]] = {}
    for q in load_dataset(QUICKSTART).questions:
        faithful.setdefault(q.prompt, []).append(q.ground_truth.canonical_answer)
    proc, server, out = _calibrate(tmp_path, judge_fakes.oracle(faithful))
    assert proc.returncode == 0, proc.stderr
    cal = Calibration.model_validate_json(out.read_text())
    items = build_items(load_dataset(QUICKSTART), 6)
    assert cal.questions == 6 and cal.pairs == sum(len(it.flawed) for it in items)
    asked = {k for it in items for k in it.flawed}
    assert {"reversed", "hedged", "bare_list", "other_question"} <= asked
    assert cal.accuracy == 1.0
    assert cal.accuracy_by_kind == {k: 1.0 if k in asked else None for k in FLAWED_KINDS}
    assert all(cal.fooled_by_kind[k] == 0.0 for k in asked)
    assert cal.position_disagreement == 0.0 and cal.length_bias == 0.0
    assert cal.fact_credit["correct"] == 1.0
    assert all(cal.fact_credit[k] == 0 for k in asked if cal.fact_credit.get(k) is not None)
    assert cal.status == "pass" and cal.problems == []
    assert "calibration: PASS" in proc.stdout and "accuracy 100.0%" in proc.stdout
    # Every judge request asked for the structured verdict format.
    bodies = [r.body for r in server.requests]
    assert all(b["response_format"]["type"] == "json_schema" for b in bodies)
    assert cal.verdicts == len(bodies) and cal.unreadable == 0
    # Stored where reports look: the cache folder, keyed by judge model + prompts.
    stored = calibration_path(tmp_path / "cache" / "judge-calibrations", "openai/fake-judge",
                              judge_prompts_hash())
    assert json.loads(stored.read_text())["accuracy"] == 1.0
    assert f"stored for reports: {stored}" in proc.stdout


def test_a_length_biased_judge_is_flagged(tmp_path: Path) -> None:
    proc, _, out = _calibrate(tmp_path, judge_fakes.longer)
    assert proc.returncode == 0, proc.stderr
    cal = Calibration.model_validate_json(out.read_text())
    # It always picks the longer answer: pasted records beat the correct answer in both
    # orders, so the position swap shows no disagreement at all; the length bias does.
    assert cal.accuracy_by_kind["stuffed"] == 0.0
    # Every figure hedged makes an answer longer: this judge is fooled by each one.
    assert cal.fooled_by_kind["stuffed"] == cal.fooled_by_kind["hedged"] == 1.0
    assert "fooled" in proc.stdout
    assert cal.position_disagreement is not None and cal.position_disagreement < 0.6
    assert cal.longer_flawed_win_rate == 1.0 and cal.shorter_flawed_win_rate == 0.0
    assert cal.length_bias == 1.0
    # Its fact grades credit the pasted records almost as much as the correct answer.
    assert cal.fact_grade_gap is not None and cal.fact_grade_gap < 0.5
    assert any("fact-grade gap" in p for p in cal.problems)
    assert cal.status == "fail"
    assert any(p.startswith("fail: length bias +1.00") for p in cal.problems)
    assert "calibration: FAIL" in proc.stdout


def test_a_position_biased_judge_is_flagged(tmp_path: Path) -> None:
    proc, _, out = _calibrate(tmp_path, judge_fakes.position_a, "--no-fact-grades")
    assert proc.returncode == 0, proc.stderr
    cal = Calibration.model_validate_json(out.read_text())
    assert cal.position_disagreement == 1.0 and cal.position_a_rate == 1.0
    assert cal.accuracy == 0.0 and cal.length_bias == 0.0
    assert cal.fact_credit == {} and cal.status == "fail"


def test_an_unreadable_judge_is_unknown_not_half(tmp_path: Path) -> None:
    proc, server, out = _calibrate(tmp_path, judge_fakes.garbage, "--no-fact-grades",
                                   limit=2)
    assert proc.returncode == 0, proc.stderr
    cal = Calibration.model_validate_json(out.read_text())
    pairs = sum(len(it.flawed) for it in build_items(load_dataset(QUICKSTART), 2))
    assert cal.unreadable == cal.verdicts == 2 * pairs
    assert cal.accuracy is None and cal.position_disagreement is None
    assert all(r.final is None for r in cal.results)
    # Each verdict was asked twice: once, then with the format reminder.
    assert len(server.requests) == 4 * pairs
    retry = server.requests[-1].body["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert '{"verdict": "A"}' in retry[-1]["content"]
    assert cal.status == "fail"


@pytest.mark.parametrize(("argv", "message"), [
    (["judge", "calibrate", "datasets/quickstart.json"], "no judge: give --judge MODEL"),
    (["judge", "calibrate", "--judge", "noslash", "datasets/quickstart.json"],
     "must look like provider/model"),
    (["judge", "calibrate", "--judge", "openai/x", "missing.json"], "missing.json"),
    (["judge", "calibrate", "--judge", "openai/x", "--limit", "-1",
      "datasets/quickstart.json"], "--limit"),
])
def test_user_errors_exit_2(argv: list[str], message: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "lens", *argv], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_the_judge_of_a_run_config(tmp_path: Path) -> None:
    """--config takes the judge settings and the cache folder of a run config."""
    faithful: dict[str, list[str]] = {}
    for q in load_dataset(QUICKSTART).questions:
        faithful.setdefault(q.prompt, []).append(q.ground_truth.canonical_answer)
    with FakeOpenAI(judge_fakes.responder(judge_fakes.oracle(faithful))) as server:
        config = tmp_path / "run.yaml"
        config.write_text(json.dumps({
            "dataset": {"path": str(QUICKSTART)}, "adapters": [{"name": "sqlite_fts"}],
            "agent": {"model": "scripted/policy"},
            "judge": {"model": "openai/fake-judge", "base_url": server.base_url},
            "cache": {"path": "cache/models.sqlite"}}), encoding="utf-8")
        proc = subprocess.run(
            [sys.executable, "-m", "lens", "judge", "calibrate", "--config", str(config),
             str(QUICKSTART), "--limit", "2", "--no-fact-grades"],
            capture_output=True, text=True, timeout=300, cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert "calibration: PASS" in proc.stdout
    stored = calibration_path(tmp_path / "cache" / "judge-calibrations", "openai/fake-judge",
                              judge_prompts_hash())
    pairs = sum(len(it.flawed) for it in build_items(load_dataset(QUICKSTART), 2))
    assert Calibration.model_validate_json(stored.read_text()).pairs == pairs
    assert (tmp_path / "judge-calibration.json").is_file()
