"""What a newcomer meets first: the README's commands, the shipped configs, the end-of-run
result, empty final answers, and config errors that explain YAML's traps."""

from __future__ import annotations

import json
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from lens.commands.cli import main
from lens.core.errors import ConfigError
from lens.data.config import BudgetConfig, load_config
from lens.data.prompts import EMPTY_ANSWER_REMINDER
from lens.runner.agent import Agent
from tests.core.test_core_agent import DOCS, FakeMemory, Q, replay, search
from tests.support import extras
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = (re.compile(r"\.\./shared"), re.compile(r"shared/lens-datasets"),
           re.compile(r"""["']shared["']\s*/\s*["']lens-datasets["']"""))
# The package, its configs and its docs: what a user installs, runs or reads.
USER_FACING = ("lens/", "goldevidence/", "configs/", "docs/", "README.md",
               "pyproject.toml", ".ci/")


def lens(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd, check=False)


# --- nothing outside the repository -------------------------------------------------------------

def tracked_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=60)
    return out.stdout.splitlines()


def test_no_tracked_file_outside_tests_names_the_shared_folder() -> None:
    """The published scopes live beside the project only on its own machines; a user's clone
    has no ../shared, so nothing a user runs or reads may point there. (Tests may, skipping
    when it is absent; bench/ scripts take the folder as the published scopes' default home,
    so only the literal folder names are checked there.)"""
    offenders = []
    for name in tracked_files():
        if name.startswith("tests/"):
            continue
        path = ROOT / name
        if not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        text = path.read_text(encoding="utf-8", errors="ignore")
        patterns = OUTSIDE if name.startswith(USER_FACING) else OUTSIDE[:2]
        offenders += [f"{name}: {p.pattern}" for p in patterns if p.search(text)]
    assert offenders == []


@pytest.mark.parametrize("config", sorted(p.name for p in (ROOT / "configs").glob("*.yaml")
                                          if "dataset:" in p.read_text()))
def test_shipped_configs_read_a_shipped_dataset(config: str) -> None:
    cfg = load_config(ROOT / "configs" / config)
    assert cfg.dataset.path.is_file(), cfg.dataset.path
    assert cfg.dataset.path.resolve().is_relative_to(ROOT)


