"""A huge field of a run (a 20 MB ``run_id`` in its manifest) is never echoed whole: ``lens
report`` and ``lens compare`` print it cut, through the real CLI. (``lens verify`` and ``lens
cache stats`` are covered beside their own hostile tests.)"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from tests.report.runfactory import RunSpec, make_run

ROOT = Path(__file__).resolve().parents[2]
HUGE = hashlib.shake_256(b"a 20 MB run id").hexdigest(10_000_000)


def _lens(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_a_20_mb_run_id_is_printed_cut(tmp_path: Path) -> None:
    huge = make_run(tmp_path, RunSpec(name="huge", scopes=2, questions_per_scope=3))
    other = make_run(tmp_path, RunSpec(name="other", scopes=2, questions_per_scope=3))
    manifest = json.loads((huge / "manifest.json").read_text(encoding="utf-8"))
    manifest["run_id"] = HUGE
    (huge / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    # The same adapter in two runs is one arm unless both copies are named (by folder here).
    arms = f"{huge.name}:sqlite_fts,{other.name}:sqlite_fts"
    for args in (("report", str(huge)), ("compare", str(huge), str(other), "--arms", arms)):
        proc = _lens(*args)
        assert proc.returncode in (0, 1), (args, proc.stderr[-2000:])
        printed = proc.stdout + proc.stderr
        assert len(printed) < 200_000, (args, len(printed))
        assert HUGE[5000:5100] not in printed, args
        if args[0] == "compare":
            assert HUGE[:90] in printed and "characters cut" in printed


def test_a_config_name_of_900_kb_runs_and_is_printed_cut(tmp_path: Path) -> None:
    """The URL-password scan of the config was quadratic in a run of letters (this name took
    minutes); the run's line names its folder, whose name is cut."""
    import yaml

    from tests.core.helpers import make_dataset, write_json

    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=4, checkpoints=(4,),
                                                       questions_per_checkpoint=1))
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "n" * 900_000, "dataset": {"path": str(ds)}, "adapters": [{"name": "null"}],
        "agent": {"model": "scripted/policy"}, "cache": {"enabled": False},
        "out_dir": str(tmp_path / "runs")}), encoding="utf-8")
    proc = _lens("run", str(cfg), "--quiet")
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert len(proc.stdout) + len(proc.stderr) < 20_000
    (run,) = (tmp_path / "runs").iterdir()
    assert len(run.name) < 255
