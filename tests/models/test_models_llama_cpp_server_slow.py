"""lens against llama.cpp's own OpenAI-compatible server, ``llama-server --jinja``, serving the
quickstart model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M) on loopback with the ``openai`` provider:
the server row of docs/models.md's table, measured rather than read from templates.

Whatever the model does, every question ends as ``answered`` (with at least one tool call),
``no_memory`` (text without any tool call), ``empty_answer`` or ``error``, and the checklist
and the console count the unconsulted answers. With ``agent.min_tool_rounds: 1`` lens sends
``tool_choice: "required"`` on the first turn (the openai provider's default), or, with the
model option ``tool_choice_required: false``, reminds the model once instead.

``llama-server`` is not a Python package: the test runs when it is on PATH and skips otherwise.
It builds from the llama.cpp source inside the llama-cpp-python sdist (many minutes on 2 cores)::

    pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36
    tar xzf llama_cpp_python-0.3.36.tar.gz
    cmake -S llama_cpp_python-0.3.36/vendor/llama.cpp -B build -DGGML_NATIVE=OFF \\
        -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF
    cmake --build build --target llama-server -j 2     # then put build/bin on PATH

Slow: a real model over real HTTP."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lens.data.prompts import TOOL_REMINDER
from tests.support.servers import free_port, serving

pytestmark = [pytest.mark.slow, pytest.mark.local_model]

ROOT = Path(__file__).resolve().parents[2]
MODEL = "qwen2.5-coder-1.5b"
# Few: on 2 shared cores the model writes about a token a second.
QUESTIONS = 2
BUILD = ("build it from the llama.cpp source in the llama-cpp-python sdist and put it on PATH "
         "(see this module's docstring)")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = shutil.which("llama-server")
    if binary is None:
        pytest.skip(f"llama-server is not on PATH; {BUILD}")
    from lens.models.local_models import LOCAL_MODELS, resolve_model_path

    try:
        path, _ = resolve_model_path(MODEL)
    except Exception as exc:
        pytest.skip(f"local model {MODEL} unavailable: {exc} ({LOCAL_MODELS[MODEL].pip_command()})")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with serving([binary, "-m", str(path), "--jinja", "--host", "127.0.0.1", "--port", str(port),
                  "-c", "8192", "-np", "1", "-t", "2"], f"{base}/health",
                 tmp_path_factory.mktemp("llama-server") / "server.log", "llama-server", 300):
        yield f"{base}/v1"


def run_lens(server: str, tmp_path: Path, agent: dict[str, Any], questions: int = QUESTIONS
             ) -> tuple[subprocess.CompletedProcess[str], list[dict], dict]:
    data = json.loads((ROOT / "datasets" / "quickstart.json").read_text())
    data["questions"] = data["questions"][:questions]
    dataset = tmp_path / "questions.json"
    dataset.write_text(json.dumps(data))
    cfg = {"name": "llama-server", "dataset": {"path": str(dataset)},
           "adapters": [{"name": "sqlite_fts", "options": {"max_results": 3,
                                                          "snippet_chars": 240}}],
           "agent": {"model": "openai/qwen2.5-coder-1.5b", "base_url": server,
                     "max_tokens": 120, "timeout_s": 1800, "max_retries": 0, **agent,
                     "budget": {"max_turns": 4, "max_tool_calls": 2, "max_payload_bytes": 4000,
                                "max_agent_tokens": 30000, "max_seconds": 3600}},
           "cache": {"enabled": False}, "out_dir": str(tmp_path / "runs"),
           "concurrency": {"units": 1, "questions": 1}}
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(cfg))
    res = subprocess.run([sys.executable, "-m", "lens", "run", str(config)], cwd=ROOT,
                         capture_output=True, text=True, timeout=3600, check=False)
    assert res.returncode != 2, res.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    records = [json.loads(ln) for ln in (run_dir / "records.jsonl").read_text().splitlines()]
    summary = json.loads((run_dir / "summary.json").read_text())
    return res, records, summary


def tally(records: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in records:
        out[r["status"]] = out.get(r["status"], 0) + 1
    return out


def check_statuses(records: list[dict], summary: dict, stdout: str) -> None:
    assert len(records) == QUESTIONS
    for r in records:
        assert r["status"] in ("answered", "no_memory", "empty_answer", "error"), r.get("error")
        if r["status"] == "no_memory":
            assert r["answer"].strip() and not r["tool_calls"]
        if r["status"] == "answered":
            assert r["tool_calls"], "an answer without a tool call must be no_memory"
    unconsulted = sum(r["status"] == "no_memory" for r in records)
    check = next(c for c in summary["checklist"] if c["id"] == "no_memory")
    assert check["value"].startswith(f"{unconsulted} of {QUESTIONS}")
    assert (check["status"] == "pass") == (unconsulted == 0)
    if unconsulted:
        assert f"{unconsulted} answered without memory" in stdout
        assert check["failing"] == ["sqlite_fts"]


@pytest.mark.parametrize("agent", [
    pytest.param({"min_tool_rounds": 1}, id="min_tool_rounds-required"),
    pytest.param({}, id="tool_choice-auto"),
    pytest.param({"min_tool_rounds": 1, "options": {"tool_choice_required": False}},
                 id="min_tool_rounds-reminder"),
])
def test_llama_server_answers_are_classified_and_counted(server: str, tmp_path: Path,
                                                         agent: dict[str, Any]) -> None:
    res, records, summary = run_lens(server, tmp_path, agent)
    check_statuses(records, summary, res.stdout)
    reminded = sum(any(m["role"] == "user" and m["content"] == TOOL_REMINDER
                       for m in r["transcript"]) for r in records)
    if not agent.get("min_tool_rounds"):
        assert reminded == 0
    elif agent.get("options", {}).get("tool_choice_required") is False:
        # A reminder goes to every question whose first reply called no tool.
        first_without_call = sum(
            not next(m for m in r["transcript"] if m["role"] == "assistant").get("tool_calls")
            for r in records if r["status"] != "error")
        assert reminded == first_without_call
    # What was measured, for docs/models.md's server table (pytest -s shows it).
    print(f"\nllama-server --jinja, {json.dumps(agent)}: {tally(records)}; "
          f"{sum(len(r['tool_calls']) for r in records)} tool calls; {reminded} reminded")
