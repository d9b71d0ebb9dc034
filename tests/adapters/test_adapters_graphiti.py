"""Graphiti through lens's model gateway: really Graphiti (entity and fact extraction,
resolution, its hybrid edge search) on its embedded Kuzu database, with the scripted model
behind the gateway in CI (one canned reply per structured-output step, matched by the response
schema Graphiti asks for) and the local model on request."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from lens.runner.memory_states import load_listings
from tests.adapters.gateway_run import check_gateway_run, run_gateway_adapter, search_hits
from tests.adapters.graphiti_script import EDGES, RULES
from tests.conftest import ROOT
from tests.support.extras import missing_reason, skip_module_unless

skip_module_unless("graphiti")



def run_graphiti(tmp_path: Path, options: dict[str, Any], n_episodes: int = 4,
                 timeout_s: float = 60) -> Path:
    return run_gateway_adapter(tmp_path, "graphiti", options, n_episodes, timeout_s)


def _check_run(out: Path, n_episodes: int) -> list[dict[str, Any]]:
    # Entity and fact extraction for every episode, at least, plus the embeddings.
    return check_gateway_run(out, "graphiti", min_chat_calls=2 * n_episodes)["records"]


def test_graphiti_through_lens_run_with_the_scripted_model(tmp_path: Path) -> None:
    fixture = tmp_path / "graphiti.yaml"
    fixture.write_text(yaml.safe_dump({"rules": RULES, "default": "{}"}), encoding="utf-8")
    out = run_graphiti(tmp_path, {"model": f"scripted/{fixture}"})
    records = _check_run(out, 4)
    hits = search_hits(records)
    assert hits and all(h["ref_id"].startswith("graphiti:") for h in hits)
    assert {h["text"] for h in hits} == {EDGES["edges"][0]["fact"]}
    sources = {e for h in hits for e in h["metadata"]["episode_ids"]}
    assert sources and all(e.startswith("s1_ep_") for e in sources)
    # Graphiti's own group-id listings, read by lens once `prepare` returned: the scripted
    # fact and the two entities, each from the episodes it came from.
    [listing] = [line.listing for line in load_listings(out).values()]
    facts = [i for i in listing.items if not i.item_id.startswith("graphiti:entity:")]
    entities = [i for i in listing.items if i.item_id.startswith("graphiti:entity:")]
    assert {f.text for f in facts} == {EDGES["edges"][0]["fact"]}
    assert {f.item_id for f in facts} >= {h["ref_id"] for h in hits}
    assert {e.text.split(":")[0] for e in entities} == {"Widget line", "Plant 7"}
    ingested = {f"s1_ep_{n:03d}" for n in range(1, 5)}
    assert {s for i in listing.items for s in i.source_episodes} == ingested
    assert all(i.changed_at is not None for i in listing.items)


@pytest.mark.slow
def test_graphiti_listing_passes_the_conformance_check(tmp_path: Path) -> None:
    """`lens adapters check` with its gateway: Graphiti's listing reads only what was ingested,
    the same twice, and nothing of the previous scope after reset."""
    fixture = tmp_path / "graphiti.yaml"
    fixture.write_text(yaml.safe_dump({"rules": RULES, "default": "{}"}), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "lens", "adapters", "check", "graphiti", "--options",
         json.dumps({"model": f"scripted/{fixture}"}), "--only", "memory_listing_well_formed"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 0 failed" in proc.stdout


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
    _check_run(run_graphiti(tmp_path, {"model": "llama_cpp/default", "max_tokens": 1024},
                            n_episodes=2,
                            timeout_s=1800), 2)
