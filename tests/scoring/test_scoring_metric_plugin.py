"""A metric added by a plugin through the ``lens.metrics`` entry-point group is computed per
question, aggregated, weighted in the composite, shown by ``lens score`` and in the report,
exactly like lens's own; a bad declaration is one clear error naming the entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scoring_fixtures import build_run, ep, record, write_dataset

import lens.scoring.metrics as registry
from lens.commands.cli import main
from lens.core import plugins
from lens.core.errors import ConfigError, UserError
from lens.scoring.aggregation.composite import resolve_weights
from lens.scoring.metrics import MetricInput, MetricSpec, register_metric, unregister_metric

SHORT, LONG = "Pool exhausted [{}].", "The pool was exhausted. " * 20 + "[{}]"


def _brevity(m: MetricInput) -> tuple[float | None, dict]:
    chars = len(m.item.record.answer)
    return min(1.0, 100 / chars) if chars else None, {"chars": chars}


BREVITY = MetricSpec("answer_brevity", compute=_brevity, title="brevity", headline=True,
                     description="100 characters or fewer scores 1")
DECLARED = {plugins.METRICS: {"brevity": f"{__name__}:BREVITY"}}


def _run(tmp_path: Path, weights: dict[str, float]) -> Path:
    ds = write_dataset(tmp_path / "ds.json")
    run = build_run(tmp_path / "runs", ds, [
        record("s1_q01_longitudinal", SHORT.format(ep(2)), retrieved=[ep(2)]),
        record("s1_q04_negative", LONG.format(ep(4)), checkpoint=10, retrieved=[ep(4)])])
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["config"]["scoring"] = {"weights": weights}
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def test_an_entry_point_metric_is_scored_weighted_and_shown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Only the plugin metric and the gate's metrics weigh: the composite is the plugin's mean.
    weights = {**dict.fromkeys(registry.default_weights(), 0.0), "answer_brevity": 1.0}
    del weights["longitudinal_advantage"]
    run = _run(tmp_path, weights)
    with plugins.entry_points_added(DECLARED):
        assert "answer_brevity" in registry.question_metrics()
        assert resolve_weights({"answer_brevity": 0.3})["answer_brevity"] == 0.3
        assert main(["score", str(run), "--tier", "1"]) == 0
        table = capsys.readouterr().out
        scores = json.loads((run / "scores.json").read_text())
        assert main(["report", str(run)]) == 0
        console = capsys.readouterr().out
    values = {q["question_id"]: q["metrics"]["answer_brevity"] for q in scores["questions"]}
    assert values["s1_q01_longitudinal"] == 1.0 and values["s1_q04_negative"] < 0.25
    assert scores["questions"][1]["detail"]["answer_brevity"]["chars"] > 400
    agg = scores["aggregates"]["adapter"]["fts"]
    assert agg["answer_brevity"] == pytest.approx(sum(values.values()) / 2)
    assert scores["weights"]["answer_brevity"] == 1.0
    assert agg["evidence_grounding"] == 1.0 and agg["budget_compliance"] == 1.0  # no gate
    assert agg["composite"] == pytest.approx(agg["answer_brevity"])
    assert "brevity" in table.splitlines()[0]
    assert "answer_brevity" in console  # a headline metric of the terminal's result
    report = (run / "report.md").read_text()
    assert "answer_brevity" in report
    # Without the plugin the name is unknown again, and a stored weight for it is kept.
    with pytest.raises(ConfigError, match="unknown metric 'answer_brevity'"):
        resolve_weights({"answer_brevity": 0.3})
    assert resolve_weights({"answer_brevity": 0.3}, stored=True)["answer_brevity"] == 0.3


def test_register_metric_in_process_and_its_errors() -> None:
    spec = register_metric(MetricSpec("cites_nothing", compute=lambda m: (0.0, {})))
    try:
        assert registry.get_metric("cites_nothing") is spec
        assert registry.default_weights()["cites_nothing"] == 0.0
        with pytest.raises(UserError, match="already registered"):
            register_metric(MetricSpec("fact_recall", compute=lambda m: (0.0, {})))
    finally:
        unregister_metric("cites_nothing")
    assert registry.get_metric("cites_nothing") is None
    with pytest.raises(UserError, match=r"tier must be 1, 2 or 3.*needs a compute function"):
        register_metric(MetricSpec("half", tier=4))


def test_a_bad_entry_point_is_named() -> None:
    bad = {plugins.METRICS: {"oops": f"{__name__}:SHORT"}}
    with plugins.entry_points_added(bad), pytest.raises(
            UserError, match=r"entry point lens\.metrics:oops .*must name a MetricSpec"):
        registry.all_metrics()
