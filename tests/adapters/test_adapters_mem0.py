"""mem0 run locally: raw mode through the conformance suite; extraction mode through the lens
model stack (scripted replies in CI, a real local model in the opt-in slow test)."""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from lens.data.dataset import Episode
from lens.memory.adapter import create_adapter
from lens.testing import AdapterConformance
from tests.adapters.gateway_run import jsonl, run_gateway_adapter
from tests.support.extras import missing_reason, skip_module_unless

skip_module_unless("mem0")

CACHE = str(Path(tempfile.gettempdir()) / "lens-tests" / "embeddings.sqlite")


class TestMem0Raw(AdapterConformance):
    adapter_name = "mem0"
    adapter_options: ClassVar[dict[str, Any]] = {"embedding_cache": CACHE}


@pytest.mark.slow
class TestMem0RawChunked(AdapterConformance):
    adapter_name = "mem0"
    adapter_options: ClassVar[dict[str, Any]] = {"embedding_cache": CACHE, "chunk_chars": 100,
                                                 "chunk_overlap": 20}


EPISODE = Episode(episode_id="ops_ep_001", scope_id="ops",
                  timestamp=datetime(2024, 1, 15, 10, tzinfo=UTC),
                  text="Daily summary. The billing queue stalled for 40 minutes after the kafka "
                       "broker kafka-3 rebooted; on-call J. Martinez restarted the consumers.")


async def _extract(llm: dict[str, Any]) -> tuple[list[Any], Any, Any, Any]:
    a = create_adapter("mem0", {"llm": llm, "embedding_cache": CACHE})
    try:
        await a.reset("ops")
        await a.ingest(EPISODE)
        hits = await a.search("why did billing stall?")
        doc = await a.retrieve(hits[0].ref_id) if hits else None
        caps = await a.get_capabilities()
        return hits, doc, caps, await a.model_usage()
    finally:
        await a.aclose()


def test_telemetry_is_off_even_if_mem0_was_imported_first() -> None:
    import mem0.memory.telemetry as telemetry

    hits, _, _ = anyio.run(_raw_roundtrip)
    assert [h.ref_id for h in hits] == ["ops_ep_001"]
    assert telemetry.MEM0_TELEMETRY is False
    assert telemetry.client_telemetry.posthog is None


async def _raw_roundtrip() -> tuple[list[Any], Any, Any]:
    a = create_adapter("mem0", {"embedding_cache": CACHE})
    try:
        await a.reset("ops")
        await a.ingest(EPISODE)
        return await a.search("kafka broker reboot"), await a.model_usage(), None
    finally:
        await a.aclose()


def test_raw_mode_calls_no_model() -> None:
    _, usage, _ = anyio.run(_raw_roundtrip)
    assert usage is None


def test_extraction_calls_are_the_runs_memory_cost(tmp_path: Path) -> None:
    """Through `lens run`: every extraction call mem0 makes is in the adapter's usage events and
    the report's memory-cost section, apart from the agent's calls."""
    llm = {"model": "scripted/replay", "options": {"replies": [
        {"text": json.dumps({"memory": [{"text": f"fact {i}"}]})} for i in range(3)]}}
    out = run_gateway_adapter(tmp_path, "mem0", {"llm": llm, "embedding_cache": CACHE},
                              n_episodes=3)
    events = jsonl(out / "events.jsonl")
    usage = [e for e in events if e["kind"] == "adapter_usage"][-1]
    assert usage["calls"] == 3 and usage["prompt_tokens"] > 0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    cost = {s["id"]: s["data"] for s in summary["sections"]}["memory_cost"]["adapters"]
    assert cost["mem0"]["memory_model"]["calls"] == 3
    assert cost["mem0"]["memory_model"]["prompt_tokens"] == usage["prompt_tokens"]


def test_extraction_mode_through_the_lens_model_stack() -> None:
    fact = "Billing queue stalled 40 minutes after kafka-3 broker reboot"
    llm = {"model": "scripted/replay",
           "options": {"replies": [{"text": json.dumps({"memory": [{"text": fact}]})}]}}
    hits, doc, caps, usage = anyio.run(_extract, llm)
    assert caps.synthetic_ref_prefixes == ["mem0:"]
    # mem0's extraction call is the adapter's own model usage: the run's memory cost.
    assert usage["calls"] == 1 and usage["prompt_tokens"] > 0 and usage["cost_usd"] == 0.0
    assert [h.text for h in hits] == [fact]  # the extracted fact, not the raw episode
    assert hits[0].ref_id.startswith("mem0:")
    assert hits[0].metadata["episode_id"] == "ops_ep_001"
    assert doc is not None and doc.text == fact


SECOND = Episode(episode_id="ops_ep_002", scope_id="ops",
                 timestamp=datetime(2024, 1, 16, 10, tzinfo=UTC),
                 text="Daily summary. kafka-3 was replaced; the billing queue kept up all day.")


async def _extract_and_list(llm: dict[str, Any]) -> tuple[Any, Any]:
    a = create_adapter("mem0", {"llm": llm, "embedding_cache": CACHE})
    try:
        await a.reset("ops")
        await a.ingest(EPISODE)
        await a.ingest(SECOND)
        await a.prepare("ops", 2)
        return await a.list_memory("ops", 2), await a.list_memory("ops", 2)
    finally:
        await a.aclose()


def test_extraction_mode_lists_what_mem0_extracted() -> None:
    """mem0's own listing (``get_all`` for the scope's user) in extraction mode: the facts mem0
    wrote, not the raw episodes, each from the episode whose ingest wrote it; reading it twice
    gives the same state."""
    from lens.memory.listing import state_digest

    facts = ["Billing queue stalled 40 minutes after kafka-3 reboot", "kafka-3 was replaced"]
    # Each add is a conversation of its own: the reply is chosen by the episode it extracts from.
    llm = {"model": "scripted/replay", "options": {"replies": {
        "rules": [{"contains": "kafka-3 was replaced; the billing queue kept up",
                   "text": json.dumps({"memory": [{"text": facts[1]}]})}],
        "default": json.dumps({"memory": [{"text": facts[0]}]})}}}
    listing, again = anyio.run(_extract_and_list, llm)
    by_text = {i.text: i for i in listing.items}
    assert sorted(by_text) == sorted(facts)
    assert by_text[facts[0]].source_episodes == ["ops_ep_001"]
    assert by_text[facts[1]].source_episodes == ["ops_ep_002"]
    assert all(i.item_id.startswith("mem0:") and i.changed_at is not None
               for i in listing.items)
    assert state_digest(again) == state_digest(listing)


@pytest.mark.slow
@pytest.mark.opt_in
def test_extraction_mode_with_a_local_model() -> None:
    """Opt-in (-m slow): mem0's ~8k-token extraction prompt on the packaged 0.5B model."""
    reason = missing_reason("local")
    if reason:
        pytest.skip(reason)
    from lens.models.local_models import LOCAL_MODELS, resolve_model_path

    name = "qwen2.5-coder-0.5b"
    try:
        resolve_model_path(name)
    except Exception as exc:
        pytest.skip(f"local model {name} unavailable: {exc} ({LOCAL_MODELS[name].pip_command()})")
    hits, doc, _, usage = anyio.run(_extract, {"model": f"llama_cpp/{name}", "max_tokens": 256})
    assert usage["calls"] >= 1 and usage["prompt_tokens"] > 1000
    assert hits, "the local model extracted nothing from the episode"
    assert all(h.ref_id.startswith("mem0:") for h in hits)
    assert doc is not None and doc.text
