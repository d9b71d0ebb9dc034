"""LongMemEval-V2 importer on a hand-written data root in the released format (both trajectory
shapes, a question with an image, questions sharing a haystack): the mapping, the text-only
summary, a haystack file naming a subset, long trajectories, every malformed record listed with
file, line and field and nothing written, and the round trip through `python -m lens`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lens.core.errors import DatasetError
from lens.data.dataset_load import check_dataset_file, load_dataset
from lens.data.importers.longmemeval_v2 import (
    State,
    Trajectory,
    parse_eval_spec,
    trajectory_parts,
    write_longmemeval_v2,
)

ROOT = Path(__file__).resolve().parents[2]
FIX = Path(__file__).resolve().parent / "fixtures" / "longmemeval_v2"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "longmemeval-v2"
    shutil.copytree(FIX, root)
    return root


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write_rows(path: Path, rows: list[Any]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _lens(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "lens", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=env)


def test_haystacks_become_scopes_of_trajectory_episodes(tmp_path: Path) -> None:
    out = tmp_path / "lme2.json"
    counts = write_longmemeval_v2(FIX, out)
    assert check_dataset_file(out) == []
    assert counts["scopes"] == 6 and counts["episodes"] == 13 and counts["questions"] == 9
    data = json.loads(out.read_text())
    scopes = {s["scope_id"]: s for s in data["scopes"]}
    # q-static-1 and q-static-2 list the same haystack: one scope, asked after its 3 episodes.
    shared = scopes["lme2_small_q-static-1"]
    assert shared["meta"]["question_ids"] == ["q-static-1", "q-static-2"]
    assert [e["meta"]["trajectory_id"] for e in shared["episodes"]] == [
        "t-web-01", "t-web-02", "t-web-03"]
    assert [e["timestamp"] for e in shared["episodes"]] == [
        "2024-01-01T00:00:00", "2024-01-01T00:01:00", "2024-01-01T00:02:00"]
    first = shared["episodes"][0]["text"]
    for piece in ("Web-agent trajectory t-web-01 (web, shopping)",
                  "Goal: Find the price of the Orion backpack", "Outcome: success",
                  "Step 1: http://shop.example/orion-backpack.html",
                  "Thought: The price is on the product page.", "Action: stop [$49.99]",
                  "[32] button 'Add to Cart'"):
        assert piece in first
    assert ".png" not in first and shared["episodes"][0]["meta"]["screenshots_not_passed"] == 2
    # The collection tools' shape: goal from metadata.original_goal, page from observation.
    ent = scopes["lme2_small_q-static-3"]["episodes"][0]["text"]
    assert "Goal: Find where incidents are listed" in ent
    assert "Start URL: https://sn.example/now/nav/ui" in ent and "[a51] link 'Incident Mobile'" \
        in ent
    # The haystack order is the stream order: q-dyn-1 lists t-ent-02 first.
    assert [e["meta"]["trajectory_id"] for e in scopes["lme2_small_q-dyn-1"]["episodes"]] == [
        "t-ent-02", "t-ent-01"]

    qs = {q["question_id"]: q for q in data["questions"]}
    assert all(q["checkpoint_after"] == len(scopes[q["scope_id"]]["episodes"])
               for q in qs.values())
    assert {k: qs[k]["question_type"] for k in ("q-static-1", "q-dyn-1", "q-proc-1",
                                                "q-gotcha-1", "q-static-abs-1")} == {
        "q-static-1": "null_hypothesis", "q-dyn-1": "longitudinal",
        "q-proc-1": "action_recommendation", "q-gotcha-1": "action_recommendation",
        "q-static-abs-1": "negative"}
    s1 = qs["q-static-1"]
    assert s1["ground_truth"]["key_facts"] == ["Add to Cart", "Compare"]
    assert s1["prompt"].startswith("You are an experienced colleague who knows a customised web")
    assert "\\boxed{UNKNOWN}" in s1["prompt"]
    assert s1["prompt"].endswith("Question: Which controls appear next to the price on the "
                                 "Orion Backpack page?")
    assert "ServiceNow" in qs["q-dyn-1"]["prompt"]
    assert "screenshot, which is not available" in qs["q-static-2"]["prompt"]
    assert qs["q-static-2"]["meta"]["image"] == "question_screenshots/q-static-2.png"
    # A bare "No" is the conclusion, not a key fact; letters and judged answers have no facts.
    assert qs["q-dyn-2"]["ground_truth"]["conclusion"] == "no"
    assert qs["q-dyn-2"]["ground_truth"]["key_facts"] == []
    assert qs["q-dyn-1"]["ground_truth"]["key_facts"] == []
    assert qs["q-gotcha-1"]["ground_truth"]["key_facts"] == []
    assert qs["q-static-abs-1"]["meta"]["abstention"] is True
    want = {"category": "procedure", "tier": "small", "question_type": "procedure",
            "domain": "web", "haystack_size": 2}
    assert {k: qs["q-proc-1"]["meta"][k] for k in want} == want
    src = data["meta"]["source"]
    assert src["text_only"] is True and src["tier"] == "small"
    assert src["question_images_not_passed"] == 1
    # 11 screenshots in the pool, 28 in the scopes (a trajectory in several haystacks counts
    # in each).
    assert src["pool_screenshots"] == 11 and src["screenshots_not_passed"] == 28


def test_a_haystack_file_as_source_a_subset_and_extra_fields(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    hay = json.loads((root / "haystacks" / "lme_v2_small.json").read_text())
    (root / "haystacks" / "lme_v2_medium.json").write_text(json.dumps(
        {k: hay[k] for k in ("q-dyn-1", "q-dyn-2")}))
    # Two haystack files: the data root alone is ambiguous.
    with pytest.raises(DatasetError, match="several haystack files"):
        write_longmemeval_v2(root, tmp_path / "o.json")
    rows = _rows(root / "questions.jsonl")
    rows[6]["evidence_note"] = "kept"
    _write_rows(root / "questions.jsonl", rows)
    counts = write_longmemeval_v2(root / "haystacks" / "lme_v2_medium.json", tmp_path / "m.json")
    assert counts["questions"] == 2 and counts["questions_left_out"] == 7
    ds = load_dataset(tmp_path / "m.json")
    assert ds.dataset_id == "longmemeval-v2-medium"
    assert [s.scope_id for s in ds.scopes] == ["lme2_medium_q-dyn-1"]
    assert ds.questions[0].meta["lme_v2"] == {"evidence_note": "kept"}
    assert "q-static-1" in ds.meta["source"]["questions_left_out"]


def test_long_trajectories_split_at_state_boundaries_and_long_states_are_cut() -> None:
    states = [State(f"http://x/{i}", None, "click", "row\n" * 30, i) for i in range(4)]
    t = Trajectory("t1", "web", None, "Goal", "http://x/", None, states, 0)
    parts, cut = trajectory_parts(t, limit=400)
    assert len(parts) > 1 and cut == 0
    assert all(len(p) <= 400 for p in parts)
    assert parts[0].startswith("Web-agent trajectory t1 (web)\nGoal: Goal")
    assert f"(part 1 of {len(parts)})" in parts[0]
    assert sum(p.count("Step ") for p in parts) == 4
    huge = Trajectory("t2", None, None, "G", "http://x/", None,
                      [State("http://x/", None, None, "x" * 5000, 0)], 0)
    (only,), cut = trajectory_parts(huge, limit=400)
    assert cut == 1 and len(only) <= 400 and "page text cut by lens" in only


def test_a_trajectory_longer_than_an_episode_is_split_in_the_import(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    rows = _rows(root / "trajectories.jsonl")
    rows[0]["states"][0]["accessibility_tree"] = "a" * 1_200_000
    rows[0]["states"][1]["accessibility_tree"] = "b" * 1_200_000
    _write_rows(root / "trajectories.jsonl", rows)
    counts = write_longmemeval_v2(root, tmp_path / "o.json")
    # t-web-01 is in four haystacks: split into two parts in each.
    assert counts["trajectories_split"] == 4 and counts["states_cut"] == 0
    assert counts["episodes"] == 13 + 4
    ds = load_dataset(tmp_path / "o.json")
    eps = ds.scope("lme2_small_q-static-1").episodes
    assert [e.episode_id for e in eps[:2]] == ["lme2_small_q-static-1_t001p1",
                                               "lme2_small_q-static-1_t001p2"]
    assert ds.questions[0].checkpoint_after == 4


def _break_everything(root: Path) -> None:
    qs = _rows(root / "questions.jsonl")
    qs[1].pop("answer")
    qs[2]["question_type"] = "workflow"
    qs[3]["eval_function"] = "norm_phrase_set_match|strip_chars=."
    qs[5]["domain"] = "mobile"
    qs[7]["eval_function"] = "llm_abstention_checker"
    lines = [json.dumps(r) for r in qs]
    lines.insert(4, "{not json")
    (root / "questions.jsonl").write_text("\n".join(lines) + "\n")
    ts = _rows(root / "trajectories.jsonl")
    ts[0]["states"][1].pop("url")
    ts[3]["content"][0]["observation"].pop("text")
    ts[4]["states"][0]["action"] = {"type": "click"}
    _write_rows(root / "trajectories.jsonl", ts)
    hay = json.loads((root / "haystacks" / "lme_v2_small.json").read_text())
    hay["q-nobody"] = ["t-web-01"]
    hay["q-dyn-abs-1"] = ["t-ent-404", "t-ent-01", "t-ent-405"]
    (root / "haystacks" / "lme_v2_small.json").write_text(json.dumps(hay))


def test_every_malformed_record_is_listed_with_file_line_and_field(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    _break_everything(root)
    with pytest.raises(DatasetError) as exc:
        write_longmemeval_v2(root, tmp_path / "out.json")
    shown = [str(p) for p in exc.value.problems]
    expected = [
        "questions.jsonl: line 2: answer: required: a string",
        "questions.jsonl: line 3: question_type: unknown question type 'workflow'",
        "questions.jsonl: line 4: eval_function: norm_phrase_set_match takes no option "
        "'strip_chars'",
        "questions.jsonl: line 5: invalid JSON",
        "questions.jsonl: line 7: domain: expected one of web, enterprise, got 'mobile'",
        "questions.jsonl: line 9: eval_function: llm_abstention_checker grades flawed-premise "
        "questions only",
        "trajectories.jsonl: line 1: states[1].url: required: a non-empty string",
        "trajectories.jsonl: line 4: content[0].observation.text: required: the page as text",
        "trajectories.jsonl: line 5: states[0].action: expected a string or null",
        "lme_v2_small.json: $.q-nobody: no question 'q-nobody'",
        "lme_v2_small.json: $.q-dyn-abs-1: 2 trajectory id(s) not in trajectories.jsonl: "
        "t-ent-404, t-ent-405",
    ]
    for want in expected:
        assert any(want in s for s in shown), (want, shown)
    # Each problem once: a record with problems of its own is not reported again by the
    # haystacks that list it.
    assert len(shown) == len(expected)
    assert "nothing was written" in str(exc.value)
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "out.json.tmp").exists()


def test_cross_domain_duplicates_and_missing_files(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    hay = json.loads((root / "haystacks" / "lme_v2_small.json").read_text())
    hay["q-dyn-2"] = ["t-web-02", "t-web-02"]
    hay["q-dyn-1"] = ["t-web-02"]
    (root / "haystacks" / "lme_v2_small.json").write_text(json.dumps(hay))
    ts = _rows(root / "trajectories.jsonl")
    _write_rows(root / "trajectories.jsonl", [*ts, ts[0]])
    qs = _rows(root / "questions.jsonl")
    qs[0]["question"] = "Why? " * 4000
    _write_rows(root / "questions.jsonl", qs)
    with pytest.raises(DatasetError) as exc:
        write_longmemeval_v2(root, tmp_path / "o.json")
    shown = "\n".join(str(p) for p in exc.value.problems)
    assert "$.q-dyn-2: trajectory id(s) listed twice: t-web-02" in shown
    assert "$.q-dyn-1: trajectory id(s) of another domain than the question's (enterprise): " \
        "t-web-02" in shown
    assert "trajectories.jsonl: line 6: id: 't-web-01' appears twice (first on line 1)" in shown
    assert "questions.jsonl: line 1: question: 20000 characters; a LENS prompt holds 19000" \
        in shown
    (root / "trajectories.jsonl").unlink()
    with pytest.raises(DatasetError, match=r"trajectories\.jsonl: file not found"):
        write_longmemeval_v2(root, tmp_path / "o.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DatasetError, match="no haystack file"):
        write_longmemeval_v2(empty, tmp_path / "o.json")


def test_deep_and_long_numbered_json_is_refused_through_the_cli(tmp_path: Path) -> None:
    # Through the guard (lens.core.jsonguard): a question line with a 5,000-digit integer is a
    # problem of its line, and a haystack nested 100,000 deep is refused, not a traceback.
    root = _copy(tmp_path)
    with (root / "questions.jsonl").open("a") as fh:
        fh.write('{"id": ' + "7" * 5_000 + "}\n")
    out = tmp_path / "out.json"
    proc = _lens("datasets", "import", "--format", "longmemeval-v2", str(root), "--out", str(out))
    assert proc.returncode == 2, proc.stderr
    assert "a number is too long to read (over 4,300 digits)" in proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()
    root = _copy(tmp_path / "deep")
    (root / "haystacks" / "lme_v2_small.json").write_text("[" * 100_000 + "]" * 100_000)
    proc = _lens("datasets", "import", "--format", "longmemeval-v2", str(root), "--out", str(out))
    assert proc.returncode == 2, proc.stderr
    assert "lme_v2_small.json: JSON nested more than 64 levels deep" in proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()


def test_eval_function_specs_read_as_the_benchmark_reads_them() -> None:
    assert parse_eval_spec("norm_phrase_set_match|lower=true|separators=,;|"
                           "require_non_empty=false") == (
        "norm_phrase_set_match", {"lower": True, "separators": [",", ";"],
                                  "require_non_empty": False})
    assert parse_eval_spec('norm_phrase_set_match|separators=[" / "]')[1] == {
        "separators": [" / "]}
    assert parse_eval_spec("mc_choice_match|strip_chars=.")[1] == {"strip_chars": "."}
    assert parse_eval_spec("llm_gotchas_checker|evaluator_model=x")[0] == "llm_gotchas_checker"
    for bad, why in (("exact", "unknown grading function"), ("mc_choice_match|x", "key=value"),
                     ("mc_choice_match|a=1|a=2", "given twice")):
        with pytest.raises(ValueError, match=why):
            parse_eval_spec(bad)


def test_cli_round_trip_and_bad_input_exits_2_without_writing(tmp_path: Path) -> None:
    out = tmp_path / "lme2.json"
    r = _lens("datasets", "import", "--format", "longmemeval-v2", str(FIX), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "6 scope(s), 13 episodes, 9 questions" in r.stdout
    assert ("text only: 28 trajectory screenshot(s) and 1 question image(s) are not passed"
            in r.stdout)
    assert check_dataset_file(out) == []
    assert len(load_dataset(out).questions) == 9
    root = _copy(tmp_path)
    _break_everything(root)
    bad = tmp_path / "bad.json"
    r = _lens("datasets", "import", "--format", "longmemeval-v2", str(root), "--out", str(bad))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "11 problem(s) in the LongMemEval-V2 data; nothing was written" in r.stderr
    assert "questions.jsonl: line 3: question_type: unknown question type 'workflow'" in r.stderr
    assert "Traceback" not in r.stderr
    assert not bad.exists() and not (tmp_path / "bad.json.tmp").exists()


def test_a_spec_option_the_harness_would_refuse_is_a_problem() -> None:
    # The phrase matchers hand their options to the normaliser: "separator" (singular) is an
    # error there, so it is one here.
    with pytest.raises(ValueError, match="takes no option 'separator'"):
        parse_eval_spec("norm_phrase_set_match|separator=,")
