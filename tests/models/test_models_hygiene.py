"""Process hygiene: logs go to stderr through one configured logger with `lens --log-level`,
every cache lives under the one cache folder (LENS_CACHE_DIR), and no module leaves the process
environment changed."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import structlog

from lens.core import logs
from lens.core.envscope import environment
from tests.core.helpers import make_dataset, write_config, write_json
from tests.support.fake_openai import FakeOpenAI, Reply, agent_responder

ROOT = Path(__file__).resolve().parents[2]


def run_cli(args: list[str], env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **env_extra}
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)


@pytest.mark.parametrize("level,shown", [("info", True), ("warning", False)])
def test_retry_notices_go_to_stderr_never_stdout(tmp_path: Path, level: str,
                                                 shown: bool) -> None:
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=3, checkpoints=(3,),
                                                       questions_per_checkpoint=1))
    with FakeOpenAI(agent_responder()) as server:
        server.script(Reply.error(503, "try again", retry_after_ms=10))
        cfg = write_config(tmp_path / "run.yaml", ds,
                           agent={"model": "openai/fake-model", "base_url": server.base_url},
                           cache={"enabled": False}, scoring={"enabled": False}, report=False)
        done = run_cli(["--log-level", level, "run", str(cfg), "--quiet"],
                       {"LENS_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    assert "model call retry" not in done.stdout
    assert ("model call retry" in done.stderr) is shown, done.stderr


def test_an_unknown_log_level_is_a_usage_error(tmp_path: Path) -> None:
    done = run_cli(["--log-level", "chatty", "smoke"], {"LENS_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 2
    assert "--log-level" in done.stderr and "chatty" in done.stderr


def test_configure_routes_structlog_to_the_stream(capsys: pytest.CaptureFixture[str]) -> None:
    stream = io.StringIO()
    try:
        logs.configure("info", stream)
        logs.configure("info", stream)  # again: still one handler, one line per message
        structlog.get_logger("lens.models").info("model call retry", attempt=1)
        structlog.get_logger("lens.models").debug("hidden detail")
    finally:
        logs.configure()
    assert stream.getvalue().count("model call retry") == 1
    assert "hidden detail" not in stream.getvalue()
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="log level must be one of"):
        logs.configure("loud")


def test_every_cache_lives_under_lens_cache_dir(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from lens.adapters.embedder import default_cache_path as embedding_cache
    from lens.models.cache import default_cache_path as model_cache
    from lens.models.local_models import default_cache_dir

    monkeypatch.setenv("LENS_CACHE_DIR", str(tmp_path / "c"))
    assert model_cache().parent == tmp_path / "c"
    assert embedding_cache() == tmp_path / "c" / "embeddings.sqlite"
    assert default_cache_dir() == tmp_path / "c"


def test_the_vector_adapter_writes_its_embeddings_under_lens_cache_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lens.adapters.embedder import Embedder

    monkeypatch.setenv("LENS_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert Embedder().cache_path == tmp_path / "c" / "embeddings.sqlite"


def test_environment_scope_restores_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LENS_TEST_KEPT", "user")
    monkeypatch.delenv("LENS_TEST_ADDED", raising=False)
    before = dict(os.environ)
    with environment(LENS_TEST_KEPT="lens", LENS_TEST_ADDED="lens"):
        assert os.environ["LENS_TEST_KEPT"] == "user"  # the user's value wins
        assert os.environ["LENS_TEST_ADDED"] == "lens"
    assert dict(os.environ) == before


def test_litellm_prices_and_import_leave_the_environment_alone() -> None:
    from lens.models.pricing import litellm_pricing

    before = dict(os.environ)
    price = litellm_pricing("gpt-4o-mini")
    assert dict(os.environ) == before
    pytest.importorskip("litellm")
    assert price is not None and price.input_per_mtok > 0
    from lens.models.litellm_backend import import_litellm

    import_litellm()
    assert dict(os.environ) == before


def test_no_module_writes_the_environment() -> None:
    """Only lens.core.envscope may touch os.environ: it restores what it set, but for the
    settings an adapter in a process of its own keeps for that process (keep_for_process)."""
    write = re.compile(r"os\.environ\[[^]]+\]\s*=|os\.environ\.(setdefault|update|pop)\(|"
                       r"os\.putenv|os\.unsetenv|del os\.environ")
    offenders = []
    for folder in ("lens", "adapters", "goldevidence", "bench"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "envscope.py":
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if write.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{n}")
    assert offenders == []


def test_as_a_library_lens_logs_never_reach_stdout() -> None:
    """Without the CLI (nobody configured logging), lens's messages still go through stdlib
    logging: warnings to stderr, nothing to stdout, where structlog's own default prints."""
    code = ("from lens.models.retry import log\n"
            "log.info('model call retry', attempt=1)\n"
            "log.warning('a warning', detail=2)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "a warning" in done.stderr and "model call retry" not in done.stderr
