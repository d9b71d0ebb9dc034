"""Whole runs through the real CLI against hostile adapters, ids and endpoints: re-asked questions
score as answered, colliding labels and scopes stay apart, refs from the future are caught,
control characters never reach a report or terminal raw, bad result metadata fails one tool
call."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from lens.runs.records import question_key, unit_key
from lens.runs.store import RunStore
from tests.core.helpers import make_dataset, write_json
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

ROOT = Path(__file__).resolve().parents[2]
CONTROL = ("\x1b", "\x07", "\x00", "\x9b", "\u202e")


def lens(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LENS_CACHE_DIR": str(cwd / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "lens", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


def write_config(path: Path, **cfg: Any) -> Path:
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def scores_of(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "scores.json").read_text(encoding="utf-8"))


def only_run(folder: Path) -> Path:
    (run_dir,) = [p for p in folder.iterdir() if p.is_dir()]
    return run_dir


# -- 3. --resume --retry-errors: the newest record wins ------------------------------------------

def test_re_asked_questions_score_as_answered(tmp_path: Path) -> None:
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=6, checkpoints=(3, 6)))
    outage = {"on": True}

    def respond(req: RecordedRequest) -> Reply:
        if outage["on"]:
            return Reply.error(400, "model overloaded")  # not retried: the question errors
        turn = sum(1 for m in req.body["messages"] if m["role"] == "assistant")
        if turn == 0:
            return Reply.tool_call("memory_search", {"query": "widget count"})
        return Reply.text("The widget count is 60 [s1_ep_006].")

    with FakeOpenAI(respond) as server:
        cfg = write_config(tmp_path / "run.yaml", name="retry", dataset={"path": str(ds)},
                           adapters=[{"name": "sqlite_fts"}],
                           agent={"model": "openai/fake", "base_url": server.base_url,
                                  "max_retries": 0},
                           out_dir="runs")
        first = lens("run", str(cfg), "--quiet", cwd=tmp_path)
        assert first.returncode == 1, first.stderr  # every question errored
        assert "0 answered now, 0 empty, 4 errored" in first.stdout
        run_dir = only_run(tmp_path / "runs")
        outage["on"] = False
        paid_before = server.count
        again = lens("run", str(cfg), "--quiet", "--resume", str(run_dir), "--retry-errors",
                     cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert "4 answered now, 0 empty, 0 errored" in again.stdout
        assert server.count - paid_before == 8  # each question re-asked once (2 turns)
    store = RunStore.open(run_dir)
    records = store.load_records()
    assert [r.status for r in records] == ["answered"] * 4
    assert {r.key: r.status for r in records} == store.committed_questions()
    scores = scores_of(run_dir)
    assert [q["status"] for q in scores["questions"]] == ["answered"] * 4
    assert all(q["metrics"]["evidence_grounding"] is not None for q in scores["questions"])
    report = lens("report", str(run_dir), cwd=tmp_path)
    assert report.returncode == 0
    assert "sqlite_fts: 0 of 4 (0.0%)" in (run_dir / "report.md").read_text(encoding="utf-8")


# -- 5. unit keys cannot collide -----------------------------------------------------------------

def test_unit_keys_escape_their_separator() -> None:
    assert unit_key("a|b", "c", 0) != unit_key("a", "b|c", 0)
    assert question_key(unit_key("a", "b", 0), "q|1") != question_key(unit_key("a", "b|q", 0),
                                                                      "1")
    assert unit_key("a%7Cb", "c", 0) != unit_key("a|b", "c", 0)


def test_labels_and_scopes_with_separators_all_run_and_resume(tmp_path: Path) -> None:
    data = make_dataset(n_episodes=4, checkpoints=(4,), questions_per_checkpoint=1,
                        scope_ids=("c", "b|c"))
    ds = write_json(tmp_path / "ds.json", data)
    cfg = write_config(tmp_path / "run.yaml", name="pipes", dataset={"path": str(ds)},
                       adapters=[{"name": "sqlite_fts", "label": "a|b"},
                                 {"name": "sqlite_fts", "label": "a"}],
                       agent={"model": "scripted/policy"}, out_dir="runs",
                       scoring={"enabled": False}, report=False)
    res = lens("run", str(cfg), "--quiet", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "4 answered now" in res.stdout
    run_dir = only_run(tmp_path / "runs")
    store = RunStore.open(run_dir)
    assert len(store.done_keys("unit_done")) == 4
    # A unit cut off before its end (its unit_done never written) runs again on resume; with a
    # shared key it would have counted as done through its twin.
    events = (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    kept = [e for e in events if not (json.loads(e)["kind"] == "unit_done"
                                      and json.loads(e)["key"] == unit_key("a", "b|c", 0))]
    (run_dir / "events.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    res = lens("run", str(cfg), "--quiet", "--resume", str(run_dir), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "(0 answered now, 0 empty, 0 errored, 4 done before)" in res.stdout
    assert len(RunStore.open(run_dir).done_keys("unit_done")) == 4
    assert len(RunStore.open(run_dir).load_records()) == 4


# -- 6. refs past the checkpoint -----------------------------------------------------------------

def test_refs_from_the_future_are_ungrounded_and_fail_the_checklist(tmp_path: Path) -> None:
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=10, checkpoints=(3, 7)))
    cfg = write_config(tmp_path / "run.yaml", name="leak", dataset={"path": str(ds)},
                       adapters=[{"name": "sqlite_fts", "label": "honest"},
                                 {"name": "tests.hostile.hostile_adapters:FutureLeakAdapter",
                                  "label": "leaky"}],
                       agent={"model": "scripted/policy"}, out_dir="runs")
    res = lens("run", str(cfg), "--quiet", cwd=tmp_path)
    # Refs the adapter was never given break its contract: the run fails.
    assert res.returncode == 1, res.stderr
    assert "FAIL  future leak" in res.stderr
    run_dir = only_run(tmp_path / "runs")
    scores = scores_of(run_dir)
    by_adapter: dict[str, list[dict[str, Any]]] = {}
    for q in scores["questions"]:
        by_adapter.setdefault(q["adapter"], []).append(q)
    leaks = [q["detail"]["evidence_grounding"].get("future_leak") for q in by_adapter["leaky"]]
    assert all(leaks), leaks
    assert not any(q["detail"]["evidence_grounding"].get("future_leak")
                   for q in by_adapter["honest"])
    misses = [m for q in by_adapter["leaky"]
              for m in q["detail"]["evidence_grounding"].get("misses", [])]
    assert misses and all(m["reason"] == "future" for m in misses)

    # The adversary: citing episodes it should not have scores below the honest adapter.
    def grounding(name: str) -> float:
        values = [q["metrics"]["evidence_grounding"] for q in by_adapter[name]]
        return sum(values) / len(values)

    assert grounding("leaky") < grounding("honest")
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    row = next(line for line in md.splitlines() if "future leak" in line)
    assert "**FAIL**" in row and "leaky" in row and "honest" not in row
    report = lens("report", str(run_dir), cwd=tmp_path)
    assert "FAIL  future leak" in report.stdout


# -- 10. control characters made visible ---------------------------------------------------------

def test_control_characters_are_shown_not_obeyed(tmp_path: Path) -> None:
    data = make_dataset(n_episodes=4, checkpoints=(4,), questions_per_checkpoint=2)
    data["dataset_id"] = "evil\n# Injected heading\x1b[2J\x07"
    data["questions"][0]["prompt"] = "What is the widget count?"
    ds = write_json(tmp_path / "ds.json", data)

    def respond(req: RecordedRequest) -> Reply:
        turn = sum(1 for m in req.body["messages"] if m["role"] == "assistant")
        if turn == 0:
            return Reply.tool_call("memory_search", {"query": "widget"})
        return Reply.text("Count \x1b[31mred\x1b[0m\x07 is 40\x00 \x9b2J [s1_ep_004\x1b]")

    with FakeOpenAI(respond) as server:
        cfg = write_config(tmp_path / "run.yaml", name="ctl", dataset={"path": str(ds)},
                           adapters=[{"name": "sqlite_fts", "label": "label\u202eend"}],
                           agent={"model": "openai/fake", "base_url": server.base_url},
                           out_dir="runs")
        res = lens("run", str(cfg), cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        # A second run of the same condition (replayed from the cache), to compare with.
        other = lens("run", str(cfg), "--out", "other", "--quiet", cwd=tmp_path)
        assert other.returncode == 0, other.stderr
    run_dir = only_run(tmp_path / "runs")
    outputs = {name: (run_dir / name).read_text(encoding="utf-8")
               for name in ("report.md", "report.html", "questions.csv", "summary.json")}
    for name in ("report.md", "report.html", "questions.csv"):
        for c in CONTROL:
            assert c not in outputs[name], (name, repr(c))
    md = outputs["report.md"]
    assert "# Injected heading" not in [line.strip() for line in md.splitlines()]
    assert "evil␊# Injected heading␛[2J␇" in md
    assert "␛" in outputs["report.html"]
    for command in (["score", str(run_dir), "--tier", "1"], ["report", str(run_dir)],
                    ["compare", str(run_dir), str(only_run(tmp_path / "other")), "--force"]):
        out = lens(*command, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert "\u202e" not in out.stdout + out.stderr  # the label's bidi override
        assert "label\\u202eend" in out.stdout
        for c in CONTROL:
            assert c not in out.stdout + out.stderr, (command, repr(c))


def test_csv_shows_control_characters_in_free_text() -> None:
    from lens.report.documents.csvout import questions_csv
    from lens.report.foundations.data import QuestionRow
    from lens.runs.records import QuestionRecord

    record = QuestionRecord(unit_key="u", adapter="a", scope_id="s", repeat=0, question_id="q",
                            checkpoint=1, status="error", error="=cmd\x1b[2J\x07\nrow")
    text = questions_csv([QuestionRow(record=record, scores=None)], [])
    (row,) = list(csv.DictReader(io.StringIO(text)))
    assert row["error"] == "'=cmd␛[2J␇␊row"
    assert not any(c in text for c in CONTROL)


# -- 11. unserialisable metadata and NaN scores --------------------------------------------------

def test_bad_result_metadata_fails_one_tool_call_and_nan_never_reaches_the_model(
        tmp_path: Path) -> None:
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=4, checkpoints=(4,)))
    tool_contents: list[str] = []

    def respond(req: RecordedRequest) -> Reply:
        msgs = req.body["messages"]
        tool_contents.extend(m["content"] for m in msgs if m["role"] == "tool")
        turn = sum(1 for m in msgs if m["role"] == "assistant")
        if turn < 2:
            return Reply.tool_call("memory_search",
                                   {"query": "widget count bad" if turn == 0 else "widget count"})
        return Reply.text("The widget count is 40 [s1_ep_004].")

    with FakeOpenAI(respond) as server:
        cfg = write_config(tmp_path / "run.yaml", name="meta", dataset={"path": str(ds)},
                           adapters=[{"name": "tests.hostile.hostile_adapters:BadMetadataAdapter"}],
                           agent={"model": "openai/fake", "base_url": server.base_url},
                           out_dir="runs", cache={"enabled": False})
        res = lens("run", str(cfg), "--quiet", cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        assert "2 answered now, 0 empty, 0 errored" in res.stdout
    records = RunStore.open(only_run(tmp_path / "runs")).load_records()
    for r in records:
        assert r.status == "answered"
        first, second = r.tool_calls[:2]
        assert not first.ok and "cannot be sent as JSON" in (first.error or "")
        assert second.ok and second.result_count > 0

    def strict(text: str) -> Any:
        def refuse(name: str) -> Any:
            raise ValueError(name)
        return json.loads(text, parse_constant=refuse)

    assert tool_contents
    for content in tool_contents:
        strict(content)  # valid JSON: no NaN, no Infinity
    assert any('"score": null' in c for c in tool_contents)
