"""The quickstart's first screen is something a newcomer can act on: a one-scope demo's
sample-size rows say they do not apply, the control arm's empty searches are expected, n_eff
is printed only where it can be estimated, and the report opens on the result and the verdict,
the checklist after. Through ``lens run`` on the shipped quickstart (the scripted policy in place
of the local model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import Lens, cli_runner

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def test_the_quickstart_shows_no_fail_a_newcomer_cannot_act_on(lens: Lens,
                                                               tmp_path: Path) -> None:
    done = lens("run", str(ROOT / "configs" / "quickstart.yaml"), "--out", str(tmp_path / "runs"),
                "--set", "agent.model=scripted/policy", "--set", "agent.options={}")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "FAIL " not in out and ", 0 fail, 2 not applicable" in out, out
    assert "  N/A   n_eff ≥ 100 for a single result, ≥ 5 scopes: not applicable: one scope" in out
    assert "  N/A   n_eff ≥ 200 per arm for a comparison" in out
    assert "n_eff" not in out.split("pre-flight:")[0], "n_eff printed where it is unknown"
    report = next((tmp_path / "runs").glob("quickstart-*/report.md")).read_text(encoding="utf-8")
    assert "n_eff=unknown" not in report
    assert "null: 0.00 (expected for a control arm)" in report
    assert "| **N/A** | n_eff ≥ 100 for a single result" in report
    results, verdict, checklist = (report.index(h) for h in
                                   ("## Results", "## Verdict", "## Pre-flight checklist"))
    assert results < verdict < checklist
    assert "null vs sqlite_fts on composite" in report[verdict:checklist]
