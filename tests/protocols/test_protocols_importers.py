"""Importers on hand-built files in the public formats, with their known variants, and the
streaming LongMemEval import that never holds the file whole."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lens.core.errors import DatasetError
from lens.data.dataset_load import load_dataset
from lens.data.importers import import_locomo, import_longmemeval, write_longmemeval
from tests.protocols.builders import locomo_source, longmemeval_source, write_source

ROOT = Path(__file__).resolve().parents[2]


def test_locomo_evidence_id_matching_no_turn_is_kept_and_counted(tmp_path: Path) -> None:
    data = import_locomo(write_source(tmp_path, "locomo10.json", locomo_source()))
    q4 = data["questions"][3]
    assert q4["meta"]["unresolved_evidence"] == ["D9:9"]
    # The resolvable id still points at its session.
    assert q4["ground_truth"]["required_evidence_refs"] == ["locomo_conv-1_s02"]
    assert data["meta"]["source"]["unresolved_evidence"] == 1
    assert [q["meta"]["category"] for q in data["questions"]] == [4, 1, 2, 3, 5, 5]


def test_longmemeval_abs_questions_and_haystack_sessions(tmp_path: Path) -> None:
    data = import_longmemeval(write_source(tmp_path, "lme.json", longmemeval_source()))
    by_id = {q["question_id"]: q for q in data["questions"]}
    abs_q = by_id["m2_abs"]
    assert abs_q["meta"]["abstention"] is True
    assert abs_q["question_type"] == "evidence_sufficiency"
    assert abs_q["ground_truth"]["key_facts"] == []
    assert by_id["m1"]["meta"]["abstention"] is False
    scope = next(s for s in data["scopes"] if s["scope_id"] == "lme_m1")
    # Both haystack sessions become episodes; the answer session holds the has_answer turn.
    assert [e["meta"]["session_id"] for e in scope["episodes"]] == ["noise_m1", "answer_m1"]
    assert scope["episodes"][1]["meta"]["answer_turns"] == [0]
    assert by_id["m1"]["ground_truth"]["required_evidence_refs"] == ["lme_m1_002"]


def test_streaming_import_gives_the_same_dataset(tmp_path: Path) -> None:
    src = write_source(tmp_path, "longmemeval_s.json", longmemeval_source())
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(import_longmemeval(src)))
    streamed = tmp_path / "streamed.json"
    counts = write_longmemeval(src, streamed)
    assert counts == {"scopes": 7, "episodes": 14, "questions": 7, "evidence_after_question": 0}
    a, b = load_dataset(whole), load_dataset(streamed)
    assert a.model_dump() == b.model_dump()


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d[4].pop("question_date"), "$[4].question_date: required field is missing"),
    (lambda d: d[2]["haystack_sessions"][1].append({"role": "user"}),
     "$[2].haystack_sessions[1][1]: a turn needs 'role' and a string 'content'"),
    (lambda d: d[5].update(question_type="multi-hop"), "$[5].question_type: unknown"),
    (lambda d: d[6].update(question_id="m1"), "$[6].question_id: 'm1' appears twice"),
])
def test_streaming_import_names_file_item_and_field(tmp_path: Path, mutate, where) -> None:
    data = longmemeval_source()
    mutate(data)
    src = write_source(tmp_path, "lme.json", data)
    out = tmp_path / "out.json"
    with pytest.raises(DatasetError) as exc:
        write_longmemeval(src, out)
    assert str(exc.value).startswith(f"{src}: ") and where in str(exc.value)
    assert not out.exists() and not (tmp_path / "out.json.tmp").exists()


def test_truncated_or_wrongly_shaped_files(tmp_path: Path) -> None:
    text = json.dumps(longmemeval_source())
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(DatasetError, match=r"cut.json: \$\[\d\]: invalid JSON"):
        write_longmemeval(cut, tmp_path / "o.json")
    obj = tmp_path / "obj.json"
    obj.write_text('{"items": []}')
    with pytest.raises(DatasetError, match=r"obj.json: \$: expected a JSON list of LongMemEval"):
        write_longmemeval(obj, tmp_path / "o.json")


def test_cli_streaming_import_error_exits_2(tmp_path: Path) -> None:
    data = longmemeval_source()
    data[3]["haystack_dates"][0] = "yesterday"
    src = write_source(tmp_path, "lme.json", data)
    out = tmp_path / "out.json"
    r = subprocess.run([sys.executable, "-m", "lens", "datasets", "import", "--format",
                        "longmemeval", str(src), "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "$[3].haystack_dates[0]: unrecognised date 'yesterday'" in r.stderr
    assert not out.exists()


def test_content_hash_fed_piecewise_equals_the_whole_dump(tmp_path: Path) -> None:
    from lens.data.dataset_hash import content_hash

    src = write_source(tmp_path, "longmemeval_s.json", longmemeval_source())
    out = tmp_path / "lme.json"
    write_longmemeval(src, out)
    for path in (out, ROOT / "datasets" / "quickstart.json"):
        ds = load_dataset(path)
        whole = content_hash(ds.model_dump(mode="json", exclude={"dataset_id"}))
        assert ds.content_hash() == whole


def test_datasets_load_one_scope_at_a_time_with_the_same_result_and_messages(
        tmp_path: Path) -> None:
    from lens.data.dataset_check import validate_raw
    from lens.data.dataset_load import _read_json, _stream_or_problem

    src = write_source(tmp_path, "longmemeval_s.json", longmemeval_source())
    good = tmp_path / "lme.json"
    write_longmemeval(src, good)
    for path in (good, ROOT / "datasets" / "quickstart.json"):
        streamed, _ = _stream_or_problem(path)
        whole, problems = validate_raw(_read_json(path), str(path))
        assert streamed is not None and whole is not None and problems == []
        assert streamed.model_dump() == whole.model_dump()
    data = json.loads(good.read_text())
    # Anything unusual is read whole, for the usual messages.
    for name, bad in [("extra", {**data, "questons": []}),
                      ("episode", {**data, "scopes": [{**data["scopes"][0], "episodes": 3}]}),
                      ("no_scopes", {k: v for k, v in data.items() if k != "scopes"}),
                      ("null_scopes", {**data, "scopes": None})]:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(bad))
        streamed, first = _stream_or_problem(path)
        assert streamed is None and first is not None, name
        with pytest.raises(DatasetError) as exc:
            load_dataset(path)
        assert exc.value.problems, name
    trailing = tmp_path / "trailing.json"
    trailing.write_text(good.read_text() + "{")
    with pytest.raises(DatasetError, match="invalid JSON"):
        load_dataset(trailing)
