"""BEAM and MemoryAgentBench importers: mapping on hand-written fixtures in the released formats
and their known variants, one clear error (file and field) for malformed input, exit 2 through
the CLI with nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from lens.commands.cli import main
from lens.core.errors import DatasetError
from lens.data.dataset_load import check_dataset_file, load_dataset
from lens.data.importers.beam import parse_anchor, write_beam
from lens.data.importers.memoryagentbench import chunk_context, write_memoryagentbench

FIX = Path(__file__).resolve().parent / "fixtures"
BEAM = FIX / "beam" / "chats"
MAB = FIX / "memoryagentbench_small.jsonl"


def _load(path: Path) -> dict[str, Any]:
    assert check_dataset_file(path) == []
    return json.loads(path.read_text(encoding="utf-8"))


def _beam_copy(tmp_path: Path) -> Path:
    root = tmp_path / "chats"
    shutil.copytree(BEAM, root)
    return root


# -- BEAM -----------------------------------------------------------------------------------------
def test_beam_turns_become_episodes_time_stamped_from_their_batch_anchor(tmp_path: Path) -> None:
    counts = write_beam(BEAM / "100K" / "1", tmp_path / "b.json")
    data = _load(tmp_path / "b.json")
    assert counts.pop("notes") == ["1 evidence id(s) matched no turn (kept in question meta)"]
    assert counts == {"scopes": 1, "episodes": 5, "questions": 10, "unresolved_evidence": 1}
    assert data["dataset_id"] == "beam-100K"
    (scope,) = data["scopes"]
    assert scope["scope_id"] == "beam_100K_1"
    assert scope["meta"] == {"source": "beam", "tier": "100K", "conversation_id": "1",
                             "chat_file": "chat.json"}
    eps = scope["episodes"]
    # Batch 1 is anchored March-15-2024, batch 2 April-05-2024; turns follow a minute apart.
    assert [e["timestamp"] for e in eps] == [
        "2024-03-15T00:00:00", "2024-03-15T00:01:00", "2024-04-05T00:00:00",
        "2024-04-05T00:01:00", "2024-04-05T00:02:00"]
    # A turn is the main question and everything up to the next one (follow-ups included).
    assert eps[1]["meta"]["message_ids"] == [2, 3, 4, 5]
    assert eps[1]["text"].startswith("user: I have never written any Flask routes")
    assert "\nassistant: Yes, authentication should come first." in eps[1]["text"]


def test_beam_questions_keep_rubric_ability_and_evidence(tmp_path: Path) -> None:
    write_beam(BEAM / "100K" / "1", tmp_path / "b.json")
    qs = {q["meta"]["ability"]: q for q in _load(tmp_path / "b.json")["questions"]}
    assert len(qs) == 10
    assert {q["checkpoint_after"] for q in qs.values()} == {5}
    ie = qs["information_extraction"]
    assert ie["question_type"] == "null_hypothesis"
    assert ie["ground_truth"] == {"canonical_answer": "March 29",
                                  "required_evidence_refs": ["beam_100K_1_t00001"],
                                  "key_facts": ["March 29"]}
    assert ie["meta"]["rubric"] == ["LLM response should state: March 29"]
    # The answer lives under a different field per ability.
    assert qs["abstention"]["meta"]["answer_field"] == "ideal_response"
    assert qs["contradiction_resolution"]["meta"]["answer_field"] == "ideal_answer"
    assert qs["summarization"]["meta"]["answer_field"] == "ideal_summary"
    assert qs["preference_following"]["meta"]["answer_field"] == "expected_compliance"
    assert qs["abstention"]["ground_truth"]["key_facts"] == []
    # source_chat_ids as a dict of lists, and absent (summarization) or None.
    assert qs["knowledge_update"]["ground_truth"]["required_evidence_refs"] == [
        "beam_100K_1_t00003", "beam_100K_1_t00004"]
    assert qs["summarization"]["ground_truth"]["required_evidence_refs"] == []
    # Message 99 is in no turn: kept, and counted.
    assert qs["multi_session_reasoning"]["meta"]["unresolved_evidence"] == [99]
    assert qs["event_ordering"]["meta"]["beam"]["ordering_tested"][0] == "1st: sprint plan"


def test_beam_10m_plans_and_whole_chats_folder(tmp_path: Path) -> None:
    counts = write_beam(BEAM, tmp_path / "all.json")
    data = _load(tmp_path / "all.json")
    assert counts["scopes"] == 2
    assert [s["scope_id"] for s in data["scopes"]] == ["beam_100K_1", "beam_10M_1"]
    ten = data["scopes"][1]["episodes"]
    assert [e["meta"]["plan"] for e in ten] == ["plan-1"] * 4 + ["plan-2"] * 2
    assert [e["timestamp"][:10] for e in ten] == ["2024-01-10"] * 2 + ["2024-02-02"] * 2 + [
        "2024-03-01"] * 2
    order = next(q for q in data["questions"] if q["question_id"] == "beam_10M_1_event_ordering_1")
    assert order["ground_truth"]["required_evidence_refs"] == ["beam_10M_1_t00001",
                                                               "beam_10M_1_t00005"]


def test_beam_hugging_face_batches_of_flat_messages_and_missing_anchors(tmp_path: Path) -> None:
    root = _beam_copy(tmp_path)
    chat = root / "100K" / "1" / "chat.json"
    batches = json.loads(chat.read_text())
    flat = [[m for turn in b["turns"] for m in turn] for b in batches]
    del flat[1][0]["time_anchor"]
    chat.write_text(json.dumps(flat))
    write_beam(root / "100K" / "1", tmp_path / "flat.json")
    eps = _load(tmp_path / "flat.json")["scopes"][0]["episodes"]
    assert [e["meta"]["message_ids"] for e in eps] == [[0, 1], [2, 3, 4, 5], [6, 7], [8, 9],
                                                       [10, 11, 12, 13]]
    # Batch 2 lost its anchor: its turns follow batch 1's last turn, a minute apart.
    assert [e["timestamp"] for e in eps][1:] == ["2024-03-15T00:01:00", "2024-03-15T00:02:00",
                                                 "2024-03-15T00:03:00", "2024-03-15T00:04:00"]


def test_beam_anchor_formats() -> None:
    assert parse_anchor("March-15-2024").isoformat() == "2024-03-15T00:00:00"
    assert parse_anchor("Sept 5, 2024").isoformat() == "2024-09-05T00:00:00"
    for bad in ("15-03-2024", "Ma-15-2024", "February-30-2024"):
        with pytest.raises(ValueError, match="time_anchor"):
            parse_anchor(bad)


def _break_chat(root: Path, edit: Any) -> None:
    chat = root / "100K" / "1" / "chat.json"
    data = json.loads(chat.read_text())
    edit(data)
    chat.write_text(json.dumps(data))


def _break_questions(root: Path, edit: Any) -> None:
    path = root / "100K" / "1" / "probing_questions" / "probing_questions.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(("chat_edit", "q_edit", "where", "message"), [
    (lambda d: d[1]["turns"][0][0].update(time_anchor="sometime"), None,
     "chat.json: $[1]", "unrecognised time_anchor 'sometime'"),
    (lambda d: d[0]["turns"][1][2].pop("content"), None,
     "chat.json: $[0].turns[1][2]", "needs a string 'role' and a string 'content'"),
    (lambda d: d[0].update(turns="none"), None, "chat.json: $[0].turns", "expected a list"),
    (None, lambda d: d["knowledge_update"][0].pop("rubric"),
     "probing_questions.json: $.knowledge_update[0].rubric", "required field is missing"),
    (None, lambda d: d["abstention"][0].update(rubric=[]),
     "probing_questions.json: $.abstention[0].rubric", "non-empty list"),
    (None, lambda d: d.update(mind_reading=[]),
     "probing_questions.json: $.mind_reading", "unknown ability 'mind_reading'"),
    (None, lambda d: d["temporal_reasoning"][0].pop("answer"),
     "probing_questions.json: $.temporal_reasoning[0]", "no reference answer: expected one of"),
])
def test_beam_malformed_input_names_file_and_field(tmp_path: Path, chat_edit: Any, q_edit: Any,
                                                    where: str, message: str) -> None:
    root = _beam_copy(tmp_path)
    if chat_edit:
        _break_chat(root, chat_edit)
    if q_edit:
        _break_questions(root, q_edit)
    with pytest.raises(DatasetError) as exc:
        write_beam(root, tmp_path / "out.json")
    assert where in str(exc.value) and message in str(exc.value)
    assert not (tmp_path / "out.json").exists()
    assert not (tmp_path / "out.json.tmp").exists()


def test_beam_missing_parts_and_folders(tmp_path: Path) -> None:
    root = _beam_copy(tmp_path)
    (root / "100K" / "1" / "probing_questions" / "probing_questions.json").unlink()
    with pytest.raises(DatasetError, match=r"probing_questions\.json: file not found"):
        write_beam(root / "100K", tmp_path / "o.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DatasetError, match="no BEAM conversation found"):
        write_beam(empty, tmp_path / "o.json")
    (root / "100K" / "1" / "chat.json").write_text('[{}, 7]')
    with pytest.raises(DatasetError, match=r"chat\.json: \$\[0\]\.turns: expected a list"):
        write_beam(root / "100K" / "1", tmp_path / "o.json")
    (root / "100K" / "1" / "chat.json").write_text('[{"batch_number": 1, "turns": []}, 7]')
    with pytest.raises(DatasetError, match=r"chat\.json: \$\[1\]: expected a batch"):
        write_beam(root / "100K" / "1", tmp_path / "o.json")
    (root / "100K" / "1" / "chat.json").write_text('[{"batch_number": 1, "turns": [[{"ro')
    with pytest.raises(DatasetError, match=r"chat\.json: invalid JSON"):
        write_beam(root / "100K" / "1", tmp_path / "o.json")


def test_beam_import_cli_writes_and_bad_input_exits_2_without_writing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "beam.json"
    assert main(["datasets", "import", "--format", "beam", str(BEAM), "--out", str(out)]) == 0
    assert "2 scope(s), 11 episodes, 12 questions" in capsys.readouterr().out
    assert len(load_dataset(out).questions) == 12
    root = _beam_copy(tmp_path)
    _break_questions(root, lambda d: d["summarization"][0].pop("question"))
    bad = tmp_path / "bad.json"
    assert main(["datasets", "import", "--format", "beam", str(root), "--out", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "probing_questions.json: $.summarization[0].question: required field is missing" in err
    assert not bad.exists()


# -- MemoryAgentBench -----------------------------------------------------------------------------
def test_mab_rows_become_scopes_of_chunks_with_their_questions(tmp_path: Path) -> None:
    counts = write_memoryagentbench(MAB, tmp_path / "m.json", chunk_tokens=16)
    data = _load(tmp_path / "m.json")
    assert counts["scopes"] == 8 and counts["questions"] == 12
    ev = data["scopes"][0]
    assert ev["scope_id"] == "mab_eventqa_full_001"
    assert ev["meta"]["competency"] == "Accurate_Retrieval"
    # Chunks are cut at sentence ends and replay the context in order.
    texts = [e["text"] for e in ev["episodes"]]
    assert texts[0] == "Mara left the harbour at dawn."
    assert " ".join(texts).startswith("Mara left the harbour at dawn. The storm caught her boat")
    assert [e["timestamp"] for e in ev["episodes"]][:2] == ["2024-01-01T00:00:00",
                                                            "2024-01-01T00:01:00"]
    qs = {q["question_id"]: q for q in data["questions"]}
    second = qs["mab_eventqa_full_001_q0002"]
    assert second["checkpoint_after"] == len(ev["episodes"])
    assert second["meta"]["answers"] == ["Mara and the keeper", "the keeper and Mara"]
    assert second["meta"]["qa_pair_id"] == "eventqa_full-1"
    assert second["meta"]["previous_event"] == "The storm caught her"
    assert second["ground_truth"]["canonical_answer"] == "Mara and the keeper"
    # The one summary question takes every answer; its key points travel in meta.
    summary = qs["mab_infbench_sum_eng_shots2_005_q0001"]
    assert summary["meta"]["keypoints"][0] == "Mara sails at dawn"
    lme = qs["mab_longmemeval_s_004_q0002"]
    assert (lme["meta"]["question_id"], lme["meta"]["question_type"]) == ("m2_abs",
                                                                         "multi-session")
    assert "How often did I visit the dentist?" in lme["prompt"]
    icl = qs["mab_icl_banking77_5900shot_balance_003_q0001"]
    assert '"label: N"' in icl["prompt"] and icl["meta"]["competency"] == "Test_Time_Learning"


def test_mab_release_variants_old_field_names_and_json_list(tmp_path: Path) -> None:
    write_memoryagentbench(FIX / "memoryagentbench_old.json", tmp_path / "o.json")
    (q1, q2) = _load(tmp_path / "o.json")["questions"]
    assert q1["meta"]["sub_dataset"] == "factconsolidation_sh_6k"
    assert (q1["meta"]["answers"], q2["meta"]["answers"]) == (["Marxton"], ["Rufus"])
    assert (q1["meta"]["qa_pair_id"], q2["meta"]["qa_pair_id"]) == ("u-0", "u-1")


def test_mab_chunking_keeps_sentences_and_never_makes_empty_chunks() -> None:
    text = "A short one. " + "x" * 400 + ". Another short one!\n\nLast line"
    chunks = chunk_context(text, 16)
    assert chunks == ["A short one.", "x" * 400 + ".", "Another short one! Last line"]
    assert chunk_context("   \n ", 16) == []


@pytest.mark.parametrize(("edit", "where", "message"), [
    (lambda r: r.pop("context"), "$[2].context", "required field is missing"),
    (lambda r: r["metadata"].update(source="mystery_bench"), "$[2].metadata.source",
     "unknown sub-dataset 'mystery_bench'"),
    (lambda r: r["metadata"].pop("source"), "$[2].metadata.source", "required field is missing"),
    (lambda r: r.update(answers=[["1"], ["2"], ["3"]]), "$[2].answers",
     "3 answers for 2 questions"),
    (lambda r: r.update(questions=[]), "$[2].questions", "the row has no question"),
])
def test_mab_malformed_rows_name_file_and_field(tmp_path: Path, edit: Any, where: str,
                                                message: str) -> None:
    rows = [json.loads(line) for line in MAB.read_text().splitlines()]
    edit(rows[2])
    src = tmp_path / "rows.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(DatasetError) as exc:
        write_memoryagentbench(src, tmp_path / "out.json")
    assert f"rows.jsonl: {where}: {message}" in str(exc.value)
    assert not (tmp_path / "out.json").exists()


def test_mab_cli_chunk_option_and_bad_line_exit_2(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m.json"
    assert main(["datasets", "import", "--format", "memoryagentbench", str(MAB), "--out",
                 str(out), "--chunk-tokens", "32"]) == 0
    assert "8 scope(s)" in capsys.readouterr().out
    assert load_dataset(out).scopes[0].meta["chunk_tokens"] == 32
    src = tmp_path / "bad.jsonl"
    src.write_text(MAB.read_text() + "{not json\n")
    bad = tmp_path / "bad.json"
    assert main(["datasets", "import", "--format", "memoryagentbench", str(src), "--out",
                 str(bad)]) == 2
    assert "bad.jsonl: line 9: invalid JSON" in capsys.readouterr().err
    assert not bad.exists()
    assert main(["datasets", "import", "--format", "beam", str(BEAM), "--out", str(bad),
                 "--chunk-tokens", "32"]) == 2
    assert "--chunk-tokens applies to --format memoryagentbench only" in capsys.readouterr().err


def test_mab_parquet_split_as_released_imports_like_its_json_lines(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow", reason="the benchmarks extra (pyarrow) is not installed")
    import pyarrow.parquet as pq

    rows = [json.loads(line) for line in MAB.read_text().splitlines()]
    # The Hugging Face schema: every row has every metadata field, missing ones null.
    table = pa.Table.from_pylist(rows)
    pq.write_table(table, tmp_path / "Accurate_Retrieval-00000-of-00001.parquet",
                   row_group_size=3)
    write_memoryagentbench(tmp_path / "Accurate_Retrieval-00000-of-00001.parquet",
                           tmp_path / "p.json")
    write_memoryagentbench(MAB, tmp_path / "j.json")
    from_parquet, from_lines = _load(tmp_path / "p.json"), _load(tmp_path / "j.json")
    assert from_parquet["scopes"] == from_lines["scopes"]
    assert [q["meta"]["answers"] for q in from_parquet["questions"]] == [
        q["meta"]["answers"] for q in from_lines["questions"]]
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(DatasetError, match=r"broken\.parquet: not a readable Parquet file"):
        write_memoryagentbench(tmp_path / "broken.parquet", tmp_path / "x.json")
