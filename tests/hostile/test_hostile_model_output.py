"""Bad model output through the real CLI: `python -m lens run` against a loopback
OpenAI-compatible server that answers each run's first request with one kind of hostile reply.

Whatever the reply, the run finishes with exit 0, the question ends as a retried success or as a
recorded tool error with a readable reason, nothing prints a traceback or a RecursionError, the
usage meters never go below zero and the API key appears in no file and no output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lens.runs.store import RunStore
from tests.core.helpers import make_dataset, write_json
from tests.hostile.test_hostile_runs import lens, only_run, write_config
from tests.support.extras import requires_extra
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply, Responder

KEY_ENV = "LENS_TEST_HOSTILE_MODEL_KEY"
KEY = "sk-hostile-model-output-5e1f0a"
EVIDENCE = "s1_ep_004"
GOOD_USAGE = (40, 8)  # prompt, completion tokens of every honest reply


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def honest(req: RecordedRequest) -> Reply:
    """A retrieval agent: searches until a search has returned records, then answers citing the
    evidence. A failed tool call (its result is an error) leads to another search."""
    prompt, completion = GOOD_USAGE
    found = False
    for m in req.body.get("messages", []):
        if m.get("role") != "tool":
            continue
        try:
            data = json.loads(m.get("content") or "{}")
        except json.JSONDecodeError:
            continue
        found = found or (isinstance(data, dict) and bool(data.get("results")))
    if not found:
        return Reply.tool_call("memory_search", {"query": "widget count"},
                               prompt_tokens=prompt, completion_tokens=completion)
    return Reply.text(f"The widget count is 40 [{EVIDENCE}].", prompt_tokens=prompt,
                      completion_tokens=completion)


def with_usage(usage: dict[str, Any]) -> Reply:
    """The honest answer, with ``usage`` as its usage block."""
    reply = Reply.text(f"The widget count is 40 [{EVIDENCE}].")
    assert reply.body is not None
    reply.body["usage"] = usage
    return reply


def no_choices() -> Reply:
    reply = Reply.text("unused")
    assert reply.body is not None
    reply.body["choices"] = []
    return reply


# name: (the first reply, what the question must show: "retried" = the model call was retried
# and the question answered; "tool error: <text>" = one tool call failed with that reason)
CASES: dict[str, tuple[Reply, str]] = {
    "body nested 200k deep": (
        Reply(raw=('{"choices": [{"message": {"role": "assistant", "content": '
                   + nested(200_000) + "}}]}").encode()), "retried"),
    "tool arguments nested deep": (
        Reply.tool_call("memory_search", '{"query": ' + nested(5_000) + "}"),
        "tool error: nest deeper"),
    "Retry-After inf on a 429": (
        # The message echoes the key, as some providers do: it must not reach any output.
        Reply.error(429, f"slow down, key {KEY}", retry_after="inf"), "retried"),
    "tool that does not exist": (Reply.tool_call("memory_delete_everything", {"all": True}),
                                 "tool error: memory_delete_everything"),
    "arguments not JSON": (Reply.tool_call("memory_search", '{"query": "widget'),
                           "tool error: json"),
    "empty choices list": (no_choices(), "retried"),
}


def run_against(tmp_path: Path, first: Reply | None, monkeypatch: pytest.MonkeyPatch,
                responder: Responder = honest,
                max_retries: int = 3) -> tuple[Any, Path, FakeOpenAI]:
    ds = write_json(tmp_path / "ds.json",
                    make_dataset(n_episodes=4, checkpoints=(4,), questions_per_checkpoint=1))
    monkeypatch.setenv(KEY_ENV, KEY)
    with FakeOpenAI(responder) as server:
        if first is not None:
            server.script(first)
        cfg = write_config(tmp_path / "run.yaml", name="hostile-model", dataset={"path": str(ds)},
                           adapters=[{"name": "sqlite_fts"}],
                           agent={"model": "openai/fake-model", "base_url": server.base_url,
                                  "api_key_env": KEY_ENV, "max_retries": max_retries},
                           cache={"enabled": False}, out_dir="runs")
        res = lens("run", str(cfg), cwd=tmp_path)
    return res, only_run(tmp_path / "runs"), server


def all_output(res: Any, run_dir: Path) -> dict[str, str]:
    out = {"stdout": res.stdout, "stderr": res.stderr}
    for path in sorted(run_dir.rglob("*")):
        if path.is_file():
            out[str(path.relative_to(run_dir))] = path.read_text(encoding="utf-8",
                                                                 errors="replace")
    return out


def meters(node: Any) -> list[tuple[str, float]]:
    """Every numeric token or cost figure in a usage tree, with its path."""
    found: list[tuple[str, float]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                found.append((str(k), float(v)))
            else:
                found += [(f"{k}.{p}", x) for p, x in meters(v)]
    elif isinstance(node, list):
        for v in node:
            found += meters(v)
    return found


@pytest.mark.parametrize("case", list(CASES))
def test_bad_model_output_is_retried_or_a_tool_error(tmp_path: Path, case: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    first, expect = CASES[case]
    res, run_dir, server = run_against(tmp_path, first, monkeypatch)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "1 answered now, 0 empty, 0 errored" in res.stdout, res.stdout
    # An absurd Retry-After is ignored, not obeyed and not a reason to give up: the run ended
    # (obeying "inf" would never end it; the subprocess's timeout would fail the test) and the
    # call was retried once, below. How long it took is not asserted: that is the machine's.
    # The key is used (sent to the endpoint the config names) ...
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in server.requests)

    (record,) = RunStore.open(run_dir).load_records()
    assert record.status == "answered" and record.error is None
    assert EVIDENCE in record.cited_refs
    failed = [t for t in record.tool_calls if not t.ok]
    if expect == "retried":
        assert not failed
        # One request more than the honest conversation (search, answer) needs: the retry.
        assert server.count == 3
    else:
        reason = expect.removeprefix("tool error: ")
        assert len(failed) == 1, record.tool_calls
        assert reason.lower() in (failed[0].error or "").lower(), failed[0].error
        assert any(t.ok and t.result_count > 0 for t in record.tool_calls)

    # ... and never written or printed.
    assert_clean(res, run_dir)

    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "complete"
    figures = meters(manifest["usage"])
    assert figures, manifest["usage"]
    assert all(value >= 0 for _, value in figures), figures
    # Only the replies lens accepted were counted: the odd usage of a refused one never was.
    prompt, completion = GOOD_USAGE
    accepted_bad = 0 if expect == "retried" else 10 + 5  # Reply.tool_call's default usage
    assert record.tokens() == 2 * (prompt + completion) + accepted_bad
    assert all(c.prompt_tokens >= 0 and c.completion_tokens >= 0 for c in record.model_calls)
    retries = sum(c.retries for c in record.model_calls)
    assert retries == (1 if expect == "retried" else 0), record.model_calls
    total = manifest["usage"]["total"]
    assert (total["prompt_tokens"], total["completion_tokens"]) == (
        sum(c.prompt_tokens for c in record.model_calls),
        sum(c.completion_tokens for c in record.model_calls))


def assert_clean(res: Any, run_dir: Path) -> None:
    for name, text in all_output(res, run_dir).items():
        # errors/ keeps the traceback of each failure on purpose, for whoever debugs it.
        if not name.startswith("errors/"):
            assert "Traceback" not in text, name
        assert "RecursionError" not in text, name
        assert KEY not in text, name


# When every retry gets the same bad reply, the question is an error with a reason a reader can
# act on, and the rest of the run (scoring, reports) goes on.
ALWAYS_BAD: dict[str, tuple[Any, str]] = {
    "body nested deep": (lambda _r: Reply(raw=nested(100_000).encode()), "malformed response"),
    "empty choices list": (lambda _r: no_choices(), "no choices"),
}


@pytest.mark.parametrize("case", list(ALWAYS_BAD))
def test_always_bad_output_errors_the_question_with_a_reason(
        tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    responder, reason = ALWAYS_BAD[case]
    res, run_dir, server = run_against(tmp_path, None, monkeypatch, responder=responder,
                                          max_retries=1)
    # Its one question errored: the run failed its purpose.
    assert res.returncode == 1, res.stderr[-2000:]
    assert "0 answered now, 0 empty, 1 errored" in res.stdout, res.stdout
    assert server.count == 2  # the call and its one retry
    (record,) = RunStore.open(run_dir).load_records()
    assert record.status == "error" and reason in (record.error or ""), record.error
    assert len(record.error or "") < 2000
    assert_clean(res, run_dir)
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert all(value >= 0 for _, value in meters(manifest["usage"]))
    total = manifest["usage"]["total"]
    assert total["prompt_tokens"] == total["completion_tokens"] == 0
    scores = json.loads((run_dir / "scores.json").read_text(encoding="utf-8"))
    assert [q["status"] for q in scores["questions"]] == ["error"]
    assert "errored" in (run_dir / "report.md").read_text(encoding="utf-8")


# A reply whose only fault is its usage block: the answer is paid for, so it is kept (not
# retried, not an error); the unreadable counts are recorded as unknown and charged at the most
# the call can have cost, so the meters and the budget still count it.
ODD_USAGE: dict[str, tuple[dict[str, Any], list[str]]] = {
    "prompt tokens as a word": ({"prompt_tokens": "many", "completion_tokens": 8},
                                ["prompt_tokens"]),
    "counts as strings": ({"prompt_tokens": "12", "completion_tokens": "3"},
                          ["prompt_tokens", "completion_tokens"]),
    "negative counts": ({"prompt_tokens": -100_000, "completion_tokens": -5},
                        ["prompt_tokens", "completion_tokens"]),
    "more cached than prompt": ({"prompt_tokens": 40, "completion_tokens": 8,
                                 "prompt_tokens_details": {"cached_tokens": 5000}},
                                ["cached_tokens"]),
}


@pytest.mark.parametrize("case", list(ODD_USAGE))
def test_a_reply_whose_only_fault_is_its_usage_is_kept(tmp_path: Path, case: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    usage, unknown = ODD_USAGE[case]

    def answer_with_odd_usage(req: RecordedRequest) -> Reply:
        reply = honest(req)
        assert reply.body is not None
        if reply.body["choices"][0]["message"].get("content"):  # the answer, after a search
            reply.body["usage"] = usage
        return reply

    res, run_dir, server = run_against(tmp_path, None, monkeypatch,
                                          responder=answer_with_odd_usage)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "1 answered now, 0 empty, 0 errored" in res.stdout, res.stdout
    assert server.count == 2  # the search and the answer: nothing retried
    (record,) = RunStore.open(run_dir).load_records()
    assert record.status == "answered" and record.error is None
    assert EVIDENCE in record.cited_refs
    search, answer = record.model_calls
    assert search.usage_unknown == [] and answer.usage_unknown == unknown
    assert answer.retries == 0
    # Charged at the most the call can have cost: the prompt's bytes, the request's max_tokens.
    sent = server.requests[-1].body
    prompt_bytes = sum(len((m.get("content") or "").encode()) for m in sent["messages"])
    if "prompt_tokens" in unknown:
        assert answer.prompt_tokens >= prompt_bytes > GOOD_USAGE[0]
    if "completion_tokens" in unknown:
        assert answer.completion_tokens == sent["max_tokens"]
    assert record.budget is not None
    assert record.budget.used["max_agent_tokens"] == record.tokens()
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    total = manifest["usage"]["total"]
    assert total["unknown_usage_calls"] == 1
    assert total["prompt_tokens"] == search.prompt_tokens + answer.prompt_tokens
    assert all(value >= 0 for _, value in meters(manifest["usage"]))
    # The record says which counts were unknown; a record without any does not carry the key.
    lines = (run_dir / "records.jsonl").read_text(encoding="utf-8")
    assert lines.count('"usage_unknown"') == 1
    assert_clean(res, run_dir)


@requires_extra("local")
def test_a_cache_that_cannot_hold_the_grader_model_stops_scoring_with_the_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scoring's offline grader assembles the local model into the cache: a cache that cannot
    take it (a full disk, or here a file where its folder should be) is the user's to fix, said
    with the folder, the fix and the command that scores the answers kept."""
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "models").write_text("a file where the models folder should be")
    res, run_dir, _ = run_against(tmp_path, None, monkeypatch)
    assert res.returncode == 2, res.stderr[-2000:]
    assert "cannot write the assembled model" in res.stderr
    assert str(tmp_path / "cache" / "models") in res.stderr and "LENS_CACHE_DIR" in res.stderr
    assert f"lens score {run_dir}" in res.stderr
    assert "Traceback" not in res.stderr
    assert RunStore.open(run_dir).load_records()  # the answers are kept
