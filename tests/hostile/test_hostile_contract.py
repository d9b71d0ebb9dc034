"""An arm that breaks the adapter contract fails the run, through the real CLI: every search
raising, or refs that name no episode, make ``lens run`` exit 1 by default and say so in the
terminal, the checklist and the report; the sample-size rows that every small run fails do not
(they decide only with ``--fail-on``), and ``null``'s empty searches are no contract failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.core.helpers import make_dataset, write_json

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "tests.hostile.hostile_adapters"


def lens(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LENS_CACHE_DIR": str(cwd / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "lens", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


def run(tmp_path: Path, adapters: list[dict[str, Any]], *flags: str,
        scopes: tuple[str, ...] = ("s1",)) -> tuple[subprocess.CompletedProcess[str], Path]:
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=6, checkpoints=(3, 6),
                                                       scope_ids=scopes))
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "contract", "dataset": {"path": str(ds)}, "adapters": adapters,
        "agent": {"model": "scripted/policy"}, "out_dir": "runs",
    }), encoding="utf-8")
    res = lens("run", str(cfg), *flags, cwd=tmp_path)
    (run_dir,) = (tmp_path / "runs").iterdir()
    return res, run_dir


def checklist(run_dir: Path) -> dict[str, dict[str, Any]]:
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    return {c["id"]: c for c in summary["checklist"]}


def report_row(run_dir: Path, words: str) -> str:
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    return next(line for line in md.splitlines() if words in line)


def test_an_arm_whose_every_search_fails_fails_the_run(tmp_path: Path) -> None:
    res, run_dir = run(tmp_path, [{"name": "sqlite_fts", "label": "honest"},
                                  {"name": f"{HOSTILE}:SearchRaises", "label": "broken"}])
    # Exit status, with the deciding row on stderr.
    assert res.returncode == 1, res.stdout + res.stderr
    assert "lens: exit status 1: the run failed its purpose" in res.stderr
    assert "FAIL  the memory system answered its calls (per arm): broken:" in res.stderr
    assert "sample" not in res.stderr  # the sample-size rows do not decide
    # The console summary.
    assert "4 tool errors in 4 questions" in res.stdout
    assert "FAIL  the memory system answered its calls" in res.stdout
    # The checklist.
    rows = checklist(run_dir)
    assert rows["memory_calls"]["status"] == "fail"
    assert rows["memory_calls"]["failing"] == ["broken"]
    assert "the index is corrupt" in rows["memory_calls"]["value"]
    # The report.
    row = report_row(run_dir, "the memory system answered its calls")
    assert "**FAIL**" in row and "broken" in row and "honest:" not in row


def test_refs_that_name_no_episode_fail_the_run(tmp_path: Path) -> None:
    res, run_dir = run(tmp_path, [{"name": f"{HOSTILE}:OwnIdsAdapter", "label": "own_ids"}])
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAIL  refs name episodes or declared synthetic refs: own_ids" in res.stderr
    assert "FAIL  refs name episodes or declared synthetic refs" in res.stdout
    assert checklist(run_dir)["unknown_refs"]["status"] == "fail"
    assert "**FAIL**" in report_row(run_dir, "refs name episodes")


def test_sample_size_alone_decides_only_with_fail_on(tmp_path: Path) -> None:
    arms = [{"name": "sqlite_fts"}, {"name": "null"}]
    # Two scopes: from one, the sample-size rows do not apply (N/A), and cannot fail.
    res, run_dir = run(tmp_path, arms, scopes=("s1", "s2"))
    assert res.returncode == 0, res.stdout + res.stderr
    rows = checklist(run_dir)
    assert rows["sample_size"]["status"] == "fail"  # a 12-question run is too small
    assert rows["memory_calls"]["status"] == "pass"  # null's empty searches are no failure
    gated = lens("score", str(run_dir), "--fail-on", "fail", cwd=tmp_path)
    assert gated.returncode == 3, gated.stdout + gated.stderr
    assert "the checklist fails the run (--fail-on)" in gated.stderr


def test_resume_without_retry_errors_says_how_to_ask_errored_questions_again(
        tmp_path: Path) -> None:
    res, run_dir = run(tmp_path, [{"name": f"{HOSTILE}:IngestRaises", "label": "full"}])
    assert res.returncode == 1, res.stdout + res.stderr
    again = lens("run", str(tmp_path / "run.yaml"), "--resume", str(run_dir), cwd=tmp_path)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "(0 answered now, 0 empty, 0 errored, 4 done before)" in again.stdout
    hint = (f"lens: 4 question(s) of this run ended in an error and are kept as they are; after "
            f"fixing the cause, ask them again with: lens run {tmp_path / 'run.yaml'} --resume "
            f"{run_dir} --retry-errors")
    assert hint in again.stderr, again.stderr
