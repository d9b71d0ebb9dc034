"""Careless numbers and hostile summaries through ``lens plan`` and ``lens run``: an α that is
0.0 once shared among the pairs, a difference below a float's resolution, and a summary.json
someone edited (deep, a list for an arm, strings for numbers, 1e400, terminal escapes in a
name) are each refused with one message and exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.runs import write_config
from tests.support.cli import Lens, cli_runner


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _refused(r: Any) -> str:
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "Traceback" not in out and "\x1b" not in out
    return out


# -- 14. an α or a difference too small to compute with ----------------------------------------

@pytest.mark.parametrize("args", [
    ["--baseline", "0.5", "--delta", "1e-300"],
    ["--baseline", "0.5", "--delta", "0.1", "--alpha", "1e-320"],
    ["--baseline", "0.5", "--delta", "nan"],
    ["--baseline", "0.5", "--delta", "0.1", "--alpha", "nan"],
])
def test_plan_refuses_numbers_it_cannot_compute_with(lens: Lens, args: list[str]) -> None:
    _refused(lens("plan", *args))


@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_stopping_alpha_that_vanishes_among_pairs_is_refused(lens: Lens, tmp_path: Path,
                                                               command: str) -> None:
    cfg = write_config(tmp_path, "a", ["sqlite_fts", "null", "recency"],
                       stopping={"alpha": 5e-324})
    out = _refused(lens(command, str(cfg)))
    assert "stopping.alpha" in out
    assert not (tmp_path / "runs").exists()


# -- 16. a summary.json someone edited ----------------------------------------------------------

def _summary(tmp_path: Path, body: str) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text(body)
    return run


def _good(**est: Any) -> dict[str, Any]:
    return {"primary_metric": "m", "adapters": {"arm": {"metrics": {"m": {
        "mean": 0.5, "n": 100, "clusters": 10, "icc": 0.1, **est}}}}}


EDITED = {
    "deep": '{"adapters": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "arm_list": json.dumps({"primary_metric": "m", "adapters": {"arm": [1, 2]}}),
    "metrics_list": json.dumps({"primary_metric": "m", "adapters": {"arm": {"metrics": []}}}),
    "estimate_string": json.dumps({"primary_metric": "m", "adapters": {"arm": {
        "metrics": {"m": "0.5"}}}}),
    "mean_string": json.dumps(_good(mean="0.5")),
    "n_string": json.dumps(_good(n="many")),
    "clusters_float": json.dumps(_good(clusters=2.5)),
    "icc_list": json.dumps(_good(icc=[0.1])),
    "mean_1e400": json.dumps(_good()).replace('"mean": 0.5', '"mean": 1e400'),
    "icc_nan": json.dumps(_good()).replace('"icc": 0.1', '"icc": NaN'),
    "n_5000_digits": json.dumps(_good()).replace('"n": 100', '"n": ' + "9" * 5000),
    "metric_name_int": json.dumps({"primary_metric": 7, "adapters": {"arm": {"metrics": {}}}}),
}


@pytest.mark.parametrize("kind", sorted(EDITED))
def test_plan_from_an_edited_summary_is_refused(lens: Lens, tmp_path: Path, kind: str) -> None:
    run = _summary(tmp_path, EDITED[kind])
    out = _refused(lens("plan", "--from", str(run), "--delta", "0.1"))
    assert "summary.json" in out or "--metric" in out


def test_an_arm_name_with_terminal_escapes_is_shown_inert(lens: Lens, tmp_path: Path) -> None:
    body = _good()
    body["adapters"] = {"\x1b]0;pwned\x07\x1b[2J": body["adapters"]["arm"]}
    run = _summary(tmp_path, json.dumps(body))
    r = lens("plan", "--from", str(run), "--delta", "0.1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "\x1b" not in r.stdout + r.stderr and "\x07" not in r.stdout + r.stderr
