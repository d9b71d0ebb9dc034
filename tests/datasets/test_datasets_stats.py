"""``lens datasets stats``: episodes, words, questions per type and per checkpoint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lens.commands.datasets import dataset_stats
from lens.data.dataset import QuestionType

ROOT = Path(__file__).resolve().parents[2]
FIX = Path(__file__).resolve().parent


def test_stats_counts_match_the_file() -> None:
    path = ROOT / "datasets" / "quickstart.json"
    raw = json.loads(path.read_text())
    st = dataset_stats(path)
    eps = raw["scopes"][0]["episodes"]
    assert st["episodes"] == len(eps)
    assert st["words"] == sum(len(e["text"].split()) for e in eps)
    assert st["questions"] == len(raw["questions"])
    assert sum(st["per_type"].values()) == len(raw["questions"])
    assert set(st["per_type"]) == {t.value for t in QuestionType}
    cps = st["per_scope"][0]["per_checkpoint"]
    assert sum(cps.values()) == len(raw["questions"])
    assert set(cps) == {q["checkpoint_after"] for q in raw["questions"]}


def test_stats_cli_prints_types_and_checkpoints(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "lens", "datasets", "stats",
                        str(ROOT / "datasets" / "standard.json")], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "questions per type:" in r.stdout
    for t in QuestionType:
        assert t.value in r.stdout
    assert r.stdout.count("questions per checkpoint: after ") == 6
    j = subprocess.run([sys.executable, "-m", "lens", "datasets", "stats", "--json",
                        str(ROOT / "datasets" / "quickstart.json")], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert json.loads(j.stdout)["scopes"] == 1


def test_stats_of_a_missing_file_is_a_user_error(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "lens", "datasets", "stats",
                        str(tmp_path / "nope.json")], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert "dataset file not found" in r.stderr
