"""Verdicts depend on the data only: renaming runs, or giving them in another order, changes
nothing in a comparison but the names (checked through the real `python -m lens compare`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.report.runfactory import RunSpec, make_run, unit_draw

ROOT = Path(__file__).resolve().parents[2]


def _metrics(shift: float):
    def metrics(adapter: str, scope: str, qid: str, rep: int) -> dict[str, float | None]:
        u = unit_draw("q", scope, qid)
        scope_effect = 0.2 * unit_draw("scope", scope)  # questions of a scope are correlated
        noise = 0.15 * unit_draw("n", adapter, scope, qid)
        v = min(1.0, max(0.0, 0.2 + 0.4 * u + scope_effect + noise + shift))
        return {"fact_recall": v, "composite": v,
                "budget_compliance": 1.0 if u + shift > 0.3 else 0.0}
    return metrics


def _run(parent: Path, name: str, adapter: str, shift: float) -> Path:
    return make_run(parent, RunSpec(name=name, adapters=(adapter,), scopes=6,
                                    questions_per_scope=20, metrics=_metrics(shift)))


def _renamed_copy(src: Path, parent: Path, new_id: str) -> Path:
    dst = parent / f"copy-of-{new_id}"
    shutil.copytree(src, dst)
    manifest = json.loads((dst / "manifest.json").read_text())
    manifest["run_id"] = new_id
    (dst / "manifest.json").write_text(json.dumps(manifest))
    return dst


def _compare(out: Path, *runs: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "lens", "compare", *map(str, runs),
                           "--out", str(out)], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "compare.json").read_text())


def _in_process(*runs: Path) -> dict:
    from lens.report.run_comparison import compare_runs

    return json.loads(json.dumps(compare_runs(list(runs)).summary.model_dump(mode="json")))


def _canonical(data: dict, names: dict[str, str]) -> str:
    """The comparison with run ids replaced by role names and run paths dropped."""
    data = {k: v for k, v in data.items() if k != "runs"}
    text = json.dumps(data)  # in the given order: names are replaced before any sorting
    for old, new in names.items():
        text = text.replace(old, new)
    return text


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    parent = tmp_path_factory.mktemp("runs")
    return {"a": _run(parent, "a", "fts", 0.0), "b": _run(parent, "b", "vec", 0.04),
            "c": _run(parent, "c", "nul", -0.05)}


def test_renaming_runs_changes_no_byte_of_the_comparison(runs: dict[str, Path],
                                                         tmp_path: Path) -> None:
    first = _compare(tmp_path / "one", runs["a"], runs["b"])
    a2 = _renamed_copy(runs["a"], tmp_path, "zz-renamed-1")
    b2 = _renamed_copy(runs["b"], tmp_path, "aa-renamed-2")
    second = _compare(tmp_path / "two", a2, b2)
    assert (_canonical(first, {"a-id": "A", "b-id": "B"})
            == _canonical(second, {"zz-renamed-1": "A", "aa-renamed-2": "B"}))
    md_one = (tmp_path / "one" / "compare.md").read_text()
    md_two = (tmp_path / "two" / "compare.md").read_text()
    md_one = md_one.replace(str(runs["a"]), "RA").replace(str(runs["b"]), "RB")
    md_two = md_two.replace(str(a2), "RA").replace(str(b2), "RB")
    assert (md_one.replace("a-id", "A").replace("b-id", "B")
            == md_two.replace("zz-renamed-1", "A").replace("aa-renamed-2", "B"))
    # The comparison did compute something a name could have swayed.
    rows = {r["metric"]: r for r in first["comparisons"][0]["rows"]}
    assert rows["fact_recall"]["test"] == "paired-bootstrap"
    assert rows["fact_recall"]["p_mc_error"] is not None and rows["fact_recall"]["p_mc_error"] > 0


def test_reversing_the_order_mirrors_the_comparison(runs: dict[str, Path]) -> None:
    ab = _in_process(runs["a"], runs["b"])["comparisons"][0]
    ba = _in_process(runs["b"], runs["a"])["comparisons"][0]
    swap = {"better": "worse", "worse": "better", "equivalent": "equivalent",
            "real but small": "real but small", "undecided": "undecided", "unknown": "unknown"}
    for x, y in zip(ab["rows"], ba["rows"], strict=True):
        assert x["metric"] == y["metric"]
        assert x["p_value"] == y["p_value"] and x["p_holm"] == y["p_holm"]
        assert x["delta"]["mean"] == pytest.approx(-y["delta"]["mean"], abs=1e-12)
        assert x["delta"]["low"] == pytest.approx(-y["delta"]["high"], abs=1e-12)
        assert x["delta"]["high"] == pytest.approx(-y["delta"]["low"], abs=1e-12)
        assert swap[x["verdict"]] == y["verdict"]


def test_three_arms_in_another_order_give_the_same_pairs(runs: dict[str, Path]) -> None:
    abc = _in_process(runs["a"], runs["b"], runs["c"])
    acb = _in_process(runs["a"], runs["c"], runs["b"])
    by_pair = {(c["arm_a"], c["arm_b"]): c for c in abc["comparisons"]}
    assert len(by_pair) == 3  # every pair, not only against the first
    for comp in acb["comparisons"]:
        key = (comp["arm_a"], comp["arm_b"])
        if key in by_pair:
            assert json.dumps(comp, sort_keys=True) == json.dumps(by_pair[key], sort_keys=True)
        else:
            mirror = by_pair[(key[1], key[0])]
            assert [r["p_holm"] for r in comp["rows"]] == [r["p_holm"] for r in mirror["rows"]]
    # Friedman and Kendall's W do not depend on the order of the arms.
    stats = {f["metric"]: (f["statistic"], f["p_value"], f["kendall_w"])
             for f in abc["many_arms"]}
    assert stats and stats == {f["metric"]: (f["statistic"], f["p_value"], f["kendall_w"])
                               for f in acb["many_arms"]}
