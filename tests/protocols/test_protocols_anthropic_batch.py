"""The judge at batch prices through Anthropic's Message Batches (a ``litellm/anthropic/`` judge
with ``batch: true``), against a loopback server speaking that API's shape: one batch answers
every call at half price, a killed scoring resumes polling the same batch, a failed request
leaves its metric unknown and only it is asked again, and ``lens score`` goes through it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from lens.data.config import JudgeConfig
from lens.scoring.judging.batch_judge import STATE_FILE, BatchJudgeClient, pending_batches
from lens.scoring.scorer import score_run
from tests.protocols.builders import LME_FAITHFUL, imported, lme_verdict, stored_run
from tests.support.fake_anthropic import FakeAnthropic, fake_anthropic, message

__all__ = ["fake_anthropic"]

ROOT = Path(__file__).resolve().parents[2]
PRICE_IN, PRICE_OUT = 1.0, 5.0  # USD per million tokens
MODEL = "litellm/anthropic/claude-haiku-4-5"


def _judge(params: dict[str, Any], fail: set[str] | None = None) -> dict[str, Any]:
    prompt = params["messages"][-1]["content"]
    if fail is not None and not fail:
        fail.add(prompt)
    if fail and prompt in fail:
        return {"type": "error", "error": {"type": "api_error", "message": "overloaded"}}
    reply = (lme_verdict(prompt) if "Model Response: " in prompt
             else json.dumps({"verdict": "TIE", "present": False}))
    return message(reply, input_tokens=1000, output_tokens=2)


def _config(base_url: str, **kw: Any) -> JudgeConfig:
    return JudgeConfig(model=MODEL, base_url=base_url, batch=True, batch_poll_s=0.01,
                       price_input_per_mtok=PRICE_IN, price_output_per_mtok=PRICE_OUT, **kw)


async def _score(run: Path, server: FakeAnthropic, **kw: Any) -> Any:
    client = BatchJudgeClient(_config(server.base_url, **kw), run, api_key="sk-ant-test",
                              collect_s=0.05)
    try:
        return await score_run(run, judge=client, protocol="longmemeval")
    finally:
        await client.aclose()


def _run(tmp_path: Path) -> Path:
    return stored_run(tmp_path, imported(tmp_path, "longmemeval"), {"faithful": LME_FAITHFUL})


@pytest.mark.anyio
async def test_one_message_batch_answers_every_call_at_half_price(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.answer = _judge
    run = _run(tmp_path)
    scores = await _score(run, fake_anthropic)
    assert fake_anthropic.created() == 1
    (batch,) = fake_anthropic.batches.values()
    assert len(batch["requests"]) == 7
    params = batch["requests"][0]["params"]
    # Anthropic's names and shape: the model without its provider, max_tokens set, and the
    # key in x-api-key with the API version.
    assert params["model"] == "claude-haiku-4-5" and params["max_tokens"] > 0
    assert all(m["role"] != "system" for m in params["messages"])
    sent = fake_anthropic.requests[0]
    assert sent.headers["x-api-key"] == "sk-ant-test" and "anthropic-version" in sent.headers
    accuracy = scores.aggregates["adapter"]["faithful"]["longmemeval_accuracy"]
    assert accuracy == pytest.approx(5 / 7)
    state = json.loads((run / STATE_FILE).read_text())["batches"]
    assert state[0]["done"] and state[0]["status"] == "ended"
    list_price = 7 * (1000 * PRICE_IN + 2 * PRICE_OUT) / 1e6
    assert state[0]["cost_list_usd"] == pytest.approx(list_price)
    assert state[0]["cost_batch_usd"] == pytest.approx(list_price / 2)
    assert scores.judge.cost_usd == pytest.approx(list_price / 2)
    # Re-scoring reads the verdicts back: no second batch.
    await _score(run, fake_anthropic)
    assert fake_anthropic.created() == 1


@pytest.mark.anyio
async def test_a_killed_scoring_resumes_polling_the_same_batch(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.answer = _judge
    fake_anthropic.polls_before_done = 10**9
    run = _run(tmp_path)
    first = await _score(run, fake_anthropic, batch_max_wait_s=0.2)
    assert first.aggregates["adapter"]["faithful"]["longmemeval_accuracy"] is None
    (pending,) = pending_batches(run)
    fake_anthropic.polls_before_done = 0
    second = await _score(run, fake_anthropic)
    assert fake_anthropic.created() == 1 and pending_batches(run) == []
    assert pending in fake_anthropic.batches
    assert second.aggregates["adapter"]["faithful"]["longmemeval_accuracy"] == pytest.approx(
        5 / 7)


@pytest.mark.anyio
async def test_a_failed_request_is_unknown_and_only_it_is_asked_again(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    failing: set[str] = set()
    fake_anthropic.answer = lambda params: _judge(params, failing)
    run = _run(tmp_path)
    scores = await _score(run, fake_anthropic)
    assert sum(q.metrics["longmemeval_accuracy"] is None for q in scores.questions) == 1
    assert any("errored" in n for n in scores.notes)
    fake_anthropic.answer = _judge
    again = await _score(run, fake_anthropic)
    assert [len(b["requests"]) for b in fake_anthropic.batches.values()] == [7, 1]
    assert again.aggregates["adapter"]["faithful"]["longmemeval_accuracy"] == pytest.approx(
        5 / 7)


@pytest.mark.anyio
async def test_lens_score_with_an_anthropic_batch_judge_through_the_cli(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.answer = _judge
    run = _run(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["config"]["judge"] = {"model": MODEL, "base_url": fake_anthropic.base_url,
                                   "batch": True, "batch_poll_s": 0.01,
                                   "api_key_env": "LENS_TEST_ANTHROPIC_KEY",
                                   "price_input_per_mtok": PRICE_IN,
                                   "price_output_per_mtok": PRICE_OUT}
    manifest["config"]["scoring"] = {"protocol": "longmemeval"}
    manifest["config"]["cache"] = {"enabled": False}
    (run / "manifest.json").write_text(json.dumps(manifest))
    env = {**os.environ, "LENS_TEST_ANTHROPIC_KEY": "sk-ant-test"}
    r = await anyio.run_process([sys.executable, "-m", "lens", "score", str(run)], cwd=ROOT,
                                env=env, check=False)
    out = r.stdout.decode() + r.stderr.decode()
    assert r.returncode == 0, out
    assert "faithful|multi-session" in out
    assert fake_anthropic.created() == 1
