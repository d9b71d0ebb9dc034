"""LangMem through lens's model gateway: really LangMem (its memory manager, trustcall's tool
calls, a LangGraph store with a semantic index), with the scripted model behind the gateway in
CI and the local model on request."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lens.runner.memory_states import load_listings
from tests.adapters.gateway_run import check_gateway_run, run_gateway_adapter, search_hits
from tests.conftest import ROOT
from tests.support.extras import missing_reason, skip_module_unless

skip_module_unless("langmem")

# trustcall asks for a ``Memory`` tool call (and ``PatchDoc`` once memories exist); the
# scripted model answers every first turn with a new memory.
SCRIPTED = {"model": "scripted/replay", "model_options": {"options": {"replies": [
    {"tool_calls": [{"name": "Memory",
                     "arguments": {"content": "The widget count was recorded."}}]}]}}}


def run_langmem(tmp_path: Path, options: dict[str, Any], n_episodes: int = 4,
                timeout_s: float = 60) -> Path:
    return run_gateway_adapter(tmp_path, "langmem", options, n_episodes, timeout_s)


def _check_run(out: Path, n_episodes: int) -> dict[str, Any]:
    # At least one extraction call per episode through the gateway, plus the embeddings of
    # LangMem's searches and of the memories it stored.
    return check_gateway_run(out, "langmem", min_chat_calls=n_episodes)


def test_langmem_through_lens_run_with_the_scripted_model(tmp_path: Path) -> None:
    out = run_langmem(tmp_path, SCRIPTED)
    got = _check_run(out, 4)
    hits = search_hits(got["records"])
    assert hits and all(h["ref_id"].startswith("langmem:") for h in hits)
    episode_ids = {e for h in hits for e in h["metadata"]["episode_ids"]}
    assert episode_ids and all(e.startswith("s1_ep_") for e in episode_ids)
    # LangMem's own listing of its namespace, read by lens once `prepare` returned: the
    # memories the scripted extraction wrote, each from the episodes whose ingest wrote it.
    [listing] = [line.listing for line in load_listings(out).values()]
    assert listing.items and all(i.item_id.startswith("langmem:") for i in listing.items)
    assert {i.text for i in listing.items} == {"The widget count was recorded."}
    listed = {e for i in listing.items for e in i.source_episodes}
    assert listed == {f"s1_ep_{n:03d}" for n in range(1, 5)}
    assert all(i.changed_at is not None for i in listing.items)


@pytest.mark.slow
@pytest.mark.opt_in
# Several model calls per episode on a 2-core CPU: past the suite's 900 s per test.
@pytest.mark.timeout(3600)
def test_langmem_with_the_local_model(tmp_path: Path) -> None:
    """Opt-in: LangMem's extraction prompts on the packaged local model, through the gateway."""
    reason = missing_reason("local")
    if reason:
        pytest.skip(reason)
    _check_run(run_langmem(tmp_path, {"model": "llama_cpp/default", "max_tokens": 256},
                           n_episodes=2, timeout_s=1200), 2)


@pytest.mark.slow
def test_lens_adapters_check_opens_a_gateway_for_it(tmp_path: Path) -> None:
    """`lens adapters check` gives each instance a key to a model gateway of its own; the
    checks that do not depend on what the model wrote pass with the scripted model, the
    listing of what LangMem stored among them."""
    proc = subprocess.run(
        [sys.executable, "-m", "lens", "adapters", "check", "langmem", "--options",
         json.dumps(SCRIPTED), "--only", "capabilities_well_formed", "--only",
         "retrieve_returns_referenced", "--only", "unknown_ref_is_none", "--only",
         "limit_respected", "--only", "memory_listing_well_formed"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "5 passed, 0 failed" in proc.stdout
    assert "model gateway:" in proc.stdout and "chat calls to scripted/replay" in proc.stdout
