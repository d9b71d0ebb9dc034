"""API keys and passwords given through the environment or the config never appear in anything
lens writes: run directory, cache, reports, logs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from lens.pipeline import execute
from tests.core.helpers import make_dataset, write_json
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

KEY = "sk-LENSSECRET-0123456789abcdef"
PASSWORD = "pw-LENSSECRET-hunter2"
DSN_PASSWORD = "LENSSECRET-dsnpass"


def agentish(req: RecordedRequest) -> Reply:
    turn = sum(1 for m in req.body["messages"] if m["role"] == "assistant")
    if turn == 0:
        return Reply.tool_call("memory_search", {"query": "widget"})
    return Reply.text("The widget count is 30 [s1_ep_003].")


def test_secrets_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LENS_SECRET_TEST_KEY", KEY)
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=6, checkpoints=(3, 6)))
    with FakeOpenAI(agentish) as server:
        cfg = {
            "name": "secrets",
            "dataset": {"path": str(ds)},
            "adapters": [{"name": "tests.reliability.secret_adapter:SecretHoldingAdapter",
                          "label": "secretive",
                          "options": {"password": PASSWORD,
                                      "dsn": f"postgresql://lens:{DSN_PASSWORD}@127.0.0.1/db"}}],
            "agent": {"model": "openai/fake-model", "base_url": server.base_url,
                      "api_key_env": "LENS_SECRET_TEST_KEY"},
            "judge": {"model": "openai/fake-judge", "base_url": server.base_url,
                      "api_key_env": "LENS_SECRET_TEST_KEY"},
            "cache": {"path": str(tmp_path / "cache" / "models.sqlite")},
            "out_dir": str(tmp_path / "runs"),
        }
        path = tmp_path / "run.yaml"
        path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
        outcome = execute(path)
        # The key really was used on the wire.
        assert any(r.headers.get("authorization") == f"Bearer {KEY}" for r in server.requests)
    assert outcome.summary.answered == 4
    written = [p for p in (tmp_path / "runs").rglob("*") if p.is_file()]
    written += [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert any(p.name == "report.html" for p in written)
    for p in written:
        data = p.read_bytes()
        assert b"LENSSECRET" not in data, p
    out, err = capfd.readouterr()
    assert "LENSSECRET" not in out + err


def test_secret_in_model_options_is_refused(tmp_path: Path) -> None:
    from lens.config import load_config
    from lens.errors import ConfigError

    ds = write_json(tmp_path / "ds.json", make_dataset())
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({
        "dataset": {"path": str(ds)}, "adapters": [{"name": "null"}],
        "agent": {"model": "openai/x", "options": {"api_key": KEY}},
    }), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    message = info.value.render()
    assert "field 'agent.options'" in message and "environment variable" in message
    assert KEY not in message
