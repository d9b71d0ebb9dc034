"""Judge sensitivity through the real CLI: a run judged by two scripted judges that disagree.

The fair judge grades a key fact present whenever the answer states something and absent when
it says it found nothing; the contrary judge does the opposite. Under the fair judge sqlite_fts
beats null on fact_recall; under the contrary one null wins: the win must not stand."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
import yaml

from lens.commands.cli import main
from lens.core.errors import ConfigError
from lens.data.config import parse_config
from lens.models.base import Completion, CompletionRequest, Message, Usage
from lens.scoring.foundations.types import RunScores
from lens.scoring.judging.judge_panel import (
    JUDGE_SCORES_DIR,
    PromptVersionClient,
    load_panel,
    with_prompts,
)
from lens.scoring.judging.judge_prompts import JUDGE_SYSTEM, STRICT_ADDENDUM, STRICT_SYSTEM
from tests.core.helpers import make_dataset, write_json

ROOT = Path(__file__).resolve().parents[2]
TIE = '{"verdict": "TIE"}'


def _lens(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def _judge(path: Path, found: str, nothing: str) -> str:
    path.write_text(yaml.safe_dump({
        "rules": [{"contains": "Criterion:", "text": TIE},
                  {"contains": "could not find", "text": json.dumps({"grade": nothing})}],
        "default": json.dumps({"grade": found})}), encoding="utf-8")
    return f"scripted/{path}"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("judges")
    ds = write_json(tmp / "ds.json", make_dataset(
        n_episodes=6, checkpoints=(3, 6), questions_per_checkpoint=3,
        # 12 scopes: enough for a verdict on a difference of 1 among the exploratory family
        # (the bounded-mean test needs 10 there), so that the judges can disagree on one.
        scope_ids=tuple(f"s{i}" for i in range(1, 13))))
    fair = _judge(tmp / "fair.yaml", "present", "absent")
    contrary = _judge(tmp / "contrary.yaml", "absent", "present")
    lenient = _judge(tmp / "lenient.yaml", "partial", "partial")
    cfg = tmp / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "panel", "dataset": {"path": str(ds)},
        "adapters": [{"name": "null"}, {"name": "sqlite_fts"}],
        "agent": {"model": "scripted/policy"},
        "judges": [{"model": fair}, {"model": contrary}],
        "out_dir": str(tmp / "runs"), "cache": {"enabled": False}}), encoding="utf-8")
    proc = _lens("run", str(cfg))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = sorted((tmp / "runs").glob("panel-*"))[-1]
    return {"run": run, "fair": fair, "contrary": contrary, "lenient": lenient,
            "stdout": proc.stdout, "tmp": tmp}


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text(encoding="utf-8"))


def _row(summary: dict, metric: str) -> dict:
    comp = summary["comparisons"][0]
    assert (comp["arm_a"], comp["arm_b"]) == ("null", "sqlite_fts")
    return next(r for r in comp["rows"] if r["metric"] == metric)


def test_each_judged_metric_per_judge_and_as_a_range(setup: dict) -> None:
    s = _summary(setup["run"])
    panel = s["judges"]
    assert panel["judges"] == [setup["fair"], setup["contrary"]]
    fr = panel["ranges"]["sqlite_fts"]["fact_recall"]
    assert fr["by_judge"] == {setup["fair"]: 1.0, setup["contrary"]: 0.0}
    assert (fr["low"], fr["high"]) == (0.0, 1.0)
    assert panel["ranges"]["null"]["fact_recall"]["by_judge"] == {setup["fair"]: 0.0,
                                                                  setup["contrary"]: 1.0}
    # A metric the judge has no part in is not in the judges' table.
    assert "evidence_coverage" not in panel["ranges"]["sqlite_fts"]
    # The headline numbers are the primary (first) judge's.
    assert s["adapters"]["sqlite_fts"]["metrics"]["fact_recall"]["mean"] == 1.0
    # The console shows the range beside the headline value.
    line = next(x for x in setup["stdout"].splitlines()
                if "fact_recall" in x and "judges" in x)
    assert "judges 0.000–1.000 (2)" in line
    md = (setup["run"] / "report.md").read_text(encoding="utf-8")
    assert "## Judges" in md and "Cohen's kappa" in md


def test_a_win_that_flips_under_the_second_judge_is_undecided(setup: dict) -> None:
    s = _summary(setup["run"])
    row = _row(s, "fact_recall")
    assert row["by_judge"] == {setup["fair"]: "better", setup["contrary"]: "worse"}
    assert row["verdict"] == "undecided" and row["rule"] == "judges"
    assert row["reason"].startswith("judges disagree: better under")
    # A difference no judge decides is the same under every judge, and stands.
    coverage = _row(s, "evidence_coverage")
    assert coverage["verdict"] == "better" and coverage["by_judge"] == {}
    md = (setup["run"] / "report.md").read_text(encoding="utf-8")
    assert "verdict by judge" in md and "judges disagree" in md


def test_the_judges_agreement(setup: dict) -> None:
    pair = _summary(setup["run"])["judges"]["agreement"][0]
    kinds = pair["by_kind"]
    # Every fact grade differs, each judge grading half present: p_o = 0, p_e = 0.5, κ = −1.
    assert kinds["fact_grade"]["items"] == 144
    assert kinds["fact_grade"]["rate"] == 0.0
    assert kinds["fact_grade"]["kappa"] == pytest.approx(-1.0)
    # Both judges always say TIE: they agree, and κ is undefined (unknown), never 1.
    assert kinds["answer_quality"]["rate"] == 1.0
    assert kinds["answer_quality"]["kappa"] is None


def test_compare_holds_a_verdict_only_under_every_judge(setup: dict) -> None:
    proc = _lens("compare", str(setup["run"]))
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines()
                if x.startswith("| fact_recall") and "mcnemar" in x)
    assert "judges disagree" in line and "better" not in line.split("|")[9]
    assert "## Frontier: composite against cost and latency per question" in proc.stdout


def test_the_report_frontier_of_a_real_run(setup: dict) -> None:
    section = next(x for x in _summary(setup["run"])["sections"] if x["id"] == "memory_cost")
    frontier = section["data"]["frontier"]
    assert frontier["metric"] == "composite"
    arms = frontier["arms"]
    # The scripted agent is free (a known price of 0): both arms cost the same, and the more
    # accurate one is the only Pareto-optimal arm on cost, holding the whole frontier.
    assert arms["sqlite_fts"]["cost"]["pareto"] is True
    assert arms["null"]["cost"]["pareto"] is False
    assert arms["sqlite_fts"]["cost"]["gain"] == pytest.approx(arms["sqlite_fts"]["accuracy"])
    md = (setup["run"] / "report.md").read_text(encoding="utf-8")
    assert "### Frontier: composite against cost and latency per question" in md


def test_score_adds_a_judge_without_running_the_memory(setup: dict, tmp_path: Path,
                                                       capsys) -> None:
    run = Path(shutil.copytree(setup["run"], tmp_path / "run"))
    records = (run / "records.jsonl").read_bytes()
    scores = (run / "scores.json").read_bytes()
    proc = _lens("score", str(run), "--judge", setup["lenient"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "added beside the primary judge" in proc.stdout
    assert "the memory was not run again" in proc.stdout
    asked = re.search(r"\((\d+) new verdict\(s\)", proc.stdout)
    assert asked is not None and int(asked.group(1)) > 0
    assert (run / "records.jsonl").read_bytes() == records
    assert (run / "scores.json").read_bytes() == scores
    assert len(list((run / JUDGE_SCORES_DIR).glob("*.json"))) == 2
    assert main(["score", str(run), "--judge", setup["lenient"]]) == 0
    assert "(0 new verdict(s)" in capsys.readouterr().out
    # Re-scoring the run re-scores every judge from the stored verdicts: no new call.
    events = (run / "events.jsonl").read_text(encoding="utf-8").count('"judge_verdict"')
    assert main(["score", str(run)]) == 0
    assert (run / "events.jsonl").read_text(encoding="utf-8").count('"judge_verdict"') == events
    first = RunScores.model_validate_json((run / "scores.json").read_text(encoding="utf-8"))
    assert load_panel(run, first).labels == [setup["fair"], setup["contrary"], setup["lenient"]]
    # --primary swaps the primary judge; the one it replaces stays a judge of the run.
    assert main(["score", str(run), "--judge", setup["contrary"], "--primary"]) == 0
    assert (run / "events.jsonl").read_text(encoding="utf-8").count('"judge_verdict"') == events
    primary = RunScores.model_validate_json((run / "scores.json").read_text(encoding="utf-8"))
    assert primary.judge.model == setup["contrary"]
    assert load_panel(run, primary).labels == [setup["contrary"], setup["fair"],
                                               setup["lenient"]]


def _config(extra: dict) -> dict:
    return {"dataset": {"path": "d.json"}, "adapters": [{"name": "null"}],
            "agent": {"model": "scripted/policy"}, **extra}


def test_config_judges_and_prompt_versions() -> None:
    cfg = parse_config(_config({"judges": [{"model": "openai/a", "prompts": "strict"},
                                           {"model": "openai/a"}]}), "c.yaml")
    assert cfg.judge is not None and cfg.judge.label == "openai/a#strict"
    assert [j.label for j in cfg.all_judges()] == ["openai/a#strict", "openai/a"]
    # The dumped config (as the manifest keeps it) reads back the same.
    again = parse_config(cfg.model_dump(mode="json"), "m.json")
    assert [j.label for j in again.all_judges()] == ["openai/a#strict", "openai/a"]
    single = parse_config(_config({"judge": {"model": "openai/a"}}), "c.yaml")
    assert [j.label for j in single.all_judges()] == ["openai/a"]
    for bad, says in [
        ({"judge": {"model": "openai/b"}, "judges": [{"model": "openai/a"}]},
         "not the first of judges"),
        ({"judges": [{"model": "openai/a"}, {"model": "openai/a"}]}, "listed twice"),
        ({"judges": [{"model": "openai/a", "prompts": "harsh"}]}, "judges.0.prompts"),
    ]:
        with pytest.raises(ConfigError) as exc:
            parse_config(_config(bad), "c.yaml")
        assert says in str(exc.value) and "c.yaml" in str(exc.value)


def test_score_names_an_unknown_prompt_version(setup: dict, capsys) -> None:
    assert main(["score", str(setup["run"]), "--judge", "scripted/policy#harsh"]) == 2
    err = capsys.readouterr().err
    assert "prompts" in err and "lens, strict, lenient" in err


class _Recorder:
    provider, model = "fake", "m"

    def __init__(self) -> None:
        self.seen: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> Completion:
        self.seen.append(request)
        return Completion(text="{}", usage=Usage(prompt_tokens=1, completion_tokens=1),
                          provider="fake", model="m", latency_s=0.0)

    async def aclose(self) -> None:
        return None


def test_prompt_version_changes_the_system_message_and_the_judge_name() -> None:
    inner = _Recorder()
    assert with_prompts(inner, "lens") is inner  # type: ignore[arg-type]
    strict = with_prompts(inner, "strict")  # type: ignore[arg-type]
    assert isinstance(strict, PromptVersionClient) and strict.model == "m#strict"
    request = CompletionRequest(messages=[Message(role="system", content=JUDGE_SYSTEM),
                                          Message(role="user", content="task")])
    anyio.run(strict.complete, request)
    sent = inner.seen[0].messages
    assert sent[0].content == STRICT_SYSTEM and sent[1].content == "task"
    # A protocol's own judge prompt has no system message: the version's instruction is put
    # before it, and the protocol's text is sent unchanged.
    protocol = CompletionRequest(messages=[Message(role="user", content="published prompt")])
    anyio.run(strict.complete, protocol)
    sent = inner.seen[1].messages
    assert [m.role for m in sent] == ["system", "user"]
    assert sent[0].content == STRICT_ADDENDUM and sent[1].content == "published prompt"


def test_an_unreadable_extra_judge_is_said_everywhere(setup: dict, tmp_path: Path,
                                                      capsys) -> None:
    run = Path(shutil.copytree(setup["run"], tmp_path / "run"))
    garbage = tmp_path / "garbage.yaml"
    garbage.write_text(yaml.safe_dump({"rules": [], "default": "I would rather not say."}),
                       encoding="utf-8")
    assert main(["score", str(run), "--judge", f"scripted/{garbage}"]) == 0
    out = capsys.readouterr().out
    assert "unreadable verdict(s): the scores resting on them are unknown" in out
    assert "range unknown (a judge left it unknown)" in out
    assert main(["report", str(run)]) == 0
    panel = _summary(run)["judges"]
    assert any("unreadable verdict(s)" in n for n in panel["notes"])
    fr = panel["ranges"]["sqlite_fts"]["fact_recall"]
    assert fr["low"] is None and fr["high"] is None
    assert "unreadable verdict(s)" in (run / "report.md").read_text(encoding="utf-8")


def test_run_names_an_unknown_provider_among_the_judges(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "dataset": {"path": str(tmp_path / "absent.json")}, "adapters": [{"name": "null"}],
        "agent": {"model": "scripted/policy"},
        "judges": [{"model": "scripted/policy"}, {"model": "nosuch/judge"}],
        "out_dir": str(tmp_path / "runs")}), encoding="utf-8")
    assert main(["run", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "field 'judges[1].model'" in err and "nosuch" in err
    assert not (tmp_path / "runs").exists()
