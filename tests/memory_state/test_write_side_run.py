"""The write-side metrics through ``lens run`` on the shipped (generated) quickstart scope, each
with its adversary: a memory that stores every episode verbatim holds key facts stated so far
and invents nothing; one that stores nothing holds none (known: it lists, and its list is
empty), with no items to judge; one that invents figures is caught by the false-memory rate."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest

from lens.runs.store import RunStore
from lens.scoring.measures.write_side import read_write_side
from tests.cli.runs import QUICKSTART
from tests.support.cli import Lens, cli_runner
from tests.view.server import lens_view, require_view_extra, wait_ready

ADAPTERS = "tests.memory_state.listing_adapters"


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def test_each_write_side_metric_scores_its_adversary_as_it_should(lens: Lens,
                                                                  tmp_path: Path) -> None:
    cfg = tmp_path / "run.yaml"
    cfg.write_text(json.dumps({
        "name": "writes", "dataset": {"path": str(QUICKSTART)},
        "adapters": [{"name": "sqlite_fts", "label": "verbatim"},
                     {"name": f"{ADAPTERS}:StoresNothing", "label": "nothing"},
                     {"name": f"{ADAPTERS}:Invents", "label": "invents"},
                     {"name": f"{ADAPTERS}:MissesCorrections", "label": "stale"},
                     {"name": "oracle", "label": "oracle"}],
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs")}))
    res = lens("run", str(cfg))
    (run_dir,) = (tmp_path / "runs").iterdir()
    ws = read_write_side(run_dir)
    assert ws is not None, res.stdout + res.stderr
    verbatim, nothing, invents = (ws.arms[a] for a in ("verbatim", "nothing", "invents"))
    # Every figure the reports give is held; only what the reports leave to be concluded (the
    # date the figure crossed its threshold) is not.
    assert 0.8 < (verbatim["extraction_recall"].mean or 0) < 1
    assert verbatim["false_memory_rate"].mean == 0.0
    assert verbatim["items_per_episode"].mean == 1.0
    assert nothing["extraction_recall"].mean == 0.0
    assert nothing["false_memory_rate"].mean is None  # no items to judge: unknown, not 0
    assert nothing["items_per_episode"].mean == 0.0
    assert invents["extraction_recall"].mean == verbatim["extraction_recall"].mean
    assert (invents["false_memory_rate"].mean or 0) > 0
    assert all(r.false_items and r.false_items[0].startswith("note:")
               for r in ws.checkpoints if r.adapter == "invents")
    # The corrected misreport: held as corrected, as reported, or not at all.
    assert verbatim["update_current"].mean == 1.0
    assert ws.update_kinds["verbatim"] == {"current": 3, "both": 0, "stale": 0, "neither": 0}
    assert ws.update_kinds["stale"] == {"current": 0, "both": 0, "stale": 3, "neither": 0}
    assert ws.arms["stale"]["update_current"].mean == 0.0
    assert ws.update_kinds["nothing"]["neither"] == 3
    # The oracle arm lists nothing: every figure unknown, said so.
    assert ws.unlisted == ["oracle"]
    assert "unknown" in ws.updates
    # Beside the answer-level metrics: the console, the report.
    assert "What the memory wrote" in res.stdout
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "## What the memory wrote" in report
    section = report.split("## What the memory wrote", 1)[1]
    row = next(line for line in section.splitlines() if line.startswith("| invents"))
    assert row.count("%") >= 2 and "ready" in row
    oracle = next(line for line in section.splitlines() if line.startswith("| oracle"))
    assert "unknown" in oracle and "no memory listing" in oracle
    # lens compare: the same figures per arm beside the answer-level ones.
    compared = lens("compare", str(run_dir), "--arms", "verbatim,invents,oracle")
    assert compared.returncode == 0, compared.stderr
    table = compared.stdout.split("## What the memory wrote", 1)[1].split("##", 1)[0]
    assert "| invents |" in table and "| oracle | unknown" in table
    # lens view: the run page carries the section, a question page its memory state.
    require_view_extra()
    record = next(r for r in RunStore.open(run_dir).load_records() if r.adapter == "verbatim")
    with lens_view(run_dir.parent) as base:
        page = wait_ready(f"{base}/runs/{run_dir.name}")
        assert "What the memory wrote" in page
        question = wait_ready(f"{base}/runs/{run_dir.name}/question?key="
                              + quote(record.key))
        assert f"memory state {record.memory_state}" in question


def test_the_floor_ceiling_config_reports_what_each_arm_wrote(lens: Lens, tmp_path: Path) -> None:
    """configs/floor-ceiling.yaml as shipped, on the quickstart scope: null holds nothing,
    sqlite_fts and full_context every episode, oracle (no memory) is unknown, as its header
    says."""
    import yaml

    from tests.conftest import ROOT

    raw = yaml.safe_load((ROOT / "configs" / "floor-ceiling.yaml").read_text(encoding="utf-8"))
    raw.update(dataset={"path": str(QUICKSTART)}, out_dir=str(tmp_path / "runs"))
    cfg = tmp_path / "floor-ceiling.yaml"
    cfg.write_text(yaml.safe_dump(raw), encoding="utf-8")
    res = lens("run", str(cfg))
    assert res.returncode == 0, res.stdout + res.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    ws = read_write_side(run_dir)
    assert ws is not None and ws.unlisted == ["oracle"]
    for arm in ("sqlite_fts", "full_context"):
        assert ws.arms[arm]["items_per_episode"].mean == 1.0
        assert ws.arms[arm]["update_current"].mean == 1.0
    assert ws.arms["null"]["items_per_episode"].mean == 0.0
    assert ws.arms["null"]["extraction_recall"].mean == 0.0
    lines = res.stdout.split("What the memory wrote", 1)[1].splitlines()
    assert any(line.startswith("  oracle: extraction recall unknown") for line in lines)
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    row = next(c for c in summary["checklist"] if c["id"] == "memory_state")
    assert row["status"] == "pass" and "unknown for oracle" in row["value"]
