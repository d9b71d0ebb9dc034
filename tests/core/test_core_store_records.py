"""Question records in the run store: one append-only file, committed by the event that names
each record's offset and length."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from lens.runs.records import QuestionRecord
from lens.runs.store import RECORDS, RunStore


def record(qid: str, answer: str = "", unit: str = "a|s|r0") -> QuestionRecord:
    return QuestionRecord(unit_key=unit, adapter="a", scope_id="s", repeat=0, question_id=qid,
                          checkpoint=1, status="answered", answer=answer or f"answer {qid} ü")


def test_records_round_trip_in_commit_order(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "t", "x")
    for i in range(5):
        store.save_question(record(f"q{i}"))
    store.close()
    loaded = RunStore.open(store.root).load_records()
    assert [r.question_id for r in loaded] == [f"q{i}" for i in range(5)]
    assert loaded[2].answer == "answer q2 ü"
    events = [e for e in store.events() if e["kind"] == "question_done"]
    data = (store.root / RECORDS).read_bytes()
    for e in events:
        line = data[e["offset"]:e["offset"] + e["length"]]
        assert line.endswith(b"\n")
        assert json.loads(line)["question_id"] == e["question_id"]


def test_a_record_without_its_event_is_never_read(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "t", "x")
    store.save_question(record("q0"))
    store.close()
    # A crash after the record was written but before its event: a whole uncommitted record,
    # then a torn one.
    with open(store.root / RECORDS, "ab") as fh:
        fh.write(record("ghost").model_dump_json().encode() + b"\n")
        fh.write(b'{"unit_key": "a|s|r0", "question_id": "torn", "ans')
    reopened = RunStore.open(store.root)
    assert set(reopened.committed_questions()) == {"a|s|r0|q0"}
    # Appends after the torn bytes are still read back exactly.
    reopened.save_question(record("q1"))
    reopened.close()
    assert [r.question_id for r in RunStore.open(store.root).load_records()] == ["q0", "q1"]


def test_an_event_whose_record_is_missing_is_not_committed(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "t", "x")
    store.save_question(record("q0"))
    store.save_question(record("q1"))
    store.close()
    # The records file lost its tail (e.g. restored from an older copy): q1's bytes are gone.
    events = [e for e in store.events() if e["kind"] == "question_done"]
    with open(store.root / RECORDS, "r+b") as fh:
        fh.truncate(events[1]["offset"] + 10)
    reopened = RunStore.open(store.root)
    assert set(reopened.committed_questions()) == {"a|s|r0|q0"}
    assert [r.question_id for r in reopened.load_records()] == ["q0"]


def test_run_directories_with_one_file_per_record_still_load(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "t", "x")
    rel = "records/a_s_r0/q0.json"
    (store.root / rel).parent.mkdir(parents=True)
    (store.root / rel).write_text(record("q0").model_dump_json(indent=1))
    store.append_event("question_done", "a|s|r0|q0", unit="a|s|r0", question_id="q0",
                       status="answered", record=rel, tokens=0)
    store.append_event("question_done", "a|s|r0|q9", unit="a|s|r0", question_id="q9",
                       status="answered", record="records/a_s_r0/q9.json", tokens=0)
    store.save_question(record("q1"))
    store.close()
    reopened = RunStore.open(store.root)
    assert set(reopened.committed_questions()) == {"a|s|r0|q0", "a|s|r0|q1"}
    assert [r.question_id for r in reopened.load_records()] == ["q0", "q1"]


def test_concurrent_saves_all_commit_with_shared_fsyncs(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "t", "x")
    threads = [threading.Thread(target=lambda k=k: [store.save_question(record(f"t{k}-{i}"))
                                                  for i in range(25)]) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.close()
    loaded = RunStore.open(store.root).load_records()
    assert sorted(r.question_id for r in loaded) == sorted(
        f"t{k}-{i}" for k in range(8) for i in range(25))
    seqs = [e["seq"] for e in store.events()]
    assert seqs == list(range(1, len(seqs) + 1))


def test_records_saved_together_each_name_their_own_bytes(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, "t", "x")
    store.save_question(record("q0"))
    store.save_questions([record("q1", answer="ü" * 50), record("q2"), record("q3")])
    store.close()
    data = (store.root / RECORDS).read_bytes()
    events = [e for e in store.events() if e["kind"] == "question_done"]
    assert [e["question_id"] for e in events] == ["q0", "q1", "q2", "q3"]
    for e in events:
        assert json.loads(data[e["offset"]:e["offset"] + e["length"]])["question_id"] == (
            e["question_id"])
    assert [r.answer for r in RunStore.open(store.root).load_records()][1] == "ü" * 50
