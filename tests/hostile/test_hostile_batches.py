"""Hostile batch servers through ``lens score``: a ``results_url`` that only starts like the base
URL never receives the key, a batch id that is a path writes nothing outside the run, and
malformed results after the batch was paid leave those verdicts unknown with the run kept."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lens.scoring.judging.batch_judge import STATE_FILE
from tests.protocols.builders import LME_FAITHFUL, imported, lme_verdict, stored_run
from tests.support.cli import Lens, cli_runner
from tests.support.fake_anthropic import FakeAnthropic, message

MODEL = "litellm/anthropic/claude-haiku-4-5"
KEY = "sk-ant-hostile-secret-0123456789"


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    monkeypatch.setenv("LENS_TEST_ANTHROPIC_KEY", KEY)
    return cli_runner(tmp_path, monkeypatch, capsys)


def _judge(params: dict[str, Any]) -> dict[str, Any]:
    prompt = params["messages"][-1]["content"]
    reply = (lme_verdict(prompt) if "Model Response: " in prompt
             else json.dumps({"verdict": "TIE", "present": False}))
    return message(reply, input_tokens=1000, output_tokens=2)


def _run(tmp_path: Path, base_url: str) -> Path:
    run = stored_run(tmp_path / "runs", imported(tmp_path, "longmemeval"),
                     {"faithful": LME_FAITHFUL})
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["config"]["judge"] = {"model": MODEL, "base_url": base_url, "batch": True,
                                   "batch_poll_s": 0.01, "batch_max_wait_s": 30,
                                   "api_key_env": "LENS_TEST_ANTHROPIC_KEY",
                                   "price_input_per_mtok": 1.0, "price_output_per_mtok": 5.0}
    manifest["config"]["scoring"] = {"protocol": "longmemeval"}
    manifest["config"]["cache"] = {"enabled": False}
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def _accuracy(run: Path) -> Any:
    scores = json.loads((run / "scores.json").read_text())
    return scores["aggregates"]["adapter"]["faithful"]["longmemeval_accuracy"]


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


# -- 1. a results_url that merely starts with the base URL is not followed with the key --------

@pytest.mark.parametrize("shape", ["port", "userinfo"])
def test_results_url_on_another_origin_never_gets_the_key(tmp_path: Path, lens: Lens,
                                                          shape: str) -> None:
    with FakeAnthropic(answer=_judge) as real, FakeAnthropic(answer=_judge) as evil:
        evil_port = evil.base_url.rsplit(":", 1)[1]
        if shape == "port":
            # The real base is a prefix of a longer URL: only the userinfo trick reaches another
            # port on loopback, so the "port" shape appends the port as userinfo's password.
            real.results_url = lambda bid: f"{real.base_url}0@127.0.0.1:{evil_port}/r/{bid}"
        else:
            real.results_url = lambda bid: (f"{real.base_url}@127.0.0.1:{evil_port}"
                                            f"/v1/messages/batches/{bid}/results")
        run = _run(tmp_path, real.base_url)
        r = lens("score", str(run))
        assert r.returncode == 0, r.stdout + r.stderr
        assert not evil.requests, "the API key went to another origin"
        assert _accuracy(run) == pytest.approx(5 / 7)


# -- 2. a batch id from the server never becomes a path outside the run ------------------------

@pytest.mark.parametrize("hostile", ["absolute", "dotdot"])
def test_a_batch_id_that_is_a_path_writes_nothing_outside_the_run(tmp_path: Path, lens: Lens,
                                                                  hostile: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    bid = str(outside / "evil") if hostile == "absolute" else "../../../outside/evil"
    with FakeAnthropic(answer=_judge) as server:
        server.batch_id = lambda: bid
        run = _run(tmp_path, server.base_url)
        before = _files(tmp_path) - _files(run)
        r = lens("score", str(run))
        out = r.stdout + r.stderr
        assert r.returncode in (0, 1), out
        assert "Traceback" not in out
        assert not list(outside.iterdir())
        assert _files(tmp_path) - _files(run) - before <= {p for p in _files(tmp_path)
                                                            if "cache" in p.parts}
        assert _accuracy(run) is None  # the batch could not be read: those verdicts unknown
        assert "batch id" in out


def test_an_edited_batch_state_naming_a_path_is_not_read(tmp_path: Path, lens: Lens) -> None:
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"custom_id": "x", "result": {"type": "succeeded"}}\n')
    with FakeAnthropic(answer=_judge) as server:
        run = _run(tmp_path, server.base_url)
        (run / STATE_FILE).write_text(json.dumps({"batches": [
            {"id": str(tmp_path / "secret"), "custom_ids": ["x"], "done": True}]}))
        r = lens("score", str(run))
        out = r.stdout + r.stderr
        assert r.returncode == 2, out
        assert "Traceback" not in out and STATE_FILE in out


# -- 12. malformed results after payment: those verdicts unknown, the run kept ------------------

def _lines(make: Callable[[str], Any]) -> Callable[[list[dict[str, Any]]], bytes]:
    def raw(requests: list[dict[str, Any]]) -> bytes:
        out = []
        for r in requests:
            made = make(r["custom_id"])
            out.append(made if isinstance(made, bytes) else json.dumps(made).encode())
        return b"\n".join(out) + b"\n"
    return raw


MALFORMED: dict[str, Callable[[str], Any]] = {
    "usage_words": lambda cid: {"custom_id": cid, "result": {"type": "succeeded", "message": {
        "content": [{"type": "text", "text": "CORRECT"}],
        "usage": {"input_tokens": "many", "output_tokens": 2}}}},
    "result_string": lambda cid: {"custom_id": cid, "result": "succeeded"},
    "error_string": lambda cid: {"custom_id": cid, "result": {"type": "errored",
                                                              "error": "boom"}},
    "content_parts_strings": lambda cid: {"custom_id": cid, "result": {
        "type": "succeeded", "message": {"content": ["CORRECT"]}}},
    "deep": lambda cid: (b'{"custom_id": "' + cid.encode() + b'", "result": '
                         + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    "huge_usage": lambda cid: {"custom_id": cid, "result": {"type": "succeeded", "message": {
        "content": [{"type": "text", "text": "x"}],
        "usage": {"input_tokens": -5, "output_tokens": 1e300}}}},
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_batch_results_leave_verdicts_unknown(tmp_path: Path, lens: Lens,
                                                        kind: str) -> None:
    with FakeAnthropic(answer=_judge) as server:
        server.raw_results = _lines(MALFORMED[kind])
        run = _run(tmp_path, server.base_url)
        r = lens("score", str(run))
        out = r.stdout + r.stderr
        assert "Traceback" not in out, out
        assert r.returncode in (0, 1), out
        assert (run / "scores.json").is_file() and _accuracy(run) is None
        state = json.loads((run / STATE_FILE).read_text())["batches"]
        assert state[0]["done"] and state[0]["succeeded"] == 0


# -- 6. lens run with judge.batch batches its judge calls too ----------------------------------

def test_lens_run_with_a_batch_judge_sends_its_calls_in_batches(tmp_path: Path, lens: Lens) -> None:
    from tests.cli.runs import write_config

    with FakeAnthropic(answer=lambda _p: message('{"score": 1}')) as server:
        judge = {"model": MODEL, "base_url": server.base_url, "batch": True,
                 "batch_poll_s": 0.01, "api_key_env": "LENS_TEST_ANTHROPIC_KEY",
                 "price_input_per_mtok": 1.0, "price_output_per_mtok": 5.0}
        cfg = write_config(tmp_path, "b", ["sqlite_fts"], judge=judge,
                           cache={"enabled": False})
        r = lens("run", str(cfg), "--quiet", "--limit", "3", "--fail-on", "never")
        out = r.stdout + r.stderr
        assert r.returncode == 0, out
        assert server.created() >= 1, [x.path for x in server.requests]
        assert not [x for x in server.requests if x.path.rstrip("/").endswith("/messages")]
        (run,) = (tmp_path / "runs").iterdir()
        assert json.loads((run / STATE_FILE).read_text())["batches"][0]["done"]


def test_lens_run_with_a_batch_judge_and_no_key_answers_nothing(
        tmp_path: Path, lens: Lens, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.cli.runs import write_config

    monkeypatch.delenv("LENS_TEST_ANTHROPIC_KEY")
    judge = {"model": MODEL, "base_url": "http://127.0.0.1:9", "batch": True,
             "api_key_env": "LENS_TEST_ANTHROPIC_KEY"}
    cfg = write_config(tmp_path, "b", ["sqlite_fts"], judge=judge)
    r = lens("run", str(cfg), "--quiet", "--limit", "3")
    assert r.returncode == 2 and "LENS_TEST_ANTHROPIC_KEY" in r.stderr
    assert not (tmp_path / "runs").exists()


# -- 2, OpenAI's Batch API: a batch id or a file id that is a path -------------------------------

@pytest.mark.anyio
@pytest.mark.parametrize("field", ["id", "output_file_id"])
async def test_openai_batch_ids_that_are_paths_are_refused(tmp_path: Path, field: str) -> None:
    from aiohttp import web

    from lens.data.config import JudgeConfig
    from lens.scoring.judging.batch_judge import BatchJudgeClient
    from lens.scoring.scorer import score_run
    from tests.protocols.test_protocols_batch import FakeBatchAPI

    outside = tmp_path / "outside"
    outside.mkdir()

    class Hostile(FakeBatchAPI):
        async def create(self, request: web.Request) -> web.Response:
            reply = await super().create(request)
            if field == "id":
                bid = next(iter(self.batches))
                return web.json_response({**self.batches[bid], "id": str(outside / "evil")})
            return reply

        def _finish(self, b: dict[str, Any]) -> None:
            super()._finish(b)
            b["output_file_id"] = "../../files/file-0"

    api = Hostile()
    runner = web.AppRunner(api.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    run = stored_run(tmp_path / "runs", imported(tmp_path, "longmemeval"),
                     {"faithful": LME_FAITHFUL})
    client = BatchJudgeClient(JudgeConfig(model="openai/gpt-4o-2024-08-06", batch=True,
                                          base_url=f"http://127.0.0.1:{port}/v1",
                                          batch_poll_s=0.01),
                              run, api_key="test-key", collect_s=0.05)
    try:
        scores = await score_run(run, judge=client, protocol="longmemeval")
    finally:
        await client.aclose()
        await runner.cleanup()
    assert scores.aggregates["adapter"]["faithful"]["longmemeval_accuracy"] is None
    assert not list(outside.iterdir())
    assert any("not a plain file name" in n for n in scores.notes), scores.notes
