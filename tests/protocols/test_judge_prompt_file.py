"""A protocol's judge reading its prompts from a file (``scoring.judge_prompt_file``, ``lens
score --judge-prompt-file``): LongMemEval's official ``evaluate_qa.py`` read from a copy of the
official repository, or a mapping of prompt ids; the file's hash in the scoring condition; every
problem of a bad file named with the file and the prompt."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lens.core.errors import UserError
from lens.scoring.protocols import get_protocol
from lens.scoring.protocols.longmemeval import PROMPTS
from tests.protocols.builders import LME_FAITHFUL, imported, stored_run
from tests.support.beside import require_beside

ROOT = Path(__file__).resolve().parents[2]
MINE = "Judge by the house rules."


def _mapping(tmp: Path) -> Path:
    """Every LongMemEval prompt with a distinctive first line, lens's placeholders kept."""
    path = tmp / "prompts.yaml"
    path.write_text(yaml.safe_dump({pid: f"{MINE} ({pid})\n" + t.split("\n\n", 1)[1]
                                    for pid, t in PROMPTS.items()}), encoding="utf-8")
    return path


def test_official_evaluate_qa_gives_each_type_its_template() -> None:
    official = require_beside("thirdparty", "longmemeval-code", "src", "evaluation",
                              "evaluate_qa.py", what="LongMemEval's official evaluate_qa.py")
    p = get_protocol("longmemeval").with_prompt_file(official)
    assert set(p.prompts) == set(PROMPTS)
    assert "off-by-one" in p.prompts["longmemeval-temporal@1"]
    assert "updated answer" in p.prompts["longmemeval-update@1"]
    assert "off-by-one" not in p.prompts["longmemeval-factual@1"]
    assert "Rubric: {gold}" in p.prompts["longmemeval-preference@1"]
    assert "unanswerable" in p.prompts["longmemeval-abstention@1"]
    assert all("Please answer yes" in t for t in p.prompts.values())
    cond = p.condition()
    assert cond["prompt_file"] == {"name": "evaluate_qa.py", "sha256": hashlib.sha256(
        official.read_bytes()).hexdigest()}
    assert cond["prompts_hash"] != get_protocol("longmemeval").condition()["prompts_hash"]
    assert "prompt_file" not in get_protocol("longmemeval").condition()


def test_a_bad_file_names_the_file_the_prompt_and_the_fix(tmp_path: Path) -> None:
    lme = get_protocol("longmemeval")
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"longmemeval-factual@1": "Q: {question} A: {answer}",
                                   "longmemeval-nope@1": "x"}), encoding="utf-8")
    with pytest.raises(UserError) as err:
        lme.with_prompt_file(bad)
    msg = str(err.value)
    assert "bad.yaml" in msg and "longmemeval-nope@1: not a prompt" in msg
    assert "longmemeval-factual@1: its placeholders are ['answer', 'question']" in msg
    with pytest.raises(UserError, match="file not found"):
        lme.with_prompt_file(tmp_path / "missing.py")
    (tmp_path / "other.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    with pytest.raises(UserError, match="no function get_anscheck_prompt"):
        lme.with_prompt_file(tmp_path / "other.py")
    with pytest.raises(UserError, match="protocol locomo reads its judge prompts from lens"):
        get_protocol("locomo").with_prompt_file(_mapping(tmp_path))


def _lens(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LENS_CACHE_DIR": str(cwd / "cache")}
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=env)


def test_lens_score_with_a_prompt_file_uses_it_and_records_its_hash(tmp_path: Path) -> None:
    ds = imported(tmp_path, "longmemeval")
    run = stored_run(tmp_path, ds, {"faithful": LME_FAITHFUL})
    # The judge says yes only to the file's wording: every verdict shows which prompt it read.
    (tmp_path / "judge.yaml").write_text(yaml.safe_dump(
        {"rules": [{"contains": MINE, "text": "yes"}], "default": "no"}), encoding="utf-8")
    mapping = _mapping(tmp_path)
    r = _lens(tmp_path, "score", str(run), "--tier", "2", "--protocol", "longmemeval",
              "--judge", "scripted/judge.yaml", "--judge-prompt-file", str(mapping))
    assert r.returncode == 0, r.stderr
    scores = json.loads((run / "scores.json").read_text(encoding="utf-8"))
    assert scores["aggregates"]["adapter"]["faithful"]["longmemeval_accuracy"] == 1.0
    file_cond = scores["settings"]["protocol"]["prompt_file"]
    assert file_cond == {"name": "prompts.yaml",
                         "sha256": hashlib.sha256(mapping.read_bytes()).hexdigest()}
    first = scores["condition_hash"]
    # lens's own wording: the same judge says no to everything, under another condition.
    r = _lens(tmp_path, "score", str(run), "--tier", "2", "--protocol", "longmemeval",
              "--judge", "scripted/judge.yaml")
    assert r.returncode == 0, r.stderr
    scores = json.loads((run / "scores.json").read_text(encoding="utf-8"))
    assert scores["aggregates"]["adapter"]["faithful"]["longmemeval_accuracy"] == 0.0
    assert "prompt_file" not in scores["settings"]["protocol"]
    assert scores["condition_hash"] != first
    # lens's own protocol takes no prompt file: exit 2 with the fix.
    r = _lens(tmp_path, "score", str(run), "--tier", "1", "--judge-prompt-file", str(mapping))
    assert r.returncode == 2 and "judge_prompt_file" in r.stderr


def test_the_config_field_resolves_against_the_config_folder(tmp_path: Path) -> None:
    from lens.data.config import load_config

    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "dataset": {"path": "d.json"}, "adapters": [{"name": "sqlite_fts"}],
        "agent": {"model": "scripted/policy"},
        "scoring": {"protocol": "longmemeval", "judge_prompt_file": "official/evaluate_qa.py",
                    "errata": "errata.json"}}), encoding="utf-8")
    scoring = load_config(cfg).scoring
    assert scoring.judge_prompt_file == tmp_path / "official" / "evaluate_qa.py"
    assert scoring.errata == tmp_path / "errata.json"
