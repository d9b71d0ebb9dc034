"""``lens score`` decides its exit status from what its scorer returned: the same status and the
same reasons on stderr as the run's full checklist read from the run directory
(``exit_status``), on a clean run, an arm whose questions all errored, an arm with some errored
and some unconsulted questions, a lost unit and arms that broke the adapter contract, under
every ``--fail-on``; and the question records are read once, by the scorer."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from lens.commands.gating import exit_status, scored_run_data
from lens.core import eventloop
from lens.runs.store import RunStore
from lens.scoring.plan import make_plan
from lens.scoring.scorer import score
from tests.core.helpers import make_dataset, write_json
from tests.hostile.test_hostile_runs import only_run, write_config
from tests.support.cli import Lens, cli_runner
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply, agent_responder

MOD = "tests.hostile.truth_adapters"
FAIL_ON = ("never", "fail", "warn")


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _question(req: RecordedRequest) -> str:
    return next((str(m.get("content", "")) for m in req.body.get("messages", [])
                 if m.get("role") == "user"), "")


def _some_errored(req: RecordedRequest) -> Reply:
    """Question 1 errors, question 2 is answered without a tool call, the rest as an agent."""
    asked = _question(req)
    if "(question 1)" in asked:
        return Reply.error(400, "invalid option value for 'reasoning_effort'")
    if "(question 2)" in asked:
        return Reply.text("From what I know, it rose.")
    return agent_responder()(req)


def _all_errored(req: RecordedRequest) -> Reply:
    return Reply.error(400, "invalid option value for 'reasoning_effort'")


RUNS: dict[str, tuple[list[dict[str, Any]], Callable[[RecordedRequest], Reply] | None]] = {
    "clean": ([{"name": "sqlite_fts"}], None),
    "failed_arm": ([{"name": "sqlite_fts"}], _all_errored),
    "errored_questions": ([{"name": "sqlite_fts"}], _some_errored),
    "lost_unit": ([{"name": "sqlite_fts", "label": "fine"},
                   {"name": f"{MOD}:FailsReset", "label": "locked", "isolation": "none"}], None),
    "contract_breach": ([{"name": "sqlite_fts", "label": "fts"},
                         {"name": f"{MOD}:StrictQuerySyntax", "label": "strict"},
                         {"name": f"{MOD}:RowIds", "label": "rows"}], None),
    "memory_state": ([{"name": "sqlite_fts", "label": "fixed"},
                      {"name": "tests.memory_state.listing_adapters:LearnsFromQuestions",
                       "label": "learns"}], None),
}


def _run(lens: Lens, tmp_path: Path, name: str) -> Path:
    arms, respond = RUNS[name]
    data = make_dataset(n_episodes=4, checkpoints=(2, 4), questions_per_checkpoint=2)
    ds = write_json(tmp_path / "ds.json", data)
    server = FakeOpenAI(respond) if respond is not None else None
    with server if server is not None else nullcontext():
        agent = ({"model": "openai/fake", "base_url": server.base_url} if server is not None
                 else {"model": "scripted/policy"})
        cfg = write_config(tmp_path / "run.yaml", name=name, dataset={"path": str(ds)},
                           adapters=arms, agent=agent, out_dir="runs", cache={"enabled": False})
        lens("run", str(cfg), "--quiet", "--fail-on", "never")
    return only_run(tmp_path / "runs")


@pytest.mark.parametrize("name", list(RUNS))
def test_score_exit_status_is_the_full_checklists(
        name: str, tmp_path: Path, lens: Lens, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _run(lens, tmp_path, name)
    reads: list[Path] = []
    iter_records = RunStore.iter_records

    def counted(self: RunStore) -> Any:
        reads.append(self.root)
        return iter_records(self)

    monkeypatch.setattr(RunStore, "iter_records", counted)
    codes = []
    for how in FAIL_ON:
        reads.clear()
        got = lens("score", str(run_dir), "--tier", "1", "--fail-on", how)
        # The records are streamed twice, and held whole by neither: by the scorer (without
        # their transcripts) and by the exit status (measured, then cut short, as the report
        # holds them).
        assert len(reads) == 2, (how, reads)
        # The old way: the whole run loaded from its directory, its checklist computed.
        capsys.readouterr()
        code = exit_status(run_dir, how)
        said = capsys.readouterr().err.splitlines()
        assert got.returncode == code, (how, got.stderr, said)
        assert [line for line in got.stderr.splitlines()
                if line.startswith(("lens: exit", "  "))] == said
        codes.append(code)
    assert codes == EXPECTED[name]


EXPECTED = {
    "clean": [0, 0, 3],
    "failed_arm": [1, 1, 1],
    "errored_questions": [1, 1, 1],
    "lost_unit": [1, 1, 1],
    "contract_breach": [1, 1, 1],
    "memory_state": [1, 1, 1],
}


def test_the_exit_status_reads_the_records_in_the_order_the_run_committed_them(
        tmp_path: Path, lens: Lens) -> None:
    """A question re-asked by ``--resume --retry-errors`` moves to its newest commit, in the
    records the exit status of a scoring reads as in those the report reads."""
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=4, checkpoints=(2, 4),
                                                       questions_per_checkpoint=2))
    outage = {"on": True}

    def respond(req: RecordedRequest) -> Reply:
        if outage["on"] and "(question 1)" in _question(req):
            return Reply.error(400, "model overloaded")
        return agent_responder()(req)

    with FakeOpenAI(respond) as server:
        cfg = write_config(tmp_path / "run.yaml", name="again", dataset={"path": str(ds)},
                           adapters=[{"name": "sqlite_fts"}],
                           agent={"model": "openai/fake", "base_url": server.base_url,
                                  "max_retries": 0},
                           out_dir="runs", cache={"enabled": False})
        assert lens("run", str(cfg), "--quiet", "--fail-on", "never").returncode == 1
        run_dir = only_run(tmp_path / "runs")
        outage["on"] = False
        assert lens("run", str(cfg), "--quiet", "--resume", str(run_dir),
                    "--retry-errors").returncode == 0
    stored = [r.key for r in RunStore.open(run_dir).load_records()]
    assert stored[-1].endswith("q01") and sorted(stored) != stored
    events = sum(1 for _ in RunStore.open(run_dir).events())
    result = eventloop.run(lambda: score(run_dir, make_plan(tiers={1}, target="scores")))
    assert result.read is not None
    # The exit status reads the events the run had before the scoring added its own.
    assert result.read.events == events
    assert sum(1 for _ in RunStore.open(run_dir).events()) > events
    run = scored_run_data(run_dir, RunStore.open(run_dir).manifest(), result)
    assert [row.record.key for row in run.rows] == stored
    assert len(run.events) == events
