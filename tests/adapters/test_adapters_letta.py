"""Letta through lens's model gateway: really Letta (its server as the adapter's subprocess on
SQLite, a memgpt_v2 agent writing archival memory and core memory with its tools, its semantic
archival search), with the scripted model behind the gateway in CI and the local model on
request."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lens.runner.memory_states import load_listings
from tests.adapters.gateway_run import (
    check_gateway_run,
    jsonl,
    lens_run,
    run_gateway_adapter,
    search_hits,
)
from tests.conftest import ROOT
from tests.support.extras import missing_reason, skip_module_unless

skip_module_unless("letta")

FACT = "The widget count of the line was recorded in the day report."
NOTE = "Reads the widget line's day reports."
# Each episode reaches the agent with an empty message buffer, so the scripted replies answer
# the same turns every time: an archival insert, a core memory edit (Letta's rules continue the
# step after both), then send_message, which ends it.
SCRIPTED = {"model": "scripted/replay", "model_options": {"options": {"replies": [
    {"tool_calls": [{"name": "archival_memory_insert", "arguments": {"content": FACT}}]},
    {"tool_calls": [{"name": "memory_insert", "arguments": {"label": "human", "new_str": NOTE}}]},
    {"tool_calls": [{"name": "send_message", "arguments": {"message": "Saved."}}]}]}}}


def test_letta_through_lens_run_with_the_scripted_model(tmp_path: Path) -> None:
    out = run_gateway_adapter(tmp_path, "letta", SCRIPTED, n_episodes=3, timeout_s=120)
    # Three agent steps per episode, plus the embeddings of the passages and of the searches.
    got = check_gateway_run(out, "letta", min_chat_calls=3 * 3)
    hits = search_hits(got["records"])
    assert hits and {h["text"] for h in hits} == {FACT}
    assert all(h["ref_id"].startswith("letta:passage-") for h in hits)
    # Each passage names the episode whose ingest wrote it: one passage per episode.
    sources = [h["metadata"]["episode_ids"] for h in hits]
    assert all(len(s) == 1 and s[0].startswith("s1_ep_") for s in sources)
    assert len({h["ref_id"] for h in hits}) == len({s[0] for s in sources}) > 1
    # The core memory the agent edited is the standing context the answering agent read.
    prompts = [m["content"] for r in got["records"] for m in r["transcript"]
               if m["role"] in ("system", "user")]
    assert any("Letta core memory" in p and NOTE in p for p in prompts)
    # Letta's own listing of the agent's memory, read by lens once `prepare` returned: the
    # passage each episode's ingest wrote, and the core memory block every ingest edited.
    [listing] = [line.listing for line in load_listings(out).values()]
    passages = [i for i in listing.items if i.item_id.startswith("letta:passage-")]
    blocks = [i for i in listing.items if i.item_id.startswith("letta:block:")]
    ingested = [f"s1_ep_{n:03d}" for n in range(1, 4)]
    assert {p.text for p in passages} == {FACT}
    assert sorted(s for p in passages for s in p.source_episodes) == ingested
    assert {h["ref_id"] for h in hits} <= {p.item_id for p in passages}
    [human] = blocks
    assert human.item_id == "letta:block:human" and NOTE in human.text
    assert sorted(human.source_episodes) == ingested
    assert all(i.changed_at is not None for i in listing.items)


def test_letta_archival_ingest_needs_no_chat_model(tmp_path: Path) -> None:
    out = run_gateway_adapter(tmp_path, "letta", {"model": "scripted/replay",
                                                  "model_options": {"options": {"replies": []}},
                                                  "ingest": "archival"}, n_episodes=3)
    got = check_gateway_run(out, "letta", min_chat_calls=0)
    assert got["manifest"]["usage"]["by_role"].get("adapter", {}).get("calls", 0) == 0
    hits = search_hits(got["records"])
    assert hits and all(h["text"].startswith("[s1_ep_") for h in hits)
    assert all(h["metadata"]["episode_ids"] == [h["text"][1:10]] for h in hits)
    # Archival ingest lists each episode's text verbatim, and no core memory.
    [listing] = [line.listing for line in load_listings(out).values()]
    assert sorted(i.text[1:10] for i in listing.items) == [f"s1_ep_{n:03d}" for n in (1, 2, 3)]
    assert all(i.source_episodes == [i.text[1:10]] for i in listing.items)


@pytest.mark.slow
def test_letta_listing_passes_the_conformance_check() -> None:
    """`lens adapters check` with its gateway: Letta's listing reads only what was ingested,
    the same twice, and nothing of the previous scope after reset."""
    proc = subprocess.run(
        [sys.executable, "-m", "lens", "adapters", "check", "letta", "--options",
         json.dumps(SCRIPTED), "--only", "memory_listing_well_formed"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 0 failed" in proc.stdout


def test_a_model_that_ignores_letta_tools_fails_the_unit_visibly(tmp_path: Path) -> None:
    """Letta refuses a reply without a tool call: the unit fails, and the run says so in its
    exit status, its console, its events, its checklist and its report."""
    proc, out = lens_run(tmp_path, "letta", {"model": "scripted/replay", "model_options": {
        "options": {"replies": [{"text": "Noted."}]}}}, n_episodes=2, timeout_s=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "unit failed: letta|s1|r0" in proc.stderr
    assert "Letta's server refused episode s1_ep_" in proc.stderr
    assert "model must make a tool call" in proc.stderr
    assert "raise max_tokens when the checklist's 'memory model replies cut" in proc.stderr
    assert "lens: exit status 1" in proc.stderr
    assert [e for e in jsonl(out / "events.jsonl") if e["kind"] == "unit_error"]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    row = next(c for c in summary["checklist"] if c["id"] == "failures")
    assert row["status"] == "fail" and "1 unit failure(s)" in row["value"]
    report = (out / "report.md").read_text(encoding="utf-8")
    assert any("**FAIL**" in line and "failed or errored questions" in line
               for line in report.splitlines())


@pytest.mark.slow
@pytest.mark.opt_in
# Letta's system prompt and tool schemas are several thousand tokens a call on a 2-core CPU.
@pytest.mark.timeout(3600)
def test_letta_with_the_local_model(tmp_path: Path) -> None:
    """Opt-in: Letta's agent on the packaged local model, through the gateway."""
    reason = missing_reason("local")
    if reason:
        pytest.skip(reason)
    out = run_gateway_adapter(tmp_path, "letta", {"model": "llama_cpp/default",
                                                  "max_tokens": 256, "max_steps": 3,
                                                  "context_window": 8192},
                              n_episodes=2, timeout_s=1800)
    check_gateway_run(out, "letta", min_chat_calls=2)


