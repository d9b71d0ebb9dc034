"""The judge at batch prices, against a loopback fake of the OpenAI Batch API endpoints: a whole
batch, a killed scoring that resumes polling instead of paying twice, partial failure, expiry,
and the batch discount in the cost table."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from aiohttp import web

from lens.data.config import JudgeConfig
from lens.scoring.judging.batch_judge import STATE_FILE, BatchJudgeClient, pending_batches
from lens.scoring.scorer import score_run
from tests.protocols.builders import LME_FAITHFUL, imported, lme_verdict, stored_run

ROOT = Path(__file__).resolve().parents[2]
PRICE_IN, PRICE_OUT = 2.5, 10.0  # USD per million tokens


class FakeBatchAPI:
    """Files and batches in memory. ``mode``: complete | partial | expire | hang."""

    def __init__(self) -> None:
        self.mode = "complete"
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.uploads: list[list[dict[str, Any]]] = []
        self.polls = 0
        self.unauthorised = 0

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        app.router.add_post("/v1/files", self.upload)
        app.router.add_post("/v1/batches", self.create)
        app.router.add_get("/v1/batches/{bid}", self.retrieve)
        app.router.add_get("/v1/files/{fid}/content", self.content)
        return app

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.headers.get("Authorization") != "Bearer test-key":
            self.unauthorised += 1
            return web.json_response({"error": {"message": "bad key"}}, status=401)
        return await handler(request)

    async def upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        assert form["purpose"] == "batch"
        data = form["file"].file.read()  # type: ignore[union-attr]
        fid = f"file-{len(self.files)}"
        self.files[fid] = data
        self.uploads.append([json.loads(line) for line in data.splitlines() if line.strip()])
        return web.json_response({"id": fid, "object": "file", "purpose": "batch"})

    async def create(self, request: web.Request) -> web.Response:
        body = await request.json()
        assert body["endpoint"] == "/v1/chat/completions" and body["completion_window"] == "24h"
        bid = f"batch_{len(self.batches)}"
        self.batches[bid] = {"id": bid, "status": "validating",
                             "input_file_id": body["input_file_id"]}
        return web.json_response(self.batches[bid])

    async def retrieve(self, request: web.Request) -> web.Response:
        self.polls += 1
        b = self.batches[request.match_info["bid"]]
        if b["status"] in ("validating", "in_progress"):
            b["status"] = "in_progress"
            if self.mode != "hang" and self.polls >= 2:
                self._finish(b)
        return web.json_response(b)

    def _finish(self, b: dict[str, Any]) -> None:
        lines = [json.loads(x) for x in self.files[b["input_file_id"]].splitlines() if x.strip()]
        out, err = [], []
        for i, line in enumerate(lines):
            if self.mode == "partial" and i == 0:
                err.append({"custom_id": line["custom_id"], "error": None, "response": {
                    "status_code": 500, "body": {"error": {"message": "server error"}}}})
                continue
            if self.mode == "expire" and i % 2 == 1:
                continue
            prompt = line["body"]["messages"][-1]["content"]
            # lens's own tier-2 judge asks pairwise questions: a tie, whatever the order.
            reply = (lme_verdict(prompt) if "Model Response: " in prompt
                     else json.dumps({"verdict": "TIE", "present": False}))
            out.append({"id": f"r{i}", "custom_id": line["custom_id"], "error": None,
                        "response": {"status_code": 200, "body": {
                            "choices": [{"message": {"role": "assistant", "content": reply},
                                         "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 1000, "completion_tokens": 2}}}})
        b["status"] = "expired" if self.mode == "expire" else "completed"
        for key, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                fid = f"file-{len(self.files)}"
                self.files[fid] = "\n".join(json.dumps(r) for r in rows).encode() + b"\n"
                b[key] = fid

    async def content(self, request: web.Request) -> web.Response:
        return web.Response(body=self.files[request.match_info["fid"]])


@pytest.fixture
async def fake() -> AsyncIterator[tuple[FakeBatchAPI, str]]:
    api = FakeBatchAPI()
    runner = web.AppRunner(api.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield api, f"http://127.0.0.1:{port}/v1"
    await runner.cleanup()


def _config(base_url: str, **kw: Any) -> JudgeConfig:
    return JudgeConfig(model="openai/gpt-4o-2024-08-06", base_url=base_url, batch=True,
                       batch_poll_s=0.01, price_input_per_mtok=PRICE_IN,
                       price_output_per_mtok=PRICE_OUT, **kw)


async def _score(run: Path, base_url: str, **kw: Any) -> Any:
    client = BatchJudgeClient(_config(base_url, **kw), run, api_key="test-key", collect_s=0.05)
    try:
        return await score_run(run, judge=client, protocol="longmemeval")
    finally:
        await client.aclose()


def _run(tmp_path: Path) -> Path:
    return stored_run(tmp_path, imported(tmp_path, "longmemeval"), {"faithful": LME_FAITHFUL})


@pytest.mark.anyio
async def test_one_batch_answers_every_call_at_half_price(tmp_path: Path,
                                                          fake: tuple[FakeBatchAPI, str]) -> None:
    api, url = fake
    run = _run(tmp_path)
    scores = await _score(run, url)
    assert len(api.uploads) == 1 and len(api.uploads[0]) == 7
    assert scores.aggregates["adapter"]["faithful"]["longmemeval_accuracy"] == pytest.approx(5 / 7)
    state = json.loads((run / STATE_FILE).read_text())["batches"]
    assert [b["id"] for b in state] == ["batch_0"] and state[0]["done"]
    list_price = 7 * (1000 * PRICE_IN + 2 * PRICE_OUT) / 1e6
    assert state[0]["cost_list_usd"] == pytest.approx(list_price)
    assert state[0]["cost_batch_usd"] == pytest.approx(list_price / 2)
    # Verdicts land in the run's events like synchronous ones, at the batch price.
    assert scores.judge.cost_usd == pytest.approx(list_price / 2)
    section = json.loads((run / "sections" / "judge_batches.json").read_text())
    costs = next(t for t in section["tables"] if "Batch API" in t["title"])
    assert "50% discount" in costs["title"]
    assert costs["rows"][-1][-2:] == [pytest.approx(list_price), pytest.approx(list_price / 2)]
    # Re-scoring reads the verdicts back: no second batch.
    await _score(run, url)
    assert len(api.uploads) == 1


@pytest.mark.anyio
async def test_a_killed_scoring_resumes_polling_instead_of_paying_twice(
        tmp_path: Path, fake: tuple[FakeBatchAPI, str]) -> None:
    api, url = fake
    api.mode = "hang"
    run = _run(tmp_path)
    first = await _score(run, url, batch_max_wait_s=0.2)
    assert first.aggregates["adapter"]["faithful"]["longmemeval_accuracy"] is None
    assert pending_batches(run) == ["batch_0"]
    assert any("resume polling" in n for n in first.notes)
    api.mode = "complete"
    second = await _score(run, url)
    assert len(api.uploads) == 1  # the same batch, polled again
    assert second.aggregates["adapter"]["faithful"]["longmemeval_accuracy"] == pytest.approx(
        5 / 7)
    assert pending_batches(run) == []


@pytest.mark.anyio
async def test_partial_failure_leaves_one_metric_unknown_and_only_it_is_asked_again(
        tmp_path: Path, fake: tuple[FakeBatchAPI, str]) -> None:
    api, url = fake
    api.mode = "partial"
    run = _run(tmp_path)
    scores = await _score(run, url)
    unknown = [q for q in scores.questions if q.metrics["longmemeval_accuracy"] is None]
    assert len(unknown) == 1
    assert any("HTTP 500" in n for n in scores.notes)
    api.mode = "complete"
    again = await _score(run, url)
    assert [len(u) for u in api.uploads] == [7, 1]
    assert again.aggregates["adapter"]["faithful"]["longmemeval_accuracy"] == pytest.approx(
        5 / 7)


@pytest.mark.anyio
async def test_an_expired_batch_keeps_what_it_finished(tmp_path: Path,
                                                       fake: tuple[FakeBatchAPI, str]) -> None:
    api, url = fake
    api.mode = "expire"
    run = _run(tmp_path)
    scores = await _score(run, url)
    values = [q.metrics["longmemeval_accuracy"] for q in scores.questions]
    assert sum(v is None for v in values) == 3 and sum(v is not None for v in values) == 4
    state = json.loads((run / STATE_FILE).read_text())["batches"][0]
    assert state["status"] == "expired" and state["succeeded"] == 4 and state["failed"] == 3
    assert any("expired" in n for n in scores.notes)


@pytest.mark.anyio
async def test_lens_score_with_judge_batch_through_the_cli(tmp_path: Path,
                                                           fake: tuple[FakeBatchAPI, str]) -> None:
    api, url = fake
    run = _run(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["config"]["judge"] = {"model": "openai/gpt-4o-2024-08-06", "base_url": url,
                                   "batch": True, "batch_poll_s": 0.01,
                                   "api_key_env": "LENS_TEST_BATCH_KEY",
                                   "price_input_per_mtok": PRICE_IN,
                                   "price_output_per_mtok": PRICE_OUT}
    manifest["config"]["scoring"] = {"protocol": "longmemeval"}
    manifest["config"]["cache"] = {"enabled": False}
    (run / "manifest.json").write_text(json.dumps(manifest))
    env = {**os.environ, "LENS_TEST_BATCH_KEY": "test-key"}
    r = await anyio.run_process([sys.executable, "-m", "lens", "score", str(run)], cwd=ROOT,
                                env=env, check=False)
    out = r.stdout.decode() + r.stderr.decode()
    assert r.returncode == 0, out
    assert "faithful|multi-session" in out
    assert len(api.uploads) == 1 and api.unauthorised == 0


@pytest.mark.anyio
async def test_lens_tier2_judge_goes_through_the_batch_too(tmp_path: Path,
                                                           fake: tuple[FakeBatchAPI, str]) -> None:
    api, url = fake
    run = _run(tmp_path)
    client = BatchJudgeClient(_config(url), run, api_key="test-key", collect_s=0.05)
    try:
        scores = await score_run(run, judge=client, tiers={1, 2})
    finally:
        await client.aclose()
    assert len(api.uploads) == 1 and len(api.uploads[0]) > 7
    assert scores.aggregates["adapter"]["faithful"]["answer_quality"] is not None
    assert (run / "sections" / "judge_batches.json").is_file()


@pytest.mark.anyio
async def test_batch_results_land_in_the_model_cache(tmp_path: Path,
                                                     fake: tuple[FakeBatchAPI, str]) -> None:
    from lens.data.config import CacheConfig

    api, url = fake
    cache = CacheConfig(path=tmp_path / "cache.sqlite")
    ds = imported(tmp_path, "longmemeval")
    for name in ("one", "two"):
        run = stored_run(tmp_path, ds, {"faithful": LME_FAITHFUL}, name=name)
        client = BatchJudgeClient(_config(url), run, api_key="test-key", cache=cache,
                                  collect_s=0.05)
        try:
            scores = await score_run(run, judge=client, protocol="longmemeval")
        finally:
            await client.aclose()
        assert scores.aggregates["adapter"]["faithful"]["longmemeval_accuracy"] == \
            pytest.approx(5 / 7)
    # The second run's identical judge calls were answered from the cache: one batch in all.
    assert len(api.uploads) == 1


def test_batch_needs_an_openai_judge_and_its_key(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from lens.core.errors import ConfigError
    from lens.scoring.judging.batch_judge import make_judge_client

    with pytest.raises(ConfigError, match=r"judge\.batch: batch APIs are OpenAI's"):
        make_judge_client(JudgeConfig(model="litellm/claude", batch=True), tmp_path, None)
    monkeypatch.delenv("LENS_NO_SUCH_KEY", raising=False)
    with pytest.raises(ConfigError, match="set the environment variable LENS_NO_SUCH_KEY"):
        make_judge_client(JudgeConfig(model="openai/gpt-4o-mini", batch=True,
                                      api_key_env="LENS_NO_SUCH_KEY"), tmp_path, None)
