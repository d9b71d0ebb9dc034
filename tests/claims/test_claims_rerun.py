"""``lens claims check --rerun RUN_DIR``: a lens run's answers to the same benchmark's questions
as a column beside the publisher's, matched by question text, scored by the same scorers; a
folder that is not a run, or a run sharing no question, refused with exit 2. End to end through
the CLI: LoCoMo imported with lens's importer, run under the fixed reader (scripted, and the
local model on a handful of questions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.protocols.builders import locomo_source, write_source
from tests.support.cli import Lens, cli_runner
from tests.support.extras import missing_reason
from tests.view.server import get, lens_view, require_view_extra


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


MAPPING = {"format": "jsonl", "items": "", "benchmark": "locomo",
           "fields": {"id": "id", "question": "question", "gold": "gold", "answer": "response",
                      "category": "category", "verdicts": ["label"]}}


def _publisher(tmp_path: Path) -> tuple[Path, Path]:
    """The publisher's per-question results: LoCoMo's four judged questions (text spaced and
    cased differently from the dataset's, as copies are) and one question the run never asked."""
    qa = [q for q in locomo_source()[0]["qa"] if q["category"] != 5]
    rows = [{"id": f"p{n}", "question": "  " + q["question"].upper() + " ",
             "gold": q["answer"], "response": q["answer"], "category": q["category"],
             "label": "CORRECT"} for n, q in enumerate(qa)]
    rows.append({"id": "p9", "question": "What colour is Mel's car?", "gold": "red",
                 "response": "blue", "category": 4, "label": "WRONG"})
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    mapping = tmp_path / "map.yaml"
    mapping.write_text(yaml.safe_dump(MAPPING), encoding="utf-8")
    return results, mapping


def _run(lens: Lens, tmp_path: Path, agent: dict[str, object], name: str = "rerun") -> Path:
    ds = tmp_path / "locomo.json"
    if not ds.exists():
        src = write_source(tmp_path, "locomo10.json", locomo_source())
        r = lens("datasets", "import", "--format", "locomo", str(src), "--out", str(ds))
        assert r.returncode == 0, r.stderr
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": name, "dataset": {"path": str(ds)}, "adapters": [{"name": "sqlite_fts"}],
        "agent": agent, "out_dir": str(tmp_path / "runs"), "scoring": {"enabled": False},
        "report": False}), encoding="utf-8")
    r = lens("run", str(cfg), "--quiet")
    assert r.returncode in (0, 1), r.stderr[-3000:]
    return sorted((tmp_path / "runs").glob(f"{name}-*"))[-1]


def test_rerun_column_from_a_fixed_reader_run(lens: Lens, tmp_path: Path) -> None:
    results, mapping = _publisher(tmp_path)
    replies = tmp_path / "replies.yaml"
    replies.write_text(yaml.safe_dump({"rules": [
        {"contains": "When did Rex turn one?", "text": "On 7 May 2023."},
        {"contains": "What pet does Caroline have?", "text": "a dog"}],
        "default": "I do not know"}), encoding="utf-8")
    run = _run(lens, tmp_path, {"model": "scripted/replies.yaml", "mode": "fixed_reader",
                                "top_k": 2})
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    r = lens("claims", "check", str(results), "--mapping", str(mapping), "--rerun", str(run),
             "--out", "out")
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((tmp_path / "out" / "claims.json").read_text(encoding="utf-8"))
    (rerun,) = data["reruns"]
    assert rerun["condition_hash"] == manifest["condition_hash"]
    assert rerun["matched"] == 4 and rerun["unmatched_publisher"] == 1
    assert rerun["unmatched_run"] == 2  # the run's two category-5 questions
    matcher = next(s for s in rerun["scorers"] if s["name"] == "fact matcher")
    # The two answered right score 1, the two "I do not know" 0; the publisher's p9 unmatched.
    assert matcher["values"] == {"p0": 1.0, "p1": 0.0, "p2": 1.0, "p3": 0.0}
    assert matcher["estimate"]["mean"] == 0.5 and matcher["agreement"] is None
    f1 = next(s for s in rerun["scorers"] if s["name"] == "LoCoMo F1")
    assert set(f1["values"]) == {"p0", "p1", "p2", "p3"} and f1["values"]["p0"] == 1.0
    assert f1["values"]["p2"] == pytest.approx(6 / 7)  # "on" is a token LoCoMo's F1 counts
    # The same scorers on the publisher's own answers are unchanged beside it.
    own = next(s for s in data["scorers"] if s["name"] == "fact matcher")
    assert len(own["values"]) == 5
    head = next(line for line in r.stdout.splitlines() if line.startswith("| figure"))
    assert f"rerun {run.name}" in head
    assert "50.0" in next(line for line in r.stdout.splitlines()
                          if line.startswith("| fact matcher"))
    assert manifest["condition_hash"] in r.stdout and "1 unmatched" in r.stdout
    assert "not the publisher's system" in r.stdout
    # lens view shows the same column, with the run's condition hash.
    require_view_extra()
    with lens_view(tmp_path) as base:
        status, _, page = get(base + "/claims/out")
    assert status == 200
    assert f"rerun {run.name}" in page and manifest["condition_hash"] in page
    assert "(n=4)" in page and "50.0" in page


