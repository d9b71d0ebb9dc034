"""Refusals a user can act on: every problem of a config listed, each with the valid choices and
the close spelling; lens's own line breaks printed as line breaks, text quoted from a run still
escaped; a config of another command named as such. All through the CLI, exit status 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lens.commands.cli import main
from tests.conftest import ROOT
from tests.report.runfactory import RunSpec, make_run

DATASET = ROOT / "datasets" / "quickstart.json"


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


def test_every_config_problem_is_listed_with_valid_choices_and_spelling(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {DATASET}}}\n"
                   "adapters: [{name: sqlite_fts}]\n"
                   "agent: {model: scripted/policy, tempreature: 0}\n"
                   "concurency: {units: 2}\n"
                   "repeats: 0\n")
    code, err = run_cli(["run", str(cfg), "--out", str(tmp_path / "runs")], capsys)
    assert code == 2
    assert "3 problems" in err and "more" not in err
    assert (f"{cfg}: field 'concurency': unknown field (line 4); did you mean 'concurrency'? "
            "valid fields: adapters, agent, cache, concurrency,") in err
    assert "field 'agent.tempreature': unknown field (line 3); did you mean 'temperature'?" in err
    assert "field 'repeats': Input should be greater than or equal to 1" in err
    assert not (tmp_path / "runs").exists()


def test_every_adapter_option_problem_is_listed(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {DATASET}}}\n"
                   "adapters:\n"
                   "  - {name: sqlite_fts, options: {max_resluts: 3, colour: red}}\n"
                   "  - {name: recency, label: r2, options: {n: many}}\n"
                   "  - {name: sqlite_ft, label: typo}\n"
                   "agent: {model: scripted/policy}\n")
    code, err = run_cli(["run", str(cfg), "--out", str(tmp_path / "runs")], capsys)
    assert code == 2, err
    assert "4 problems" in err and "(and" not in err
    assert ("field 'adapters.0.options.max_resluts': unknown option (line 3); did you mean "
            "'max_results'? valid options: chunk_chars, chunk_overlap, max_results, path, "
            "snippet_chars") in err
    # No close spelling: the valid options alone.
    assert ("field 'adapters.0.options.colour': unknown option (line 3); valid options: "
            "chunk_chars," in err)
    assert "field 'adapters.1.options.n': Input should be a valid integer" in err
    assert ("field 'adapters.2.name': unknown adapter 'sqlite_ft' (line 5); did you mean "
            "'sqlite_fts'?" in err)
    assert not (tmp_path / "runs").exists()


def test_config_and_adapter_option_typos_come_in_one_round(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Typos in the config's fields and in adapters' options are all listed at once, each with
    its line: the options are checked even when the config's own fields are wrong."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"datset: {{path: {DATASET}}}\n"
                   "adapters:\n"
                   "  - name: sqlite_fts\n"
                   "    optons: {max_results: 3}\n"
                   "  - name: sqlite_fts\n"
                   "    label: b\n"
                   "    options:\n"
                   "      max_resluts: 3\n"
                   "      snipet_chars: 10\n"
                   "agent: {modle: scripted/policy}\n", encoding="utf-8")
    code, err = run_cli(["run", str(cfg), "--out", str(tmp_path / "runs")], capsys)
    assert code == 2, err
    assert "7 problems" in err, err
    for field, line in (("datset", 1), ("adapters.0.optons", 4), ("agent.modle", 10),
                        ("adapters.1.options.max_resluts", 8),
                        ("adapters.1.options.snipet_chars", 9)):
        assert re.search(rf"field '{re.escape(field)}': unknown (field|option) \(line {line}\)",
                         err), (field, err)
    assert not (tmp_path / "runs").exists()


def test_unknown_model_option_names_the_close_spelling(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {DATASET}}}\n"
                   "adapters: [{name: sqlite_fts}]\n"
                   "agent: {model: scripted/policy, options: {retreive_k: 2}}\n")
    code, err = run_cli(["run", str(cfg), "--out", str(tmp_path / "runs")], capsys)
    assert code == 2
    assert "unknown option 'retreive_k' (did you mean 'retrieve_k'?); valid options:" in err


def test_a_sweep_config_given_to_lens_run_names_its_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sweep = ROOT / "configs" / "goldevidence-sweep-smoke.yaml"
    code, err = run_cli(["run", str(sweep), "--out", str(tmp_path / "runs")], capsys)
    assert code == 2
    assert f"python -m goldevidence sweep --config {sweep}" in err
    assert "unknown field" not in err and "required field" not in err
    assert not (tmp_path / "runs").exists()


def test_compare_refusal_prints_line_breaks_and_escapes_quoted_text(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run(tmp_path, RunSpec(name="a", seed=1))
    b = make_run(tmp_path, RunSpec(name="b", seed=2, condition_overrides={
        "judge_model": "openai/gpt-4o"}))
    manifest = json.loads((b / "manifest.json").read_text())
    manifest["run_id"] = "b\nforged line\x1b[31m"
    (b / "manifest.json").write_text(json.dumps(manifest))
    code, err = run_cli(["compare", str(a), str(b)], capsys)
    assert code == 2
    lines = err.splitlines()
    assert lines[0].startswith("lens: error: these runs ran under different conditions")
    assert any(ln.startswith("  judge_model: a-id=") for ln in lines)
    assert any(ln.startswith("  seed: a-id=1; ") for ln in lines)
    assert lines[-1].startswith("re-run under one condition, or pass --force")
    # The run id came from a file: its newline and escape are shown, not obeyed.
    assert "b␊forged line␛[31m" in err
    assert not any(ln.startswith("forged line") for ln in lines)
    assert "\x1b" not in err
