"""Standing context: the adapter's block reaches the agent's system prompt under its heading,
is charged to the payload budget (and cut to fit), is recorded, and passes through an isolated
adapter's process; adapters without one see no change."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import yaml

from lens.data.config import BudgetConfig
from lens.data.dataset import AgentQuestion, Episode
from lens.data.standing import CUT_MARKER, HEADING, apply_standing_context
from lens.memory.adapter import create_adapter
from lens.models.scripted import ScriptedClient
from lens.runner.agent import Agent
from lens.testing.conformance import run_check
from tests.core.helpers import make_dataset, write_json
from tests.shapes.standing_adapters import HoardingNotes, HugeNotes, NotesAdapter, UndeclaredNotes

ROOT = Path(__file__).resolve().parents[2]
MOD = "tests.shapes.standing_adapters"


def _episodes(n: int) -> list[Episode]:
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    return [Episode(episode_id=f"e{i}", scope_id="s", timestamp=t0 + timedelta(days=i),
                    text=f"Widget count was {i * 10}. Nothing else.") for i in range(n)]


async def _ask(adapter: NotesAdapter, budget: BudgetConfig, standing: bool = True):
    await adapter.reset("s")
    for ep in _episodes(3):
        await adapter.ingest(ep)
    text = await adapter.standing_context("s", 3) if standing else None
    agent = Agent(model=ScriptedClient("replay", {"replies": [{"text": "It was 20 [e2]."}]}),
                  adapter=adapter, budget=budget, capabilities=await adapter.get_capabilities(),
                  standing_context=text)
    return await agent.answer(AgentQuestion(question_id="q", prompt="What was the count?"))


def test_block_goes_into_the_system_prompt_and_is_charged() -> None:
    result = anyio.run(_ask, NotesAdapter(), BudgetConfig())
    system = result.transcript[0]
    assert system.role == "system"
    assert HEADING in system.content
    assert "Widget count was 20 [e2]" in system.content
    block = system.content.split(HEADING, 1)[1]
    assert result.standing_context_bytes > 0
    assert not result.standing_context_truncated
    assert result.budget.used["max_payload_bytes"] == result.standing_context_bytes
    assert result.standing_context_bytes <= len(block.encode())


def test_without_standing_context_nothing_changes() -> None:
    with_block = anyio.run(_ask, NotesAdapter(), BudgetConfig())
    without = anyio.run(_ask, NotesAdapter(), BudgetConfig(), False)
    assert HEADING not in without.transcript[0].content
    assert without.standing_context_bytes == 0
    assert without.budget.used["max_payload_bytes"] == 0
    # The block is in every prompt, so it costs agent tokens too.
    assert with_block.budget.used["max_agent_tokens"] > without.budget.used["max_agent_tokens"]


def test_a_huge_block_cannot_bypass_the_payload_budget() -> None:
    result = anyio.run(_ask, HugeNotes(), BudgetConfig(max_payload_bytes=1000))
    assert result.standing_context_truncated
    assert result.standing_context_bytes <= 1000
    assert result.budget.used["max_payload_bytes"] <= 1000
    assert result.budget.compliant
    assert CUT_MARKER in result.transcript[0].content


def test_apply_cuts_on_character_boundaries() -> None:
    block = apply_standing_context("sys", "é" * 500, 101)
    assert block.truncated and block.bytes <= 101
    block.system_prompt.encode("utf-8")
    assert apply_standing_context("sys", "  ", 100).system_prompt == "sys"
    assert apply_standing_context("sys", "x" * 50, 10).bytes == 0


def test_conformance_check_passes_skips_and_catches() -> None:
    ok = anyio.run(run_check, "standing_context_well_formed", NotesAdapter)
    assert ok.status == "passed", ok.detail
    hoard = anyio.run(run_check, "standing_context_well_formed", HoardingNotes)
    assert hoard.status == "failed" and "reset" in hoard.detail
    undeclared = anyio.run(run_check, "standing_context_well_formed", UndeclaredNotes)
    assert undeclared.status == "failed" and "declare" in undeclared.detail
    builtin = anyio.run(run_check, "standing_context_well_formed",
                        lambda: create_adapter("sqlite_fts"))
    assert builtin.status == "skipped"


def run_cli(tmp_path: Path, adapters: list[dict[str, object]], n_episodes: int = 6,
            checkpoints: tuple[int, ...] = (3, 6)) -> Path:
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=n_episodes,
                                                       checkpoints=checkpoints,
                                                       questions_per_checkpoint=2))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "sc", "dataset": {"path": str(ds)}, "adapters": adapters,
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs"),
        "cache": {"enabled": False},
    }), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "lens", "run", str(cfg), "--quiet"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return sorted((tmp_path / "runs").glob("sc-*"))[-1]


def records(run: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in
            (run / "records.jsonl").read_text(encoding="utf-8").splitlines()]


def events(run: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in
            (run / "events.jsonl").read_text(encoding="utf-8").splitlines()]


def test_isolated_adapter_standing_context_through_the_cli(tmp_path: Path) -> None:
    run = run_cli(tmp_path, [{"name": f"{MOD}:NotesAdapter", "label": "notes"},
                             {"name": "sqlite_fts", "label": "fts"}])
    recs = records(run)
    notes = [r for r in recs if r["adapter"] == "notes"]
    fts = [r for r in recs if r["adapter"] == "fts"]
    assert notes and fts and all(r["status"] == "answered" for r in recs)
    for r in notes:
        system = r["transcript"][0]["content"]
        assert HEADING in system and r["standing_context_bytes"] > 0
        held = {f"s1_ep_{i:03d}" for i in range(1, 7)
                if f"[s1_ep_{i:03d}]" in system}
        # The block at a checkpoint names exactly the episodes ingested by then.
        assert len(held) == r["episodes_ingested"], (held, r["episodes_ingested"])
    for r in fts:
        assert HEADING not in r["transcript"][0]["content"]
        assert r["standing_context_bytes"] == 0
    usage = [e for e in events(run) if e["kind"] == "adapter_usage"]
    assert {e["key"].split("|")[0] for e in usage} == {"notes"}
    assert max(e["calls"] for e in usage) == 6