# A process that opens the adapter (its Letta server starts), prints the server's pid and waits.
_HOLDER = """
import sys, time
from lens.adapters.letta_adapter import LettaAdapter
from lens.memory.gateway_access import GatewayAccess
adapter = LettaAdapter(ingest="archival", gateway=GatewayAccess(
    base_url="http://127.0.0.1:9/v1", api_key="k" * 16, chat_model="m",
    embedding_model="e", embedding_dim=384))
print(adapter.server.proc.pid, adapter.home, flush=True)
time.sleep(600)
"""


def test_the_letta_server_dies_with_the_process_that_owns_it(tmp_path: Path) -> None:
    """SIGKILL gives the adapter no chance to stop its server: the server notices its standard
    input close and exits by itself."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert holder.stdout is not None
        pid_text, home = holder.stdout.readline().split()
        server = int(pid_text)
        assert _alive(server) and Path(home).is_dir()
    finally:
        holder.kill()
        holder.wait(timeout=30)
    # Polled, so the bound costs nothing when the server goes: one that never noticed its
    # standard input close would stay for good, so the bound only needs to be finite, and
    # 120 s leaves a loaded machine room.
    deadline = time.monotonic() + 120
    while _alive(server) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(server)
    shutil.rmtree(home, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Running, and not a zombie waiting for a parent that may never reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"
