"""No folder a user runs lens from breaks it, with lens installed editable (the README's way) in
a fresh virtualenv: the ``lens`` script beside a ``lens/`` folder (a clone, a project of that
name) runs isolated adapters, and ``python -m lens`` from a clone's parent folder, which Python
itself resolves to the wrong folder, says so and exits 2."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.core.helpers import make_dataset, write_json
from tests.isolation.test_isolation_workdir import ADAPTER
from tests.support.venv import Venv, editable_lens

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Venv]:
    yield editable_lens(tmp_path_factory.mktemp("venv") / "env")


def _environ(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "LENS_CACHE_DIR": str(tmp / "cache")}


def _project(work: Path, lens_init: bool) -> None:
    (work / "lens").mkdir(parents=True)
    if lens_init:
        (work / "lens" / "__init__.py").write_text("# not lens\n", encoding="utf-8")
    else:
        (work / "lens" / "README.md").write_text("a clone's folder\n", encoding="utf-8")
    (work / "datasets").mkdir()
    write_json(work / "datasets" / "ds.json",
               make_dataset(n_episodes=4, checkpoints=(2, 4), questions_per_checkpoint=1))
    (work / "recent_memory.py").write_text(ADAPTER, encoding="utf-8")
    (work / "run.yaml").write_text(yaml.safe_dump({
        "name": "shadow", "dataset": {"path": "datasets/ds.json"},
        "adapters": [{"name": "recent_memory:RecentMemory", "label": "recent",
                      "isolation": "process"}],
        "agent": {"model": "scripted/policy"}, "out_dir": "runs",
        "cache": {"enabled": False},
    }), encoding="utf-8")


@pytest.mark.parametrize("lens_init", [False, True], ids=["namespace-folder", "package-folder"])
def test_the_lens_script_beside_a_lens_folder_runs_isolated_units(
        env: Venv, tmp_path: Path, lens_init: bool) -> None:
    work = tmp_path / "project"
    _project(work, lens_init)
    proc = subprocess.run([str(env.lens), "run", "run.yaml", "--quiet"], cwd=work,
                          capture_output=True, text=True, env=_environ(tmp_path), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 answered now, 0 empty, 0 errored" in proc.stdout, proc.stdout
    (run,) = (work / "runs").iterdir()
    records = [json.loads(line) for line in
               (run / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["status"] for r in records] == ["answered", "answered"]


def test_python_m_lens_from_a_clones_parent_says_what_happened(env: Venv,
                                                               tmp_path: Path) -> None:
    parent = tmp_path / "src"
    (parent / "lens").mkdir(parents=True)  # a clone of lens, seen from its parent folder
    proc = subprocess.run([str(env.python), "-m", "lens", "--version"], cwd=parent,
                          capture_output=True, text=True, env=_environ(tmp_path), timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert str(parent / "lens") in proc.stderr
    assert "Run lens from another folder, or use the `lens` command" in proc.stderr
    # From any other folder the same interpreter runs lens.
    elsewhere = subprocess.run([str(env.python), "-m", "lens", "--version"], cwd=tmp_path,
                               capture_output=True, text=True, env=_environ(tmp_path),
                               timeout=120)
    assert elsewhere.returncode == 0 and elsewhere.stdout.startswith("lens "), elsewhere.stderr
    script = subprocess.run([str(env.lens), "--version"], cwd=parent, capture_output=True,
                            text=True, env=_environ(tmp_path), timeout=120)
    assert script.returncode == 0 and script.stdout.startswith("lens "), script.stderr
