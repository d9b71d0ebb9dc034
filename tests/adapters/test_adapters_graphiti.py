"""Graphiti through lens's model gateway: really Graphiti (entity and fact extraction,
resolution, its hybrid edge search) on its embedded Kuzu database, with the scripted model
behind the gateway in CI (one canned reply per structured-output step, matched by the response
schema Graphiti asks for) and the local model on request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.extras import missing_reason, skip_module_unless
from tests.support.gateway_runs import check_metered_run, run_gateway_adapter, tool_hits

skip_module_unless("graphiti")

ENTITIES = {"extracted_entities": [{"name": "Widget line", "entity_type_id": 0},
                                   {"name": "Plant 7", "entity_type_id": 0}]}
EDGES = {"edges": [{"source_entity_name": "Widget line", "target_entity_name": "Plant 7",
                    "relation_type": "COUNTED_AT",
                    "fact": "The widget count of the widget line changed at Plant 7"}]}
RULES = [
    {"schema": "ExtractedEntities", "text": json.dumps(ENTITIES)},
    {"schema": "ExtractedEdges", "text": json.dumps(EDGES)},
    {"schema": "NodeResolutions", "text": json.dumps({"entity_resolutions": []})},
    {"schema": "EdgeDuplicate", "text": json.dumps({"duplicate_facts": [],
                                                    "contradicted_facts": []})},
    {"schema": "SummarizedEntities", "text": json.dumps({"summaries": []})},
    {"schema": "EntitySummary", "text": json.dumps({"summary": "A thing in the records."})},
    {"schema": "Summary", "text": json.dumps({"summary": "A thing in the records."})},
    {"schema": "EdgeTimestamps", "text": json.dumps({"valid_at": None, "invalid_at": None})},
]


def _check_run(out: Path, n_episodes: int) -> list[dict[str, Any]]:
    # Entity and fact extraction for every episode, at least, plus the embeddings.
    return check_metered_run(out, "graphiti", min_chat_calls=2 * n_episodes)["records"]


def test_graphiti_through_lens_run_with_the_scripted_model(tmp_path: Path) -> None:
    fixture = tmp_path / "graphiti.yaml"
    fixture.write_text(yaml.safe_dump({"rules": RULES, "default": "{}"}), encoding="utf-8")
    records = _check_run(run_gateway_adapter(tmp_path, "graphiti",
                                             {"model": f"scripted/{fixture}"}), 4)
    hits = tool_hits(records)
    assert hits and all(h["ref_id"].startswith("graphiti:") for h in hits)
    assert {h["text"] for h in hits} == {EDGES["edges"][0]["fact"]}
    sources = {e for h in hits for e in h["metadata"]["episode_ids"]}
    assert sources and all(e.startswith("s1_ep_") for e in sources)


@pytest.mark.slow
@pytest.mark.opt_in
# Several model calls per episode on a 2-core CPU: past the suite's 900 s per test.
@pytest.mark.timeout(3600)
def test_graphiti_with_the_local_model(tmp_path: Path) -> None:
    """Opt-in: Graphiti's extraction prompts on the packaged local model, through the gateway.
    The packaged default model does not close Graphiti's JSON within max_tokens (the unit fails,
    visibly); the test is the target for a model that does."""
    reason = missing_reason("local")
    if reason:
        pytest.skip(reason)
    _check_run(run_gateway_adapter(tmp_path, "graphiti",
                                   {"model": "llama_cpp/default", "max_tokens": 1024},
                                   n_episodes=2, timeout_s=1800), 2)
