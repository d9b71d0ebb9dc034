"""A dataset holding a lone surrogate escape (``"\\ud800"``): ``lens datasets validate`` and
``lens run`` agree. Both refuse it with the file and the field, exit 2, and the run writes
nothing, whether the file is read whole or streamed (the stream's parser would read the escape
as ``?``); a surrogate pair and an escaped backslash before ``ud800`` are ordinary text."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import lens.data.dataset_load as dataset_load
from lens.commands.cli import main
from tests.core.helpers import make_dataset

ROOT = Path(__file__).resolve().parents[2]
MARK = "SURROGATE-HERE"


def _lens(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def dataset_with(tmp_path: Path, escape: str, where: str = "episode") -> Path:
    """A small valid dataset whose first episode text (or first question prompt) holds the raw
    JSON ``escape``."""
    data = make_dataset(n_episodes=4, checkpoints=(4,), questions_per_checkpoint=2)
    if where == "episode":
        data["scopes"][0]["episodes"][0]["text"] = f"before {MARK} after"
    else:
        data["questions"][0]["prompt"] = f"before {MARK} after"
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(data, indent=1).replace(MARK, escape), encoding="utf-8")
    return path


def config_for(tmp_path: Path, dataset: Path) -> Path:
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "sur", "dataset": {"path": str(dataset)}, "adapters": [{"name": "null"}],
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs"),
        "cache": {"enabled": False}}), encoding="utf-8")
    return cfg


@pytest.mark.parametrize(("where", "field"), [
    ("episode", "$.scopes[0].episodes[0].text"), ("question", "$.questions[0].prompt")])
def test_validate_and_run_both_refuse(tmp_path: Path, where: str, field: str) -> None:
    path = dataset_with(tmp_path, "\\ud800", where)
    validated = _lens("datasets", "validate", str(path))
    ran = _lens("run", str(config_for(tmp_path, path)), "--quiet")
    for proc in (validated, ran):
        out = proc.stdout + proc.stderr
        assert proc.returncode == 2, out
        assert f"{path}: {field}: holds a lone surrogate escape" in out, out
        assert "Traceback" not in out
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "\\uDBFF x", "\\\\\\udc00"])
def test_the_streamed_reader_refuses_too(tmp_path: Path, escape: str,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    # Files over the whole-file limit are only streamed; a small limit makes this one such.
    monkeypatch.setattr(dataset_load, "MAX_WHOLE_FILE_BYTES", 100)
    path = dataset_with(tmp_path, escape)
    assert main(["datasets", "validate", str(path)]) == 2
    out = capsys.readouterr()
    assert "lone surrogate escape" in out.out + out.err
    assert f"{path}: $.scopes[0].episodes[0].text: a lone surrogate escape" in out.out


@pytest.mark.parametrize("streamed", [False, True])
def test_pairs_and_escaped_backslashes_are_text(tmp_path: Path, streamed: bool,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    if streamed:
        monkeypatch.setattr(dataset_load, "MAX_WHOLE_FILE_BYTES", 100)
    path = dataset_with(tmp_path, "\\ud83d\\ude00 and \\\\ud800")
    ds = dataset_load.load_dataset(path)
    assert ds.scopes[0].episodes[0].text == "before \U0001f600 and \\ud800 after"
