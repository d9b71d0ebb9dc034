"""LongMemEval on its real files: every item imports, the question is asked after the whole
haystack at its question date, the items whose evidence is dated after that date are kept,
marked and counted (import summary, manifest, checklist), and the date reaches the agent.

The 100 real oracle items beside the project (``../shared/longmemeval-sample``, all 43 with late
evidence) run in CI; the whole oracle and ``_s`` lists (``../thirdparty/longmemeval``, assembled
by ``bench/longmemeval_files.py`` from the public repository hussainzs/Memoria) when present.
Each test skips, naming the path, when its data is absent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import ijson
import pytest
import yaml

from lens.data.dataset import parse_timestamp
from lens.data.dataset_check import evidence_after_asked_at
from lens.data.dataset_load import load_dataset
from lens.data.importers.longmemeval import parse_lme_date
from lens.data.prompts import format_now
from lens.runs.store import RunStore
from tests.conftest import ROOT
from tests.support.cli import Lens, cli_runner

SAMPLE = ROOT.parent / "shared" / "longmemeval-sample" / "longmemeval_oracle_sample.json"
FULL = ROOT.parent / "thirdparty" / "longmemeval"
# The limit for importing the 257 MB ``_s`` file, streamed.
S_IMPORT_MAX_RSS_BYTES = int(1.5e9)


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"LongMemEval's real data is not beside the project ({path})")
    return path


def _late_items(items: Iterable[dict[str, Any]]) -> tuple[set[str], set[str]]:
    """Ids of the items with evidence dated after their question date, and of those with any
    session so dated: counted from the release's own fields."""
    evidence, any_session = set(), set()
    for it in items:
        asked = parse_lme_date(it["question_date"])
        dated = dict(zip(it["haystack_session_ids"], it["haystack_dates"], strict=True))
        if any(parse_lme_date(dated[s]) > asked for s in it["answer_session_ids"] if s in dated):
            evidence.add(it["question_id"])
        if any(parse_lme_date(d) > asked for d in it["haystack_dates"]):
            any_session.add(it["question_id"])
    return evidence, any_session


def _release(source: Path) -> Iterable[dict[str, Any]]:
    """The release's items one at a time (the ``_s`` list is 260 MB)."""
    with source.open("rb") as fh:
        yield from ijson.items(fh, "item")


def _check_imported(source: Path, out: Path, stdout: str) -> None:
    """The imported file against the release: one question per item, asked after the whole
    haystack at the item's question date; the marker on exactly the items with a session dated
    later; the late-evidence count the summary printed."""
    dates: dict[str, str] = {}
    late: set[str] = set()
    marked: set[str] = set()
    for it in _release(source):
        dates[it["question_id"]] = it["question_date"]
        ev, anyone = _late_items([it])
        late |= ev
        marked |= anyone
    assert f"{len(dates)} scope(s)" in stdout
    assert (f"{len(late)} of {len(dates)} question(s) have evidence dated after their question "
            "date") in stdout
    ds = load_dataset(out)
    assert len(ds.questions) == len(dates)
    sizes = {s.scope_id: len(s.episodes) for s in ds.scopes}
    # The release's id (an all-digit one gets a prefix in the question id).
    source_id = {s.scope_id: s.meta["question_id"] for s in ds.scopes}
    for q in ds.questions:
        qid = source_id[q.scope_id]
        assert q.checkpoint_after == sizes[q.scope_id]
        assert q.asked_at == parse_timestamp(parse_lme_date(dates[qid]))
        assert q.allow_later_episodes == (qid in marked)
    assert {source_id[q.scope_id] for q in ds.questions
            if q.question_id in set(evidence_after_asked_at(ds))} == late


def test_the_real_oracle_sample_imports_whole_with_its_late_evidence_counted(
        tmp_path: Path, lens: Lens) -> None:
    source = _need(SAMPLE)
    out = tmp_path / "lme.json"
    res = lens("datasets", "import", "--format", "longmemeval", str(source), "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert "43 of 100 question(s) have evidence dated after their question date" in res.stdout
    _check_imported(source, out, res.stdout)
    assert "0bb5a684" in evidence_after_asked_at(load_dataset(out))
    assert lens("datasets", "validate", str(out)).returncode == 0


def _without_marker(src: Path, dst: Path, qid: str) -> None:
    data = json.loads(src.read_text(encoding="utf-8"))
    for q in data["questions"]:
        if q["question_id"] == qid:
            q.pop("allow_later_episodes")
    dst.write_text(json.dumps(data), encoding="utf-8")


def _items(ids: list[str]) -> list[dict[str, Any]]:
    items = json.loads(_need(SAMPLE).read_text(encoding="utf-8"))
    return [it for it in items if it["question_id"] in ids]


def _config(tmp_path: Path, dataset: Path) -> Path:
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "lme", "dataset": {"path": str(dataset)}, "adapters": [{"name": "sqlite_fts"}],
        "agent": {"model": "scripted/policy"}, "out_dir": "runs", "cache": {"enabled": False},
        }), encoding="utf-8")
    return cfg