def test_the_adapter_guide_first_run_reads_the_dataset_the_guide_generates(
        tmp_path: Path) -> None:
    """An installed lens ships no datasets: the guide's first run reads the file its
    ``lens datasets generate`` command writes (run here as the guide gives it)."""
    guide = (ROOT / "docs" / "writing-an-adapter.md").read_text()
    block = re.search(r"```yaml\n(# first-run\.yaml.*?)```", guide, re.S)
    assert block is not None
    data = yaml.safe_load(block.group(1))
    command = re.search(r"\$ (lens datasets generate [^\n]*)", guide)
    assert command is not None and data["dataset"]["path"] in command.group(1)
    args = command.group(1).split()[1:]
    proc = subprocess.run([sys.executable, "-m", "lens", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / data["dataset"]["path"]
    scopes = {s["scope_id"] for s in json.loads(path.read_text())["scopes"]}
    assert set(data["dataset"].get("scopes") or []) <= scopes


def test_readme_first_block_is_the_install_and_the_suite() -> None:
    """.ci/run runs exactly these two lines in a fresh clone."""
    ns = runpy.run_path(str(ROOT / ".ci" / "readme_commands.py"))
    commands = ns["first_block_commands"]((ROOT / "README.md").read_text())
    assert len(commands) == 2
    install, suite = commands
    assert '.[local,dev]"' in install and "python -m lens run configs/quickstart.yaml" in install
    assert suite == "python -m pytest"
    with pytest.raises(ValueError, match="no fenced code block"):
        ns["first_block_commands"]("no code here")


def test_missing_extra_names_the_extra_and_the_install_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(extras.EXTRAS, "fancy", extras.Extra(("json", "no_such_module_xyz"),
                                                             "pip install -e '.[fancy]'"))
    reason = extras.missing_reason("fancy")
    assert reason is not None
    assert "'fancy' extra" in reason and "no_such_module_xyz" in reason
    assert "json" not in reason.split("missing:")[1].split(")")[0]
    assert reason.endswith("pip install -e '.[fancy]'")
    assert extras.missing_reason() is None
    monkeypatch.setitem(extras.EXTRAS, "present", extras.Extra(("json",), "-"))
    assert extras.missing_reason("present") is None


# --- the end-of-run result ----------------------------------------------------------------------

def test_lens_run_ends_with_the_result_from_the_report(tmp_path: Path) -> None:
    """The real CLI on the shipped scripted config: headline metrics with intervals and n, the
    checklist's FAIL/WARN lines and the report's path and file:// address, all the report's
    own numbers (summary.json), not recomputed ones."""
    res = lens("run", "configs/scripted.yaml", "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr
    out = res.stdout
    (run_dir,) = tmp_path.iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    comp = summary["adapters"]["sqlite_fts"]["metrics"]["composite"]
    assert (f"composite          {comp['mean']:.3f} [{comp['low']:.3f}, {comp['high']:.3f}] "
            f"n={comp['n']}") in out
    assert "answer_quality     unknown (n=0)" in out  # no judge: unknown, not 0
    flagged = [c for c in summary["checklist"] if c["status"] != "pass"]
    assert flagged, "the scripted run has no judge, so at least that check warns"
    for c in flagged:
        who = (f"{'failed' if c['status'] == 'fail' else 'warned'} by "
               f"{', '.join(c['failing'])} — " if c["failing"] else "")
        assert f"{c['status'].upper()}  {c['title']}: {who}{c['value']}" in out
    assert f"report: {run_dir / 'report.html'}" in out
    assert (run_dir / "report.html").resolve().as_uri() in out


def test_lens_run_quiet_is_one_line(tmp_path: Path) -> None:
    res = lens("run", "configs/scripted.yaml", "--out", str(tmp_path), "--quiet")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 1
    (run_dir,) = tmp_path.iterdir()
    assert lines[0].startswith("questions: 150 (150 answered now, 0 empty, 0 errored")
    assert "sqlite_fts composite 0." in lines[0] and "n=150" in lines[0]
    assert lines[0].endswith((run_dir / "report.html").resolve().as_uri())


def test_lens_report_open_opens_the_html(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert lens("run", "configs/scripted.yaml", "--out", str(tmp_path), "--quiet").returncode == 0
    (run_dir,) = tmp_path.iterdir()
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url: opened.append(url) or True)
    assert main(["report", str(run_dir), "--open"]) == 0
    assert opened == [(run_dir / "report.html").resolve().as_uri()]
    assert "pre-flight:" in capsys.readouterr().out


# --- empty final answers ------------------------------------------------------------------------

async def ask(model: Any, **budget: Any) -> Any:
    memory = FakeMemory(DOCS)
    agent = Agent(model=model, adapter=memory, budget=BudgetConfig(**budget),
                  capabilities=await memory.get_capabilities(), call_timeout_s=0.5)
    return await agent.answer(Q)


@pytest.mark.anyio
async def test_an_empty_final_answer_gets_one_reminder_then_the_answer_counts() -> None:
    r = await ask(replay(search(), {"text": ""}, {"text": "It rose to 410ms [ep2]."}))
    assert r.answer == "It rose to 410ms [ep2]." and r.budget.stop_reason == "answered"
    users = [m.content for m in r.transcript if m.role == "user"]
    assert users == [Q.prompt, EMPTY_ANSWER_REMINDER]
    assert len(r.model_calls) == 3


@pytest.mark.anyio
async def test_still_empty_after_the_reminder_is_an_empty_answer() -> None:
    # Text said beside the search is not the answer the agent finished with.
    r = await ask(replay({**search(), "text": "Let me look that up."}, {"text": " "}))
    assert r.answer == "" and r.cited_refs == []
    assert r.budget.stop_reason == "empty_answer"
    assert len(r.model_calls) == 3  # search, empty, reminder answered with nothing: no more
    assert sum(m.role == "user" for m in r.transcript) == 2


@pytest.mark.anyio
async def test_the_reminder_stays_within_the_budget() -> None:
    r = await ask(replay(search(), {"text": ""}, {"text": "late [ep1]"}), max_turns=2)
    assert r.answer == "" and r.budget.stop_reason == "max_turns"
    assert len(r.model_calls) == 2 and r.budget.compliant


def quirky_server(answer_after_reminder: bool) -> Any:
    """Like llama-cpp-python's server with chatml-function-calling: one search, then an empty
    message after the tool result; optionally a real answer once reminded."""

    def respond(req: RecordedRequest) -> Reply:
        messages = req.body.get("messages", [])
        if not any(m.get("role") == "tool" for m in messages):
            question = next(m["content"] for m in messages if m.get("role") == "user")
            return Reply.tool_call("memory_search", {"query": question})
        if answer_after_reminder and messages[-1].get("role") == "user":
            tool = next(m for m in messages if m.get("role") == "tool")
            ref = json.loads(tool["content"])["results"][0]["ref_id"]
            return Reply.text(f"The records say so [{ref}].")
        return Reply.completion({"role": "assistant", "content": ""})

    return respond


def write_run_config(tmp_path: Path, base_url: str) -> Path:
    # The phrase matcher grades the facts: these runs are about empty answers, and the offline
    # grader would run the local model over every answered question (no assertion reads it).
    cfg = {"name": "quirk", "dataset": {"path": str(ROOT / "datasets" / "quickstart.json")},
           "adapters": [{"name": "sqlite_fts"}],
           "agent": {"model": "openai/fake", "base_url": base_url, "max_retries": 0},
           "scoring": {"fact_grader": "matcher"},
           "cache": {"enabled": False}, "out_dir": str(tmp_path / "runs"),
           "concurrency": {"units": 1, "questions": 4}}
    path = tmp_path / "quirk.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def run_dir_of(tmp_path: Path) -> Path:
    (run_dir,) = (tmp_path / "runs").iterdir()
    return run_dir


@pytest.fixture(scope="module")
def quirky_runs(tmp_path_factory: pytest.TempPathFactory
                ) -> dict[bool, tuple[subprocess.CompletedProcess[str], int, Path]]:
    """A run against the quirky server that stays empty, and one that answers once reminded:
    (the CLI's result, the requests the server received, the run directory) by ``answers``."""
    out = {}
    for answers in (False, True):
        folder = tmp_path_factory.mktemp(f"quirky-{answers}")
        with FakeOpenAI(quirky_server(answer_after_reminder=answers)) as server:
            res = lens("run", str(write_run_config(folder, server.base_url)))
            requests = len(server.requests)
        assert res.returncode == 0, res.stderr
        out[answers] = (res, requests, run_dir_of(folder))
    return out


@pytest.mark.parametrize("answers", [False, True])
def test_a_server_that_answers_empty_is_recorded_counted_and_reported(
        quirky_runs: dict[bool, tuple[subprocess.CompletedProcess[str], int, Path]],
        answers: bool) -> None:
    """The real path: the CLI in a subprocess, the OpenAI backend over loopback HTTP, SQLite,
    the scorer and the report."""
    res, requests, run_dir = quirky_runs[answers]
    records = [json.loads(ln) for ln in (run_dir / "records.jsonl").read_text().splitlines()]
    assert len(records) == 11 and requests == 33  # search, empty, reminder: 3 calls each
    summary = json.loads((run_dir / "summary.json").read_text())
    check = next(c for c in summary["checklist"] if c["id"] == "empty_answer")
    ad = summary["adapters"]["sqlite_fts"]
    report = (run_dir / "report.md").read_text()
    if answers:
        assert {r["status"] for r in records} == {"answered"}
        assert check["status"] == "pass" and ad["empty_answers"] == 0
        return
    assert {r["status"] for r in records} == {"empty_answer"}
    assert {r["budget"]["stop_reason"] for r in records} == {"empty_answer"}
    assert check["status"] == "fail" and check["value"].startswith("11 of 11")
    assert ad["empty_answers"] == 11 and ad["answered"] == 0 and ad["errored"] == 0
    assert "empty final answers" in report and "| empty |" in report
    assert "FAIL  empty final answers: failed by sqlite_fts — 11 of 11 questions" in res.stdout
    assert "11 empty" in res.stdout
    # Scored as wrong answers: in every mean (n=11), never left out.
    comp = ad["metrics"]["composite"]
    assert comp["n"] == 11 and comp["mean"] == 0.0
    assert ad["metrics"]["fact_recall"]["n"] == 11


def test_silence_scores_below_a_faithful_answer(
        quirky_runs: dict[bool, tuple[subprocess.CompletedProcess[str], int, Path]]) -> None:
    """The adversary: an agent that stays silent when unsure. Were empty answers left out like
    errors, its mean would rest only on the questions it chose to answer; here it answers none
    and must score below an agent that answers from the records."""
    means = {}
    for answers in (False, True):
        summary = json.loads((quirky_runs[answers][2] / "summary.json").read_text())
        metrics = summary["adapters"]["sqlite_fts"]["metrics"]
        means[answers] = (metrics["composite"]["mean"], metrics["composite"]["n"])
    assert means[False][1] == means[True][1] == 11
    assert means[False][0] < means[True][0]


# --- YAML's traps in config errors --------------------------------------------------------------

BASE = "dataset: {path: d.json}\nagent: {model: scripted/policy}\n"


@pytest.mark.parametrize(("text", "field", "says"), [
    ("adapters:\n  - name: null\n", "adapters.0.name", ['quote it: name: "null"', "(line 4)"]),
    ("adapters:\n  - name: ~\n", "adapters.0.name", ["no value at all"]),
    ("adapters:\n  - name:\n", "adapters.0.name", ["empty value", "after 'name:'"]),
    ("adapters:\n  - name: no\n", "adapters.0.name", ["boolean false", 'name: "no"']),
    ("adapters:\n  - name: sqlite_fts\n    label: off\n", "adapters.0.label",
     ["boolean false", 'label: "off"']),
    ("adapters:\n  - name: sqlite_fts\n    label: 0123\n", "adapters.0.label",
     ["number 83", "octal", 'label: "0123"']),
    ("name: 2024-01-01\nadapters: [{name: sqlite_fts}]\n", "name", ["as a date"]),
    ("adapters: [{name: sqlite_fts}]\nscoring:\n  on: true\n", "scoring.on",
     ['quote the key: "on":']),
])
def test_config_errors_explain_yaml_traps(tmp_path: Path, text: str, field: str,
                                          says: list[str]) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(BASE + text)
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    message = info.value.render()
    assert str(cfg) in message and f"'{field}'" in message
    for part in says:
        assert part in message


def test_a_tab_in_the_indentation_says_to_indent_with_spaces(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset:\n\tpath: d.json\n")
    res = lens("run", str(cfg))
    assert res.returncode == 2
    assert str(cfg) in res.stderr and "line 2" in res.stderr
    assert "indent with spaces" in res.stderr and "Traceback" not in res.stderr


def test_a_quoted_null_is_the_null_adapter(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(BASE + 'adapters:\n  - name: "null"\n')
    assert load_config(cfg).adapters[0].name == "null"


def test_lens_run_prints_the_paired_verdict_of_the_report(tmp_path: Path) -> None:
    """Two arms: the terminal gives the paired comparison's verdict on the primary metric, the
    same verdict and interval as the report's comparison table (summary.json)."""
    cfg = tmp_path / "two.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "two", "dataset": {"path": str(ROOT / "datasets" / "quickstart.json")},
        "agent": {"model": "scripted/policy"},
        "adapters": [{"name": "sqlite_fts"}, {"name": "null"}],
        "out_dir": str(tmp_path / "runs"), "cache": {"enabled": False},
    }), encoding="utf-8")
    res = lens("run", str(cfg))
    assert res.returncode == 0, res.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    (comp,) = summary["comparisons"]
    row = next(r for r in comp["rows"] if r["metric"] == "composite")
    # The scripted agent with memory is far ahead of no memory, but on the quickstart's one
    # scope no test valid for skewed scope differences can say so: undecided, saying why.
    assert row["verdict"] == "undecided" and row["delta"]["mean"] < 0
    d = row["delta"]
    line = next(x for x in res.stdout.splitlines() if x.startswith("compared: "))
    assert line.startswith(f"compared: {comp['arm_b']} vs {comp['arm_a']} on composite: "
                           f"Δ {d['mean']:.3f} [{d['low']:.3f}, {d['high']:.3f}]")
    # The verdict and its reason on the same line.
    assert line.endswith(f", undecided: {row['reason']}")
    assert res.stdout.index("compared: ") < res.stdout.index("pre-flight:")
