"""API keys and passwords given through the environment or the config never appear in anything
lens writes: run directory, cache, reports, logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from lens.flow.pipeline import execute
from tests.core.helpers import make_dataset, write_json
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

KEY = "sk-LENSSECRET-0123456789abcdef"
PASSWORD = "pw-LENSSECRET-hunter2"
DSN_PASSWORD = "LENSSECRET-dsnpass"
ROOT = Path(__file__).resolve().parents[2]


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
    from lens.core.errors import ConfigError
    from lens.data.config import load_config

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


# -- through the real CLI: keys echoed by a provider, a model and an adapter ---------------------

OTHER_KEY = "sk-OTHERSECRET-fedcba9876543210"


def echoing(key: str) -> Callable[[RecordedRequest], Reply]:
    """A provider that echoes the caller's key: in a 401 for question 1, in a retried 500 on
    every first attempt, and in the answer (a model repeating what it saw)."""
    attempts: dict[str, int] = {}

    def respond(req: RecordedRequest) -> Reply:
        prompt = next(m["content"] for m in req.body["messages"] if m["role"] == "user")
        turn = sum(1 for m in req.body["messages"] if m["role"] == "assistant")
        if "(question 1)" in prompt:
            return Reply.error(401, f"Incorrect API key provided: {key}")
        seen = attempts[prompt] = attempts.get(prompt, 0) + 1
        if seen == 1:
            return Reply.error(500, f"upstream rejected key {key}")
        if turn == 0:
            return Reply.tool_call("memory_search", {"query": "widget"})
        return Reply.text(f"The widget count is 30 [s1_ep_010]; my key is {key}.")

    return respond


@pytest.mark.parametrize("isolation", ["none", "process"])
def test_secrets_never_leave_through_the_cli(tmp_path: Path, isolation: str) -> None:
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=6, checkpoints=(3, 6)))
    env = {**os.environ, "LENS_SECRET_TEST_KEY": KEY, "OPENAI_API_KEY": OTHER_KEY,
           "LENS_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with FakeOpenAI(echoing(KEY)) as server:
        host = server.base_url.removeprefix("http://")
        cfg = {
            "name": "secrets",
            "dataset": {"path": str(ds)},
            "adapters": [{"name": "tests.reliability.secret_adapter:SecretHoldingAdapter",
                          "label": "secretive", "isolation": isolation,
                          "options": {"password": PASSWORD,
                                      "dsn": f"postgresql://lens:{DSN_PASSWORD}@127.0.0.1/db"}}],
            "agent": {"model": "openai/fake-model", "base_url": f"http://{host}",
                      "api_key_env": "LENS_SECRET_TEST_KEY", "max_retries": 2},
            # An isolated adapter's process prints to lens's terminal: it scrubs too.
            "out_dir": "runs", "repeats": 2,
        }
        (tmp_path / "run.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
        runs = []
        # --quiet first: its run makes the calls (and retries); the second replays the cache.
        for extra in (["--quiet"], []):
            # Retry notices are logged at info level, to stderr.
            res = subprocess.run([sys.executable, "-m", "lens", "--log-level", "info", "run",
                                  "run.yaml", *extra],
                                 capture_output=True, text=True, cwd=tmp_path, env=env,
                                 timeout=300)
            # Question 1 errors (the 401) in both repeats: a quarter of the arm, so the run
            # failed its purpose; the key is masked in the reasons like everywhere else.
            assert res.returncode == 1, res.stderr
            assert "exit status 1" in res.stderr
            assert "LENSSECRET" not in res.stdout + res.stderr and "OTHERSECRET" not in \
                res.stdout + res.stderr
            runs.append(res)
        # The retry log line is printed, with the key masked.
        assert "upstream rejected key ***" in runs[0].stdout + runs[0].stderr
        assert any(r.headers.get("authorization") == f"Bearer {KEY}" for r in server.requests)
        run_dir = next((tmp_path / "runs").iterdir())
        report = subprocess.run([sys.executable, "-m", "lens", "report", str(run_dir)],
                                capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
        assert report.returncode == 0 and "LENSSECRET" not in report.stdout + report.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "run.yaml"]
    names = {p.name for p in written}
    assert {"questions.csv", "report.html", "report.md", "summary.json", "manifest.json",
            "scores.json"} <= names
    record_files = sorted(run_dir.glob("records*.jsonl"))
    assert len(record_files) == 1
    assert any(p.parent.name == "errors" for p in written)
    assert any(p.name.startswith("models.sqlite") for p in written)
    for p in written:
        data = p.read_bytes()
        assert b"LENSSECRET" not in data and b"OTHERSECRET" not in data, p
    records = "".join(p.read_text(encoding="utf-8") for p in record_files)
    assert "Incorrect API key provided: ***" in records  # the error is kept, the key is not
    assert "my key is ***" in records


def test_base_url_password_is_masked_in_the_usage_key(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.fake_openai import agent_responder

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=4, checkpoints=(4,)))
    with FakeOpenAI(agent_responder()) as server:
        host = server.base_url.removeprefix("http://")
        path = tmp_path / "run.yaml"
        path.write_text(yaml.safe_dump({
            "dataset": {"path": str(ds)}, "adapters": [{"name": "sqlite_fts"}],
            "agent": {"model": "openai/m", "base_url": f"http://lens:{PASSWORD}@{host}"},
            "out_dir": str(tmp_path / "runs"), "cache": {"enabled": False}}), encoding="utf-8")
        outcome = execute(path)
    assert outcome.summary.answered == 2
    manifest = (outcome.run_dir / "manifest.json").read_text(encoding="utf-8")
    assert "http://lens:***@127.0.0.1" in manifest  # in the config and in the usage key
    assert "LENSSECRET" not in manifest


def test_scrub_registry_masks_every_written_form() -> None:
    from lens.core.redact import MASK, register_env_secrets, register_secret, scrub, scrub_bytes

    quoted = 'LENSSECRET"quoted\\key'
    register_secret(quoted)
    text = json.dumps({"error": f"bad key {quoted}"})
    assert "LENSSECRET" not in scrub(text) and MASK in scrub(text)
    assert b"LENSSECRET" not in scrub_bytes(text.encode())
    register_secret("short")  # too short to scrub without mangling ordinary words
    assert scrub("a short answer") == "a short answer"
    register_env_secrets({"MY_SERVICE_TOKEN": "tok-LENSSECRET-123456", "HOME": "/home/someone"})
    assert scrub("tok-LENSSECRET-123456 at /home/someone") == f"{MASK} at /home/someone"


def test_scrub_chunks_masks_as_the_whole_bytes() -> None:
    """A file scrubbed piece by piece (``lens export`` streams the run's files) gives the bytes
    scrubbing it whole gives, whatever the cuts: a secret across a chunk boundary is masked."""
    import random

    from lens.core.redact import _Registry

    registry = _Registry()
    for value in ("LENSSECRET-aaaaaaaa", "LENSSECRET-aaaaaaaa-longer-form", "zz-LENSSECRET-ü-9"):
        registry.add(value)
    rng = random.Random(5)
    pieces = ["LENSSECRET-aaaaaaaa", "LENSSECRET-aaaaaaaa-longer-form", "zz-LENSSECRET-ü-9",
              "LENSSECRET-", "aaaa", "x", "\n", "zz-", "ü"]
    for _ in range(200):
        data = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))).encode()
        cuts = sorted(rng.randint(0, len(data)) for _ in range(rng.randint(0, 6)))
        chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        assert b"".join(registry.scrub_chunks(chunks)) == registry.scrub_bytes(data)
    assert list(_Registry().scrub_chunks([b"ab", b"c"])) == [b"ab", b"c"]