def test_rerun_refused_when_not_a_run_or_no_shared_question(lens: Lens,
                                                           tmp_path: Path) -> None:
    results, mapping = _publisher(tmp_path)
    (tmp_path / "empty").mkdir()
    r = lens("claims", "check", str(results), "--mapping", str(mapping), "--rerun", "empty",
             "--out", "out")
    assert r.returncode == 2 and "--rerun empty: not a lens run directory" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "out").exists()
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "x", "question": "Who painted the Mona Lisa?",
                                 "gold": "Leonardo", "response": "Leonardo", "category": 4,
                                 "label": "CORRECT"}) + "\n", encoding="utf-8")
    run = _run(lens, tmp_path, {"model": "scripted/policy"})
    r = lens("claims", "check", str(other), "--mapping", str(mapping), "--rerun", str(run),
             "--out", "out")
    assert r.returncode == 2 and "none of its 6 question(s)" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "out").exists()


@pytest.mark.local_model
def test_rerun_with_the_local_model(lens: Lens, tmp_path: Path) -> None:
    reason = missing_reason("local")
    if reason:
        pytest.skip(reason)
    results, mapping = _publisher(tmp_path)
    # The publisher's reader prompt by file (the shape of mem0's ANSWER_PROMPT, single braces).
    (tmp_path / "answer_prompt.txt").write_text(
        "You are an intelligent memory assistant.\n\nMemories:\n\n{memories}\n\n"
        "Question: {question}\nAnswer in a few words:\n", encoding="utf-8")
    run = _run(lens, tmp_path, {"model": "llama_cpp/qwen2.5-coder-1.5b", "max_tokens": 48,
                                "mode": "fixed_reader", "top_k": 2,
                                "reader_prompt_file": "answer_prompt.txt"}, "local")
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["condition"]["answerer"]["prompt_file"]["name"] == "answer_prompt.txt"
    r = lens("claims", "check", str(results), "--mapping", str(mapping), "--rerun", str(run),
             "--no-leniency", "--out", "out")
    assert r.returncode == 0, r.stdout + r.stderr
    (rerun,) = json.loads((tmp_path / "out" / "claims.json").read_text())["reruns"]
    assert rerun["matched"] == 4 and rerun["condition_hash"] == manifest["condition_hash"]
    assert manifest["condition_hash"] in r.stdout
    # Every matched question the model finished is scored by each scorer; the rest counted.
    for s in rerun["scorers"]:
        assert len(s["values"]) == 4 - rerun["not_scored"]
        assert all(v is not None for v in s["values"].values())


def test_a_question_asked_in_two_conversations_is_paired_within_its_own() -> None:
    from lens.claims.items import ClaimItem
    from lens.claims.rerun import RunAnswer, RunAnswers, match

    def item(i: str, q: str, group: str) -> ClaimItem:
        return ClaimItem(i, q, "gold", "theirs", "1", (True,), group=group)

    def ans(scope: str, qid: str, q: str) -> RunAnswer:
        return RunAnswer(scope, qid, q, f"ours {scope}", "answered")

    items = [item("a1", "Where does Ann live?", "0"), item("a2", "What is her job?", "0"),
             item("b1", "Who is Bo's friend?", "1"), item("b2", "What is her job?", "1"),
             item("c1", "What is her job?", "2")]  # conversation 2 has no unique question
    run = RunAnswers("r", "r", "sqlite_fts", "h", (
        ans("conv-7", "q1", "where does ann  live?"), ans("conv-7", "q2", "What is her job?"),
        ans("conv-9", "q1", "Who is Bo's friend?"), ans("conv-9", "q2", "What is her job?"),
        ans("conv-9", "q3", "Asked only here?")))
    m = match(items, run)
    assert {k: (a.scope, a.question_id) for k, a in m.matched.items()} == {
        "a1": ("conv-7", "q1"), "a2": ("conv-7", "q2"), "b1": ("conv-9", "q1"),
        "b2": ("conv-9", "q2")}
    assert m.unmatched_publisher == 1 and m.unmatched_run == 1
