"""Model providers are registered: the built-ins by name, others through the
``lens.model_providers`` entry point; an unknown provider is one clear config error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from lens.core import plugins
from lens.core.errors import ConfigError
from lens.data.config import CacheConfig, ModelConfig
from lens.flow.pipeline import execute
from lens.models.base import Completion, CompletionRequest, Message
from lens.models.litellm_backend import LiteLLMClient
from lens.models.openai_backend import OpenAIClient
from lens.models.providers import (
    BUILTIN_PROVIDERS,
    create_backend,
    provider_names,
    resolve_provider,
)
from lens.models.runtime import ModelRuntime
from lens.models.scripted import ScriptedClient
from tests.conftest import ROOT
from tests.core.helpers import make_dataset, write_config, write_json


class EchoClient:
    """A deterministic provider: answers with the last user message."""

    provider = "echo"

    def __init__(self, config: ModelConfig) -> None:
        self.model = config.name
        self.calls = 0

    async def complete(self, request: CompletionRequest) -> Completion:
        self.calls += 1
        last = next(m.content for m in reversed(request.messages) if m.role == "user")
        return Completion(text=f"echo: {last}", provider=self.provider, model=self.model)

    async def aclose(self) -> None:
        return None


class UncachedEchoClient(EchoClient):
    cache_replies = False
    wall_clock_timeout = False


def not_a_client(config: ModelConfig) -> object:
    return object()


NOT_CALLABLE = {"a": 1}
OWN = {plugins.MODEL_PROVIDERS: {"echo": f"{__name__}:EchoClient",
                                 "echo_uncached": f"{__name__}:UncachedEchoClient"}}
REQUEST = CompletionRequest(messages=[Message(role="user", content="hello there")])


def test_the_builtin_providers_resolve_without_importing_each_other() -> None:
    assert {"openai", "litellm", "llama_cpp", "scripted"} <= set(provider_names())
    assert resolve_provider("openai") is OpenAIClient
    # The litellm module imports without litellm itself: its import waits for a call.
    assert resolve_provider("litellm") is LiteLLMClient
    backend = create_backend(ModelConfig(model="scripted/policy"))
    assert isinstance(backend, ScriptedClient) and backend.model == "policy"
    assert set(BUILTIN_PROVIDERS) == {"openai", "litellm", "llama_cpp", "scripted"}


def test_an_unknown_provider_names_itself_and_the_known_ones() -> None:
    with pytest.raises(ConfigError) as err:
        create_backend(ModelConfig(model="opnai/gpt-4o-mini"))
    message = err.value.args[0]
    assert "model 'opnai/gpt-4o-mini': unknown provider 'opnai'" in message
    assert "known: litellm, llama_cpp, openai, scripted" in message
    assert plugins.MODEL_PROVIDERS in message


def test_an_entry_point_provider_runs_in_the_whole_stack(tmp_path: Path, anyio_backend: str
                                                         ) -> None:
    import anyio

    async def twice(runtime: ModelRuntime, model: str) -> tuple[Completion, Completion, Any]:
        client = runtime.client(ModelConfig(model=model))
        out = (await client.complete(REQUEST), await client.complete(REQUEST), runtime.usage())
        await runtime.aclose()
        return out

    with plugins.entry_points_added(OWN):
        assert {"echo", "echo_uncached"} <= set(provider_names())
        runtime = ModelRuntime(cache=CacheConfig(path=tmp_path / "cache.db"))
        first, second, usage = anyio.run(twice, runtime, "echo/v1")
        # The stack caches it by default, and meters it by provider/model.
        assert first.text == "echo: hello there" and first.provider == "echo"
        assert (first.cached, second.cached) == (False, True)
        # No price in the config and none from the provider: the cost is unknown, not free.
        assert first.cost_usd is None
        assert usage["cache"]["misses"] == 1 and usage["cache"]["hits"] == 1
        assert list(usage["by_model"]) == ["echo/v1"]
        # A provider that declares its replies uncacheable is never cached, nor timed.
        runtime = ModelRuntime(cache=CacheConfig(path=tmp_path / "cache2.db"))
        client = runtime.client(ModelConfig(model="echo_uncached/v1"))
        assert client.cache is None and client.timeout_s is None
        anyio.run(runtime.aclose)
    assert "echo" not in provider_names()


def test_a_plugin_cannot_take_over_a_builtin_name() -> None:
    # The adversary: a package that declares "openai" to receive every openai/... config.
    hijack = {plugins.MODEL_PROVIDERS: {"openai": f"{__name__}:EchoClient"}}
    with plugins.entry_points_added(hijack):
        assert resolve_provider("openai") is OpenAIClient


@pytest.mark.parametrize(("target", "expected"), [
    ("no_such_package_xyz.client:Client", "cannot be loaded"),
    (f"{__name__}:NOT_CALLABLE", "is not callable"),
    (f"{__name__}:not_a_client", "not a model client"),
])
def test_a_broken_entry_point_is_a_config_error_naming_it(target: str, expected: str) -> None:
    with plugins.entry_points_added({plugins.MODEL_PROVIDERS: {"broken": target}}), \
            pytest.raises(ConfigError, match=expected) as err:
        create_backend(ModelConfig(model="broken/x"))
    assert "'broken/x'" in err.value.args[0]


def _dataset(tmp_path: Path) -> Path:
    return write_json(tmp_path / "ds.json",
                      make_dataset(n_episodes=4, checkpoints=(2, 4), questions_per_checkpoint=1))


def test_an_unknown_judge_provider_fails_before_anything_is_read(tmp_path: Path) -> None:
    # The dataset does not exist: the provider is checked first, by name alone.
    cfg = write_config(tmp_path / "cfg.yaml", tmp_path / "missing.json", judge={"model": "nope/j"})
    with pytest.raises(ConfigError, match=r"cfg\.yaml: field 'judge\.model': model 'nope/j': "
                                          r"unknown provider 'nope'"):
        execute(cfg)
    assert not (tmp_path / "runs").exists()


def _lens(*args: str, cwd: Path,
          extra_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    paths = [str(extra_path)] if extra_path else []
    paths += [str(ROOT), *filter(None, [env.get("PYTHONPATH")])]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return subprocess.run([sys.executable, "-m", "lens", *args], capture_output=True, text=True,
                          timeout=600, check=False, cwd=cwd, env=env)


def test_lens_run_with_an_unknown_provider_exits_2_with_one_message(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "cfg.yaml", _dataset(tmp_path), agent={"model": "opnai/gpt"})
    done = _lens("run", str(cfg), "--quiet", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"{cfg}: field 'agent.model': model 'opnai/gpt': unknown provider 'opnai'" in lines[0]
    assert "known: litellm, llama_cpp, openai, scripted" in lines[0]
    assert not (tmp_path / "runs").exists()


def test_lens_judge_calibrate_names_an_unknown_judge_provider_before_reading_data(
        tmp_path: Path) -> None:
    done = _lens("judge", "calibrate", str(tmp_path / "missing.json"), "--judge", "nope/x",
                 "--out", str(tmp_path / "cal.json"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "--judge 'nope/x': unknown provider 'nope'" in lines[0]
    assert "missing.json" not in lines[0]
    assert not (tmp_path / "cal.json").exists()


# A provider package as its author would write it: a client class and one entry point.
PROVIDER_MODULE = '''
"""A tiny provider: lens's scripted retrieval policy, answering under its own name."""

