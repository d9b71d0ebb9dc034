"""LoCoMo and LongMemEval importers: mapping on hand-written fixtures in the public formats,
clear errors for malformed items, and full-size files synthesised in the same shape."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lens.core.errors import DatasetError
from lens.data.dataset_check import validate_raw
from lens.data.importers import import_locomo, import_longmemeval
from lens.data.importers.locomo import parse_locomo_date
from lens.data.importers.longmemeval import parse_lme_date

ROOT = Path(__file__).resolve().parents[2]
FIX = Path(__file__).resolve().parent / "fixtures"


def _valid(data: dict[str, Any]) -> None:
    ds, problems = validate_raw(data, "imported")
    assert ds is not None and problems == [], problems[:3]


# -- LoCoMo ---------------------------------------------------------------------------------------
def test_locomo_sessions_become_timestamped_episodes_of_one_scope_per_conversation() -> None:
    data = import_locomo(FIX / "locomo_small.json")
    _valid(data)
    assert [s["scope_id"] for s in data["scopes"]] == ["locomo_conv-a", "locomo_conv-b"]
    eps = data["scopes"][0]["episodes"]
    # session_4 is empty and is skipped
    assert [e["episode_id"] for e in eps] == ["locomo_conv-a_s01", "locomo_conv-a_s02",
                                              "locomo_conv-a_s03"]
    assert [e["timestamp"] for e in eps] == ["2023-05-18T13:47:00", "2023-06-02T10:05:00",
                                             "2023-06-20T20:30:00"]
    assert "Maya: I adopted a greyhound called Pixel" in eps[0]["text"]
    assert "[shares a photo: a grey dog lying on a sofa]" in eps[0]["text"]


def test_locomo_questions_map_categories_evidence_and_are_asked_after_the_last_session() -> None:
    data = import_locomo(FIX / "locomo_small.json")
    qs = {q["prompt"]: q for q in data["questions"]}
    assert all(q["checkpoint_after"] == 3 for q in data["questions"] if q["scope_id"] ==
               "locomo_conv-a")
    dog = qs["What is the name of Maya's dog?"]
    assert dog["question_type"] == "null_hypothesis"
    assert dog["meta"]["category"] == 4 and dog["meta"]["category_name"] == "single-hop"
    assert dog["ground_truth"] == {"canonical_answer": "Pixel",
                                   "required_evidence_refs": ["locomo_conv-a_s01"],
                                   "key_facts": ["Pixel"]}
    multi = qs["Which activities did Maya do with Pixel?"]
    assert multi["question_type"] == "longitudinal"
    # "D3:1; D3:3" packs two ids into one string: both resolve to session 3
    assert multi["ground_truth"]["required_evidence_refs"] == ["locomo_conv-a_s01",
                                                               "locomo_conv-a_s03"]
    assert qs["When did Maya and Pixel take a puppy class?"]["question_type"] == "temporal"
    assert qs["Would Jonas likely enjoy a running holiday?"]["question_type"] == "counterfactual"
    adv = qs["When is Maya's half marathon?"]
    assert adv["question_type"] == "negative"
    assert adv["meta"]["adversarial_answer"] == "15 October"
    assert adv["ground_truth"]["key_facts"] == []
    year = qs["What year is it?"]
    assert year["ground_truth"]["canonical_answer"] == "2023"  # numeric answers become text
    assert year["meta"]["unresolved_evidence"] == ["D9:9"]
    assert data["meta"]["source"]["unresolved_evidence"] == 1


def test_locomo_date_formats() -> None:
    assert parse_locomo_date("1:47 pm on 18 May, 2023").isoformat() == "2023-05-18T13:47:00"
    assert parse_locomo_date("10:05 am on 2 June, 2023").hour == 10
    assert parse_locomo_date("12:15 am on 1 Jan, 2024").isoformat() == "2024-01-01T00:15:00"
    assert parse_locomo_date("12:15 pm on 1 Jan, 2024").hour == 12
    assert parse_locomo_date("8:30 PM on July 4, 2023").isoformat() == "2023-07-04T20:30:00"
    for bad in ["yesterday", "13:10 pm on 1 May, 2023", "1:10 pm on 31 June, 2023",
                "1:10 pm on 3 Mayday, 2023"]:
        with pytest.raises(ValueError, match="unrecognised date"):
            parse_locomo_date(bad)


def _locomo() -> list[dict[str, Any]]:
    return json.loads((FIX / "locomo_small.json").read_text())


@pytest.mark.parametrize("mutate, path, needle", [
    (lambda d: d[1].pop("qa"), "$[1].qa", "required field is missing"),
    (lambda d: d[0]["qa"][2].update(category=9), "$[0].qa[2].category", "unknown category 9"),
    (lambda d: d[0]["qa"][0].update(category="4"), "$[0].qa[0].category", "expected int"),
    (lambda d: d[0]["conversation"].update(session_2_date_time="someday"),
     "$[0].conversation.session_2_date_time", "unrecognised date"),
    (lambda d: d[0]["conversation"]["session_1"][1].pop("text"),
     "$[0].conversation.session_1[1]", "needs 'speaker' and 'text'"),
    (lambda d: d[0]["qa"][0].pop("answer"), "$[0].qa[0].answer", "required field is missing"),
])
def test_locomo_malformed_items_name_file_and_json_path(tmp_path: Path, mutate: Any, path: str,
                                                         needle: str) -> None:
    data = _locomo()
    mutate(data)
    src = tmp_path / "locomo10.json"
    src.write_text(json.dumps(data))
    with pytest.raises(DatasetError) as exc:
        import_locomo(src)
    assert str(exc.value).startswith(f"{src}: {path}: ")
    assert needle in str(exc.value)


def test_locomo_top_level_must_be_a_list(tmp_path: Path) -> None:
    src = tmp_path / "x.json"
    src.write_text('{"conversation": {}}')
    with pytest.raises(DatasetError, match=r"\$: expected a JSON list of LoCoMo samples"):
        import_locomo(src)


# -- LongMemEval ----------------------------------------------------------------------------------
def test_longmemeval_items_become_scopes_of_sessions_with_one_question() -> None:
    data = import_longmemeval(FIX / "longmemeval_small.json")
    _valid(data)
    assert len(data["scopes"]) == 4 and len(data["questions"]) == 4
    first = data["scopes"][0]
    assert [e["timestamp"] for e in first["episodes"]] == [
        "2023-05-20T02:21:00", "2023-05-22T14:02:00", "2023-05-25T09:15:00"]
    assert first["episodes"][1]["meta"] == {"session_id": "answer_280352e9", "answer_turns": [0]}
    assert "user: I graduated with a degree in Business Administration" in \
        first["episodes"][1]["text"]
    q = {x["question_id"]: x for x in data["questions"]}
    assert q["e47becba"]["question_type"] == "null_hypothesis"
    assert q["e47becba"]["ground_truth"]["required_evidence_refs"] == ["lme_e47becba_002"]
    assert q["e47becba"]["ground_truth"]["key_facts"] == ["Business Administration"]
    ku = q["gpt4_2f8be40d"]
    assert ku["question_type"] == "distractor_resistance"
    assert ku["meta"]["question_type"] == "knowledge-update"
    assert ku["ground_truth"]["canonical_answer"] == "4"
    assert len(ku["ground_truth"]["required_evidence_refs"]) == 2
    abs_q = q["0a995998_abs"]
    assert abs_q["question_type"] == "evidence_sufficiency"
    assert abs_q["meta"]["abstention"] is True and abs_q["ground_truth"]["key_facts"] == []
    # Every question is asked after its whole haystack, at its question date; a haystack with
    # a session dated after that date is marked so, never cut or refused.
    assert all(x["checkpoint_after"] == len(data["scopes"][i]["episodes"])
               for i, x in enumerate(data["questions"]))
    late = q["gpt4_93159ced"]
    assert late["question_type"] == "temporal"
    assert late["allow_later_episodes"] is True
    assert late["asked_at"] == "2023-04-01T10:00:00"
    assert "allow_later_episodes" not in q["e47becba"]
    assert q["e47becba"]["asked_at"] == parse_lme_date(
        q["e47becba"]["meta"]["question_date"]).isoformat()


def test_longmemeval_date_formats() -> None:
    assert parse_lme_date("2023/05/20 (Sat) 02:21").isoformat() == "2023-05-20T02:21:00"
    assert parse_lme_date("2023/05/20").isoformat() == "2023-05-20T00:00:00"
    for bad in ["20 May", "2023/13/01 (Sun) 10:00", "2023/05/20 (Sat) 25:00"]:
        with pytest.raises(ValueError, match="unrecognised date"):
            parse_lme_date(bad)


def _lme() -> list[dict[str, Any]]:
    return json.loads((FIX / "longmemeval_small.json").read_text())


@pytest.mark.parametrize("mutate, path, needle", [
    (lambda d: d[0].pop("question"), "$[0].question", "required field is missing"),
    (lambda d: d[1]["haystack_dates"].pop(), "$[1]", "differ in length"),
    (lambda d: d[2].update(question_type="vibes"), "$[2].question_type",
     "unknown question_type 'vibes'"),
    (lambda d: d[0]["haystack_dates"].__setitem__(1, "soon"), "$[0].haystack_dates[1]",
     "unrecognised date"),
    (lambda d: d[3]["haystack_sessions"][0].__setitem__(0, {"role": "user"}),
     "$[3].haystack_sessions[0][0]", "string 'content'"),
    (lambda d: d[1].update(haystack_sessions="nope"), "$[1].haystack_sessions",
     "expected list"),
])
def test_longmemeval_malformed_items_name_file_and_json_path(tmp_path: Path, mutate: Any,
                                                              path: str, needle: str) -> None:
    data = _lme()
    mutate(data)
    src = tmp_path / "longmemeval_s.json"
    src.write_text(json.dumps(data))
    with pytest.raises(DatasetError) as exc:
        import_longmemeval(src)
    assert str(exc.value).startswith(f"{src}: {path}: ")
    assert needle in str(exc.value)


# -- full-size shapes -----------------------------------------------------------------------------
def synth_locomo(samples: int, sessions: int, turns: int, qa: int) -> list[dict[str, Any]]:
    out = []
    for s in range(samples):
        conv: dict[str, Any] = {"speaker_a": "A", "speaker_b": "B"}
        for n in range(1, sessions + 1):
            conv[f"session_{n}_date_time"] = (f"{1 + n % 12}:{n % 60:02d} pm on {1 + n % 28} "
                                              "May, 2023")
            conv[f"session_{n}"] = [
                {"speaker": "AB"[t % 2], "dia_id": f"D{n}:{t + 1}",
                 "text": f"Turn {t} of session {n} in sample {s}: I went hiking near lake {t}."}
                for t in range(turns)]
        items = [{"question": f"Question {k}?", "answer": f"answer {k}",
                  "evidence": [f"D{1 + k % sessions}:{1 + k % turns}"],
                  "category": 1 + k % 4} for k in range(qa)]
        items.append({"question": "Adversarial?", "adversarial_answer": "x",
                      "evidence": ["D1:1"], "category": 5})
        out.append({"sample_id": f"conv-{s}", "conversation": conv, "qa": items})
    return out


def synth_longmemeval(items: int, sessions: int, turns: int) -> list[dict[str, Any]]:
    base = _lme()[0]
    out = []
    for i in range(items):
        item = copy.deepcopy(base)
        item["question_id"] = f"q{i:05d}" + ("_abs" if i % 30 == 0 else "")
        item["question_type"] = ["multi-session", "temporal-reasoning", "knowledge-update",
                                 "single-session-user"][i % 4]
        item["haystack_session_ids"] = [f"sess_{i}_{k}" for k in range(sessions)]
        item["haystack_dates"] = [f"2023/0{1 + k % 9}/{10 + k % 18} (Mon) 1{k % 10}:00"
                                  for k in range(sessions)]
        item["haystack_sessions"] = [[{"role": "user" if t % 2 == 0 else "assistant",
                                       "content": f"Message {t} of session {k}: some text."}
                                      for t in range(turns)] for k in range(sessions)]
        item["answer_session_ids"] = [f"sess_{i}_{sessions // 2}"]
        item["question_date"] = "2023/12/31 (Sun) 23:00"
        out.append(item)
    return out


def test_full_size_shaped_files_import_through_the_cli(tmp_path: Path) -> None:
    # Shaped like the public files: locomo10 (10 conversations, ~2,000 questions) and a
    # LongMemEval file with many items of many sessions (scaled down to keep the test quick).
    loc_src = tmp_path / "locomo10.json"
    loc_src.write_text(json.dumps(synth_locomo(10, 30, 20, 200)))
    lme_src = tmp_path / "longmemeval_s.json"
    lme_src.write_text(json.dumps(synth_longmemeval(120, 40, 10)))
    for fmt, src, scopes, questions in [("locomo", loc_src, 10, 2010),
                                        ("longmemeval", lme_src, 120, 120)]:
        out = tmp_path / f"{fmt}.lens.json"
        r = subprocess.run([sys.executable, "-m", "lens", "datasets", "import", "--format", fmt,
                            str(src), "--out", str(out)], cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert f"{scopes} scope(s)" in r.stdout and f"{questions} questions" in r.stdout
        v = subprocess.run([sys.executable, "-m", "lens", "datasets", "validate", str(out)],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert v.returncode == 0, v.stdout


def test_import_cli_error_exits_2_without_writing(tmp_path: Path) -> None:
    src = tmp_path / "locomo10.json"
    src.write_text("[{\"sample_id\": 1}]")
    out = tmp_path / "out.json"
    r = subprocess.run([sys.executable, "-m", "lens", "datasets", "import", "--format", "locomo",
                        str(src), "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert "$[0].conversation: required field is missing" in r.stderr
    assert not out.exists()


# -- conclusions ----------------------------------------------------------------------------------
def test_yes_no_answers_become_conclusions() -> None:
    qs = {q["prompt"]: q for q in import_locomo(FIX / "locomo_small.json")["questions"]}
    jonas = qs["Would Jonas likely enjoy a running holiday?"]["ground_truth"]
    assert jonas["conclusion"] == "yes"
    assert jonas["key_facts"] == ["Likely yes, he trains for a half marathon"]
    assert "conclusion" not in qs["What is the name of Maya's dog?"]["ground_truth"]


def test_a_bare_verdict_is_a_conclusion_and_no_key_fact(tmp_path: Path) -> None:
    items = json.loads((FIX / "longmemeval_small.json").read_text())
    items[0]["question"] = "Did I graduate?"
    items[0]["answer"] = "No."
    src = tmp_path / "lme.json"
    src.write_text(json.dumps(items))
    data = import_longmemeval(src)
    _valid(data)
    truth = data["questions"][0]["ground_truth"]
    assert truth["conclusion"] == "no" and truth["key_facts"] == []


def test_lens_files_gain_the_conclusions_their_answers_open_with(tmp_path: Path) -> None:
    raw = json.loads((ROOT / "datasets" / "quickstart.json").read_text())
    for q in raw["questions"]:
        q["ground_truth"].pop("conclusion", None)
    negative = next(q for q in raw["questions"] if q["question_type"] == "negative")
    assert negative["prompt"].startswith("Did ") and negative["ground_truth"][
        "canonical_answer"].startswith("No.")
    src, out = tmp_path / "published.json", tmp_path / "imported.json"
    src.write_text(json.dumps(raw))
    r = subprocess.run([sys.executable, "-m", "lens", "datasets", "import", "--format", "lens",
                        str(src), "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    imported = {q["question_id"]: q for q in json.loads(out.read_text())["questions"]}
    assert imported[negative["question_id"]]["ground_truth"]["conclusion"] == "no"
    # A "how" question has no yes/no conclusion, whatever its answer opens with.
    how = [q for q in imported.values() if q["prompt"].startswith("How ")]
    assert how and all("conclusion" not in q["ground_truth"] for q in how)


def test_published_lens_scopes_gain_conclusions() -> None:
    shared = ROOT.parent / "shared" / "lens-datasets"
    if not shared.is_dir():
        pytest.skip(f"the published LENS scopes are not beside the project ({shared})")
    from lens.data.importers import import_lens

    data = import_lens(shared / "scope_01_with_distractors.json")
    _valid(data)
    found = [q["ground_truth"]["conclusion"] for q in data["questions"]
             if "conclusion" in q["ground_truth"]]
    assert found.count("no") >= 5 and found.count("yes") >= 1
