"""``lens run`` names its run directory before the first question, an interrupt (Ctrl-C, SIGINT)
names it in the resume command, which continues the run, and the steps after the questions
(scoring, the reports) show while they run; the bars give the time left. Through the real CLI
in a subprocess."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.core.helpers import make_dataset, write_json
from tests.support.signals import as_from_a_terminal

ROOT = Path(__file__).resolve().parents[2]
HELD = "tests.isolation.hostile_adapters:HeldHonest"


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "LENS_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("OPENAI_API_KEY", None)
    return env


def _config(tmp_path: Path, adapter: str, questions: int,
            options: dict[str, str] | None = None) -> Path:
    ds = write_json(tmp_path / "ds.json", make_dataset(
        n_episodes=6, checkpoints=(3, 6), questions_per_checkpoint=questions))
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "prog", "dataset": {"path": str(ds)},
        "adapters": [{"name": adapter, "label": "slow",
                      **({"options": options} if options else {})}],
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs"),
        "concurrency": {"questions": 1},
    }), encoding="utf-8")
    return cfg


def test_ctrl_c_names_the_run_directory_in_the_resume_command(tmp_path: Path) -> None:
    # The adapter holds the second question's search at a gate until the test releases it, so
    # the interrupt lands at a known point (one question recorded, the next in flight) however
    # fast or loaded the machine is.
    gate = tmp_path / "gate"
    gate.mkdir()
    cfg = _config(tmp_path, HELD, questions=4, options={"gate": str(gate)})
    proc = subprocess.Popen([sys.executable, "-m", "lens", "run", str(cfg)], cwd=tmp_path,
                            env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **as_from_a_terminal())
    assert proc.stdout is not None
    first = proc.stdout.readline()  # printed before any question is asked
    assert first.startswith("run directory: "), first
    run_dir = Path(first.removeprefix("run directory: ").strip())
    assert run_dir.is_dir() and run_dir.parent == tmp_path / "runs"
    records = run_dir / "records.jsonl"
    while not ((gate / "held").is_file() and records.is_file()
               and records.read_text(encoding="utf-8").strip()):
        assert proc.poll() is None, "the run ended before it reached the gate"
        time.sleep(0.05)  # polling for the two events, not waiting out a duration
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    expected = f"lens run {shlex.quote(str(cfg))} --resume {shlex.quote(str(run_dir))}"
    assert f"resume with: {expected}" in err, err
    assert "Traceback" not in err
    # The printed command continues the run; the gate is open for it.
    (gate / "release").touch()
    resumed = subprocess.run([sys.executable, "-m", "lens", *shlex.split(expected)[1:],
                              "--quiet"], cwd=tmp_path, env=_env(tmp_path),
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "done before" in resumed.stdout and " 0 done before" not in resumed.stdout


def test_scoring_and_reports_show_and_the_bars_give_an_eta(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "sqlite_fts", questions=2)
    done = subprocess.run([sys.executable, "-m", "lens", "run", str(cfg)], cwd=tmp_path,
                          env={**_env(tmp_path), "COLUMNS": "160"}, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("run directory: ")
    assert done.stdout.count("run directory: ") == 1
    assert "eta" in done.stderr
    assert "scoring the answers" in done.stderr, done.stderr
    assert "writing the reports" in done.stderr
    assert done.stderr.index("questions") < done.stderr.index("scoring the answers") \
        < done.stderr.index("writing the reports")
