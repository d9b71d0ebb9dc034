"""The scores of the scripted config are pinned: ``lens run configs/scripted.yaml`` (no judge, and
with a replayed judge) and ``lens score`` of the judged run give scores.json files whose digests
are written below. A change that alters any number, note, detail or key of scores.json fails
here; when the change is meant (a new metric, a rule that changes what a number means), run
``python -m tests.scoring.test_scoring_pinned`` and paste the digests it prints into
``EXPECTED``, and say why in the commit.

The one field that varies between runs, ``run_dir``, is replaced by ``RUN_DIR`` before hashing.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
# Every judge call is answered by the same replies: a pairwise verdict, then (for a format
# retry or a fact grade read as unreadable) a fact grade; deterministic without a model.
REPLAY_JUDGE = {"model": "scripted/replay", "options": {"replies": [
    {"text": '{"verdict": "A", "reason": "r"}'},
    {"text": '{"grade": "partial", "reason": "r"}'}]}}

EXPECTED = {
    "plain": "96862a2e1e2c4d595eb9a143d6948c3355c4db14a85828000758bccf47e9cc5b",
    "judged": "19b38678ad0b71f89fcc14a654962cf4769f96837c39b9cd9339a6fa56cac7a4",
    "rescored": "19b38678ad0b71f89fcc14a654962cf4769f96837c39b9cd9339a6fa56cac7a4",
    "tier1": "17128c09fc9ca427fc00946c73900601e1072820d04443b2e3005588b32b9fed",
}


def _lens(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "lens", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]


def _config(tmp: Path, name: str, judge: dict | None) -> Path:
    raw = yaml.safe_load((ROOT / "configs" / "scripted.yaml").read_text(encoding="utf-8"))
    raw.update(name=name, out_dir=str(tmp / "runs"),
               dataset={**raw["dataset"],
                        "path": str((ROOT / "configs" / raw["dataset"]["path"]).resolve())})
    if judge is not None:
        raw["judge"] = judge
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def _digest(run: Path) -> tuple[str, dict]:
    text = (run / "scores.json").read_text(encoding="utf-8")
    text = text.replace(json.dumps(str(run))[1:-1], "RUN_DIR")
    return hashlib.sha256(text.encode("utf-8")).hexdigest(), json.loads(text)


def digests(tmp: Path) -> dict[str, tuple[str, dict]]:
    """Every pinned scoring's digest and its scores, scored in ``tmp``."""
    out = {}
    for name, judge in (("plain", None), ("judged", REPLAY_JUDGE)):
        _lens("run", str(_config(tmp, name, judge)), "--quiet")
        run = next((tmp / "runs").glob(f"{name}-*"))
        out[name] = _digest(run)
    judged = next((tmp / "runs").glob("judged-*"))
    _lens("score", str(judged))
    out["rescored"] = _digest(judged)
    _lens("score", str(judged), "--tier", "1")
    out["tier1"] = _digest(judged)
    return out


@pytest.mark.slow
def test_scripted_scores_are_unchanged(tmp_path: Path) -> None:
    found = digests(tmp_path)
    changed = {name: scores["aggregates"]["adapter"] for name, (digest, scores) in found.items()
               if digest != EXPECTED[name]}
    assert not changed, (
        f"scores.json changed for {sorted(changed)}; adapter aggregates now: {changed}; "
        "if the change is meant, update EXPECTED (python -m tests.scoring.test_scoring_pinned)")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        for key, (digest, _) in digests(Path(d)).items():
            print(f'    "{key}": "{digest}",')