from lens.data.config import ModelConfig
from lens.models.base import Completion, CompletionRequest
from lens.models.scripted import ScriptedClient


class TinyClient:
    provider = "tinyprov"

    def __init__(self, config: ModelConfig) -> None:
        self.model = config.name
        self._policy = ScriptedClient.from_config(config.model_copy(update={"options": {}}))
        self._mark = config.options.get("mark", "tiny")

    async def complete(self, request: CompletionRequest) -> Completion:
        out = await self._policy.complete(request)
        text = out.text if out.tool_calls else f"[{self._mark}] {out.text}"
        # The policy is free; this provider does not know its price, the config does.
        return out.model_copy(update={"provider": self.provider, "text": text, "cost_usd": None})

    async def aclose(self) -> None:
        await self._policy.aclose()
'''

PYPROJECT = '''
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "lens-tinyprov-test"
version = "0.1.0"

[tool.setuptools]
py-modules = ["tinyprov_client"]

[project.entry-points."lens.model_providers"]
tinyprov = "tinyprov_client:TinyClient"
'''


def _records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]


def test_an_installed_provider_package_runs_lens_run(tmp_path: Path) -> None:
    project = tmp_path / "tinyprov"
    project.mkdir()
    (project / "tinyprov_client.py").write_text(textwrap.dedent(PROVIDER_MODULE))
    (project / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    site = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "install", "--quiet",
         "--no-deps", "--no-build-isolation", "--target", str(site), str(project)],
        capture_output=True, text=True, timeout=300, check=False)
    assert installed.returncode == 0, installed.stderr
    assert list(site.glob("lens_tinyprov_test-*.dist-info/entry_points.txt"))
    work = tmp_path / "work"  # where the module is importable only as installed
    work.mkdir()
    cfg = write_config(work / "cfg.yaml", _dataset(tmp_path),
                       agent={"model": "tinyprov/policy", "options": {"mark": "tinyprov"},
                              "price_input_per_mtok": 1.0, "price_output_per_mtok": 2.0},
                       cache={"path": str(tmp_path / "cache.db")}, report=False)
    without = _lens("run", str(cfg), "--quiet", cwd=work)
    assert without.returncode == 2 and "unknown provider 'tinyprov'" in without.stderr
    run_dirs = []
    for _ in range(2):
        done = _lens("run", str(cfg), "--quiet", cwd=work, extra_path=site)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "2 answered now" in done.stdout
        run_dirs.append(Path(done.stdout.rsplit("run directory: ", 1)[1].strip()))
    first, second = (_records(d) for d in run_dirs)
    assert [r["status"] for r in first] == ["answered", "answered"]
    for r in first:
        assert r["answer"].startswith("[tinyprov] Based on the retrieved records")
        assert r["cited_refs"], r["answer"]
        assert {c["provider"] for c in r["model_calls"]} == {"tinyprov"}
        assert not any(c["cached"] for c in r["model_calls"])
        # The stack prices the calls from the config's prices.
        assert all(c["cost_usd"] == pytest.approx(
            (c["prompt_tokens"] * 1.0 + c["completion_tokens"] * 2.0) / 1e6)
            for c in r["model_calls"])
    # The stack caches the provider's replies for free: the same run again is all cache hits.
    assert [r["answer"] for r in second] == [r["answer"] for r in first]
    assert all(c["cached"] for r in second for c in r["model_calls"])


def test_one_token_estimate_and_no_production_import_of_the_scripted_double() -> None:
    from lens.core import tokens
    from lens.models import openai_backend, scripted
    from lens.models.stack import estimate_prompt_tokens
    from tests.test_architecture import import_graph

    assert scripted.estimate_tokens is tokens.estimate_tokens
    assert openai_backend.estimate_tokens is tokens.estimate_tokens
    assert [tokens.estimate_tokens(t) for t in ("", "abc", "abcdefgh")] == [0, 1, 2]
    # A prompt spread over messages is estimated from its characters in total.
    request = CompletionRequest(messages=[Message(role="user", content="abc"),
                                          Message(role="user", content="defgh")])
    assert estimate_prompt_tokens(request) == tokens.estimate_chars_tokens(8) == 2
    importers = sorted(m for m, targets in import_graph().items()
                       if "lens.models.scripted" in targets)
    assert importers == []