def test_validate_and_run_refuse_later_sessions_without_the_marker(tmp_path: Path,
                                                                  lens: Lens) -> None:
    source = tmp_path / "two.json"
    source.write_text(json.dumps(_items(["0bb5a684", "001be529"])), encoding="utf-8")
    out = tmp_path / "lme.json"
    assert lens("datasets", "import", "--format", "longmemeval", str(source), "--out",
                str(out)).returncode == 0
    bare = tmp_path / "bare.json"
    _without_marker(out, bare, "0bb5a684")
    checked = lens("datasets", "validate", str(bare))
    assert checked.returncode == 2
    assert "asked_at" in checked.stdout + checked.stderr
    assert "allow_later_episodes" in checked.stdout + checked.stderr
    run = lens("run", str(_config(tmp_path, bare)), "--quiet")
    assert run.returncode == 2 and "allow_later_episodes" in run.stderr
    assert not (tmp_path / "runs").exists()
    # Left out by --drop-invalid-questions like any question the dataset gets wrong.
    dropped = lens("run", str(_config(tmp_path, bare)), "--quiet", "--drop-invalid-questions")
    assert dropped.returncode == 0, dropped.stderr
    assert "questions: 1 (1 answered now" in dropped.stdout
    (run_dir,) = (tmp_path / "runs").iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    (gone,) = manifest["dataset"]["dropped"]
    assert gone["question_id"] == "0bb5a684" and gone["reason"].startswith("asked_at: ")


def test_a_run_tells_the_agent_the_question_date_and_counts_late_evidence(
        tmp_path: Path, lens: Lens) -> None:
    picked = _items(["0bb5a684", "001be529", "gpt4_213fd887"])
    late, _ = _late_items(picked)
    assert "0bb5a684" in late
    source = tmp_path / "three.json"
    source.write_text(json.dumps(picked), encoding="utf-8")
    out = tmp_path / "lme.json"
    assert lens("datasets", "import", "--format", "longmemeval", str(source), "--out",
                str(out)).returncode == 0
    res = lens("run", str(_config(tmp_path, out)))
    assert res.returncode == 0, res.stderr
    shown = (f"questions whose evidence is dated after the question date: {len(late)} of "
             f"{len(picked)} in three")
    assert shown in res.stdout
    (run_dir,) = (tmp_path / "runs").iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert sorted(manifest["dataset"]["evidence_after_asked_at"]) == sorted(late)
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    row = next(c for c in summary["checklist"] if c["id"] == "evidence_after_question")
    assert row["status"] == "warn" and shown.endswith(row["value"])
    dates = {it["question_id"]: it["question_date"] for it in picked}
    for rec in RunStore(run_dir).load_records():
        told = format_now(parse_lme_date(dates[rec.question_id]))
        assert told == dates[rec.question_id]  # the release's own form, weekday included
        first = next(m.content for m in rec.transcript if m.role == "user")
        assert first.startswith(f"Current date: {told}\n\n")
        # The scripted policy searches with the question alone.
        (search, *_) = [c for c in rec.tool_calls if c.name == "memory_search"]
        assert "Current date" not in search.arguments["query"]


def test_the_whole_oracle_list_imports(tmp_path: Path, lens: Lens) -> None:
    source = _need(FULL / "longmemeval_oracle.json")
    out = tmp_path / "oracle.json"
    res = lens("datasets", "import", "--format", "longmemeval", str(source), "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert "500 scope(s)" in res.stdout
    assert "43 of 500 question(s) have evidence dated after" in res.stdout
    _check_imported(source, out, res.stdout)


def test_the_whole_s_list_imports_streamed_within_the_memory_limit(tmp_path: Path) -> None:
    source = _need(FULL / "longmemeval_s.json")
    out = tmp_path / "s.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([sys.executable, "-m", "lens", "datasets", "import", "--format",
                                 "longmemeval", str(source), "--out", str(out)],
                                env=env, stdout=log, stderr=subprocess.STDOUT)
        # The child's own peak resident set: the kernel's ru_maxrss of the process waited for.
        _, status, usage = os.wait4(proc.pid, 0)
        log.seek(0)
        stdout = log.read().decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, stdout
    assert usage.ru_maxrss * 1024 < S_IMPORT_MAX_RSS_BYTES, usage.ru_maxrss
    assert "498 scope(s)" in stdout
    assert "44 of 498 question(s) have evidence dated after" in stdout
    _check_imported(source, out, stdout)
