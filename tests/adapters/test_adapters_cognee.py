"""Cognee through lens's model gateway: really Cognee (its add and cognify pipelines, graph and
summary extraction, its CHUNKS search) on its embedded SQLite, LanceDB and Kuzu stores, with
the scripted model behind the gateway in CI (one canned reply per structured-output step, matched
by the response schema Cognee asks for) and the local model on request."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from pydantic import ValidationError

from lens.adapters import cognee_adapter
from lens.adapters.cognee_adapter import CogneeOptions
from lens.core.errors import ConfigError
from lens.data.config import AdapterConfig
from lens.memory.executor import runs_isolated
from lens.memory.gateway_access import GatewayAccess
from lens.runner.memory_states import load_listings
from tests.adapters.gateway_run import check_gateway_run, run_gateway_adapter, search_hits
from tests.conftest import ROOT
from tests.support.extras import missing_reason, skip_module_unless

skip_module_unless("cognee")

GRAPH = {"nodes": [{"id": "widget line", "name": "Widget line", "type": "Product",
                    "description": "The line whose widgets are counted"},
                   {"id": "plant 7", "name": "Plant 7", "type": "Place",
                    "description": "Where the widgets are counted"}],
         "edges": [{"source_node_id": "widget line", "target_node_id": "plant 7",
                    "relationship_name": "counted_at"}]}
RULES = [
    {"schema": "KnowledgeGraph", "text": json.dumps(GRAPH)},
    {"schema": "SummarizedContent", "text": json.dumps({"summary": "A day report.",
                                                        "description": "Widget counts."})},
]


def test_cognee_through_lens_run_with_the_scripted_model(tmp_path: Path) -> None:
    fixture = tmp_path / "cognee.yaml"
    fixture.write_text(yaml.safe_dump({"rules": RULES, "default": "{}"}), encoding="utf-8")
    home, stores = tmp_path / "home", tmp_path / "stores"
    home.mkdir()
    out = run_gateway_adapter(tmp_path, "cognee",
                              {"model": f"scripted/{fixture}", "path": str(stores)},
                              env={"HOME": str(home)})
    # A knowledge graph and a summary for each episode's one chunk, plus the embeddings.
    got = check_gateway_run(out, "cognee", min_chat_calls=2 * 4,
                            synthetic_refs=False)
    hits = search_hits(got["records"])
    assert hits
    for hit in hits:
        # Each hit is a chunk of an episode's own text, cited as that episode's chunk.
        episode_id, _, chunk = hit["ref_id"].partition("#")
        assert re.fullmatch(r"s1_ep_\d{3}", episode_id) and str(uuid.UUID(chunk)) == chunk
        assert hit["text"].startswith(f"[{episode_id}] ") and "Day report" in hit["text"], hit
    cited = {c for r in got["records"] for c in r["cited_refs"]}
    assert cited and all(c.partition("#")[0].startswith("s1_ep_") for c in cited)
    # Cognee's stores are files in the unit's folder (SQLite; per dataset LanceDB and Kuzu,
    # which Cognee names .pkl); nothing went to the home folder.
    databases = stores / "system" / "databases"
    assert (databases / "cognee_db").is_file()
    assert any(databases.rglob("*.lance.db")) and any(databases.rglob("*.pkl"))
    assert [p for p in home.rglob("*") if not p.is_dir()] == []
    # Cognee's own listing of its graph, read by lens once `prepare` returned: each episode's
    # chunk and its summary from that episode, the two entities found in every chunk and the
    # relation between them.
    [listing] = [line.listing for line in load_listings(out).values()]
    ingested = [f"s1_ep_{n:03d}" for n in range(1, 5)]
    chunks = sorted((i for i in listing.items if i.text.startswith("[s1_ep_")),
                    key=lambda i: i.text)
    assert [c.source_episodes for c in chunks] == [[e] for e in ingested]
    assert all(c.text.startswith(f"[{c.source_episodes[0]}] ") for c in chunks)
    summaries = [i for i in listing.items if i.text == "A day report."]
    assert sorted(s for i in summaries for s in i.source_episodes) == ingested
    entities = {i.text: i.source_episodes for i in listing.items if ": " in i.text
                and not i.text.startswith("[")}
    assert entities == {"widget line: The line whose widgets are counted": ingested,
                        "plant 7: Where the widgets are counted": ingested}
    relations = [i for i in listing.items if i.text == "widget line counted_at plant 7"]
    assert len(relations) == 1 and relations[0].source_episodes == ingested
    assert len(listing.items) == len(chunks) + len(summaries) + len(entities) + 1
    assert all(i.changed_at is not None for i in listing.items)


@pytest.mark.slow
def test_cognee_reset_forgets_the_previous_scope(tmp_path: Path) -> None:
    """Cognee's prune at reset: nothing of a scope is found, retrieved or listed after a reset
    to another (the conformance checks, through `lens adapters check` and the gateway)."""
    fixture = tmp_path / "cognee.yaml"
    fixture.write_text(yaml.safe_dump({"rules": RULES, "default": "{}"}), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "lens", "adapters", "check", "cognee", "--options",
         json.dumps({"model": f"scripted/{fixture}"}), "--only", "reset_isolates_scopes",
         "--only", "memory_listing_well_formed"],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "2 passed, 0 failed" in proc.stdout


def test_cognee_gets_a_process_of_its_own_unless_told_otherwise() -> None:
    assert runs_isolated(AdapterConfig(name="cognee"))
    assert not runs_isolated(AdapterConfig(name="cognee", isolation="none"))
    assert not runs_isolated(AdapterConfig(name="graphiti"))


@pytest.mark.parametrize(("options", "field"), [
    ({"structured_output": "tools"}, "structured_output"),
    ({"max_results": 0}, "max_results"),
    ({"chunk_tokens": 4}, "chunk_tokens"),
    ({"chunk_tokens": 512}, "chunk_tokens"),
    ({"model": "gpt-4o"}, "model"),
    ({"chunk_size": 100}, "chunk_size"),
])
def test_cognee_options_name_the_bad_field(options: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as exc:
        CogneeOptions.model_validate(options)
    assert [e["loc"][0] for e in exc.value.errors()] == [field]


def test_a_second_cognee_in_one_process_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cognee's configuration is process-wide: a second live instance would share the first's
    stores and gateway key, so it is refused (before Cognee is touched) with the way out."""
    monkeypatch.setattr(cognee_adapter, "_live", [SimpleNamespace(closed=False)])
    access = GatewayAccess(base_url="http://127.0.0.1:9/v1", api_key="k" * 16,
                           chat_model="scripted/replay", embedding_model="all-MiniLM-L6-v2",
                           embedding_dim=384)
    with pytest.raises(ConfigError, match=r"needs a process of its own.*isolation"):
        cognee_adapter.CogneeAdapter(gateway=access)


@pytest.mark.slow
@pytest.mark.opt_in
# Two model calls per episode on a 2-core CPU: a busy machine can take past 900 s.
@pytest.mark.timeout(3600)
def test_cognee_with_the_local_model(tmp_path: Path) -> None:
    """Opt-in: Cognee's graph and summary prompts on the packaged local model, held to Cognee's
    JSON schemas by the gateway (two calls and about a minute per episode on 2 cores)."""
    reason = missing_reason("local")
    if reason:
        pytest.skip(reason)
    out = run_gateway_adapter(tmp_path, "cognee",
                              {"model": "llama_cpp/default", "max_tokens": 1024},
                              n_episodes=2, timeout_s=1800)
    check_gateway_run(out, "cognee", min_chat_calls=2 * 2, synthetic_refs=False)


def test_cognee_is_configured_to_send_its_output_limit() -> None:
    """Cognee's structured-output calls pass only its ``llm_args`` to the endpoint: the output
    limit has to be there, or the gateway's default cuts a knowledge graph off at 512 tokens
    (measured with the 1.5B model on the quickstart's first episode; with the limit in
    ``llm_args`` the same request ran to the 1,536 tokens asked for). This checks the settings
    Cognee is given and that Cognee's own config class keeps them."""
    access = GatewayAccess(base_url="http://127.0.0.1:9/v1", api_key="k" * 16,
                           chat_model="scripted/replay", embedding_model="all-MiniLM-L6-v2",
                           embedding_dim=384)
    config = cognee_adapter.llm_config(access, CogneeOptions(max_tokens=1536))
    assert config["llm_args"] == {"max_tokens": 1536}
    assert config["llm_max_completion_tokens"] == 1536
    # Cognee accepts the settings as they are, llm_args included. In a process of its own:
    # importing Cognee starts its logging, which would outlive this test in pytest's process.
    check = ("import json, sys\n"
             "from cognee.infrastructure.llm.config import LLMConfig\n"
             "print(json.dumps(LLMConfig(**json.loads(sys.argv[1])).llm_args))")
    proc = subprocess.run([sys.executable, "-c", check, json.dumps(config)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"max_tokens": 1536}
