"""Dataset files too large to read whole: they load through the stream (held once, as models),
and a problem in one is reported as the first the stream meets, with its JSON path, never by
reading the file whole. The size limit is patched small here; one test crosses the real one."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from lens.commands.cli import main
from lens.core.errors import DatasetError
from lens.data import dataset_load
from lens.data.dataset_check import validate_raw
from lens.data.dataset_load import MAX_WHOLE_FILE_BYTES, check_dataset_file, load_dataset

ROOT = Path(__file__).resolve().parents[2]
SMALL = 2_000


def data(scopes: int = 3, episodes: int = 4) -> dict[str, Any]:
    out: dict[str, Any] = {"version": "0.1.0", "dataset_id": "big", "scopes": [],
                           "questions": []}
    for s in range(scopes):
        sid = f"s{s}"
        out["scopes"].append({"scope_id": sid, "episodes": [
            {"episode_id": f"{sid}_e{e}", "scope_id": sid,
             "timestamp": f"2024-01-{1 + e:02d}T10:00:00",
             "text": f"On day {e} the team in scope {s} moved the release of widget {e}."}
            for e in range(episodes)]})
        out["questions"].append({
            "question_id": f"{sid}_q", "scope_id": sid, "checkpoint_after": episodes,
            "question_type": "longitudinal", "prompt": "What happened to the widget release?",
            "ground_truth": {"canonical_answer": "It moved.",
                             "required_evidence_refs": [f"{sid}_e0"], "key_facts": []}})
    return out


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole-file limit of a few kilobytes, and a whole-file reader that fails the test if a
    file over it is ever read whole."""
    monkeypatch.setattr(dataset_load, "MAX_WHOLE_FILE_BYTES", SMALL)
    read_whole = dataset_load._read_json

    def guarded(path: Path) -> Any:
        assert path.stat().st_size <= SMALL, f"{path} was read whole"
        return read_whole(path)

    monkeypatch.setattr(dataset_load, "_read_json", guarded)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    assert path.stat().st_size > SMALL
    return path


def test_a_file_over_the_limit_loads_through_the_stream_as_it_would_whole(
        tmp_path: Path, small_limit: None) -> None:
    path = write(tmp_path / "big.json", json.dumps(data()))
    streamed = load_dataset(path)
    assert check_dataset_file(path) == []
    whole, problems = validate_raw(json.loads(path.read_text()), str(path))
    assert problems == [] and whole is not None
    assert streamed.model_dump() == whole.model_dump()
    assert streamed.content_hash() == whole.content_hash()


def hostile(tmp_path: Path, name: str, text: str) -> DatasetError:
    path = write(tmp_path / f"{name}.json", text)
    with pytest.raises(DatasetError) as exc:
        load_dataset(path)
    assert str(path) in exc.value.args[0] and "first problem" in exc.value.args[0]
    assert len(exc.value.problems) == 1
    assert check_dataset_file(path) == exc.value.problems
    return exc.value


@pytest.mark.parametrize(("name", "mutate", "location", "message"), [
    # One bad byte deep in the second scope: named there, not at the file's end.
    ("bad_json", lambda t: t.replace('"text": "On day 2 the team in scope 1',
                                     '"text": "On day 2 the team in scope 1", ,"x', 1),
     "$.scopes[1].episodes[2].text", "invalid JSON"),
    ("not_utf8", lambda t: t.replace("scope 1 moved the release of widget 3",
                                     "scope 1 moved \udcff", 1),
     "$.scopes[1].episodes[3].text", "UTF-8"),
    ("duplicate_key", lambda t: t.replace('"scope_id": "s2", "timestamp"',
                                          '"scope_id": "s2", "scope_id": "s2", "timestamp"', 1),
     "$.scopes[2].episodes[0].scope_id", "duplicate key 'scope_id'"),
    # NaN is no JSON: the stream's parser stops at it.
    ("not_finite", lambda t: t.replace('"checkpoint_after": 4', '"checkpoint_after": NaN', 1),
     "$.questions[0].checkpoint_after", "invalid JSON"),
    ("huge_number", lambda t: t.replace('"checkpoint_after": 4', '"checkpoint_after": 1e999', 1),
     "$.questions[0].checkpoint_after", "overflow"),
    ("bad_timestamp", lambda t: t.replace("2024-01-03T10:00:00", "yesterday", 2),
     "$.scopes[0].episodes[2].timestamp", "ISO-8601"),
    ("unknown_top_field", lambda t: t.replace('"questions":', '"questons": [], "questions":'),
     "$.questons", "unknown field"),
    ("scope_not_object", lambda t: t.replace('"scopes": [', '"scopes": [7, ', 1),
     "$.scopes[0]", "must be an object"),
    ("not_an_object", lambda t: "[" + t + "]", "$", "top level must be a JSON object"),
    ("between_scopes", lambda t: t.replace('}]}, {"scope_id": "s2"', '}]} {"scope_id": "s2"', 1),
     "$.scopes[2]", "invalid JSON"),
    ("trailing", lambda t: t + " {", "$", "trailing garbage"),
    ("bad_question_type", lambda t: t.replace('"longitudinal"', '"longitudnal"', 1),
     "$.questions[0].question_type", "longitudnal"),
])
def test_a_problem_in_a_file_over_the_limit_is_the_first_the_stream_meets(
        tmp_path: Path, small_limit: None, name: str, mutate: Any, location: str,
        message: str) -> None:
    text = mutate(json.dumps(data()))
    if name == "not_utf8":
        path = tmp_path / "not_utf8.json"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        with pytest.raises(DatasetError) as exc:
            load_dataset(path)
        error = exc.value
    else:
        error = hostile(tmp_path, name, text)
    problem = error.problems[0]
    assert problem.location == location, problem
    assert message in problem.message, problem


def test_the_same_problems_under_the_limit_are_all_listed_from_the_whole_file(
        tmp_path: Path) -> None:
    # Two bad timestamps: the whole-file reader names both; only over the limit is it one.
    text = json.dumps(data()).replace("2024-01-03T10:00:00", "yesterday")
    path = tmp_path / "small.json"
    path.write_text(text, encoding="utf-8")
    assert path.stat().st_size < MAX_WHOLE_FILE_BYTES
    with pytest.raises(DatasetError) as exc:
        load_dataset(path)
    assert len(exc.value.problems) == 3


def test_checks_across_scopes_list_every_problem_over_the_limit_too(
        tmp_path: Path, small_limit: None) -> None:
    # A streamed file that parses is checked as a whole (ids, checkpoints, refs).
    bad = data()
    bad["questions"][0]["checkpoint_after"] = 99
    bad["questions"][2]["ground_truth"]["required_evidence_refs"] = ["s0_e0"]
    path = write(tmp_path / "refs.json", json.dumps(bad))
    with pytest.raises(DatasetError) as exc:
        load_dataset(path)
    assert [p.location for p in exc.value.problems] == [
        "$.questions[0].checkpoint_after", "$.questions[2].ground_truth.required_evidence_refs[0]"]


def test_the_cli_runs_a_file_over_the_limit_and_names_the_problem_in_a_bad_one(
        tmp_path: Path, small_limit: None, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "big.json", json.dumps(data()))
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "big", "dataset": {"path": str(path)}, "adapters": [{"name": "sqlite_fts"}],
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs"),
        "cache": {"enabled": False}, "scoring": {"enabled": False}, "report": False,
    }), encoding="utf-8")
    assert main(["run", str(cfg)]) == 0
    events = next((tmp_path / "runs").glob("*/events.jsonl")).read_text().splitlines()
    done = [e for e in map(json.loads, events) if e["kind"] == "question_done"]
    assert len(done) == 3
    assert main(["datasets", "validate", str(path)]) == 0
    capsys.readouterr()
    path.write_text(path.read_text().replace('"s1_e1"', '"s1_e1", "meta": NaN', 1))
    assert main(["datasets", "validate", str(path)]) == 2
    out = capsys.readouterr().out
    assert "$.scopes[1].episodes[1].meta" in out and "invalid JSON" in out
    assert main(["run", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "first problem" in err and "$.scopes[1].episodes[1].meta" in err


def test_python_m_lens_names_the_first_problem_of_a_file_over_the_real_limit(
        tmp_path: Path) -> None:
    # Over the real limit with one bad byte near its end: the message comes from the stream
    # (reading whole would list it among "every problem" without "first problem").
    episode_text = "w " * 900_000
    big = data(scopes=1, episodes=1 + MAX_WHOLE_FILE_BYTES // (2 * 900_000))
    for ep in big["scopes"][0]["episodes"]:
        ep["text"] = episode_text
    text = json.dumps(big)
    cut = text.rindex('"timestamp"')
    path = tmp_path / "huge.json"
    path.write_text(text[:cut] + '"timestamp": 2024' + text[cut + len('"timestamp"'):],
                    encoding="utf-8")
    assert path.stat().st_size > MAX_WHOLE_FILE_BYTES
    proc = subprocess.run([sys.executable, "-m", "lens", "datasets", "validate", str(path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2, proc.stderr
    last = len(big["scopes"][0]["episodes"]) - 1
    assert f"$.scopes[0].episodes[{last}]" in proc.stdout and "invalid JSON" in proc.stdout


def test_the_file_hash_is_the_loaded_datasets_hash_with_one_scope_held_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lens.data.dataset import Scope
    from lens.data.dataset_load import file_content_hash

    src = data(scopes=4)
    src["meta"] = {"source": "é", "n": 1.5}
    # Questions before scopes in the file, though the hash takes scopes after questions.
    path = tmp_path / "d.json"
    path.write_text(json.dumps({k: src[k] for k in ("questions", "meta", "version", "scopes")},
                               ensure_ascii=False), encoding="utf-8")
    expected = load_dataset(path).content_hash()
    alive: list[int] = []
    validate = Scope.model_validate.__func__  # type: ignore[attr-defined]

    def scopes_alive() -> int:
        return len([o for o in gc.get_objects() if type(o) is Scope])

    def counting(cls: type[Scope], obj: Any, **kw: Any) -> Scope:
        alive.append(scopes_alive() - before)
        return validate(cls, obj, **kw)

    gc.collect()
    # Scopes other tests of the session still hold are not this hash's.
    before = scopes_alive()
    monkeypatch.setattr(Scope, "model_validate", classmethod(counting))
    assert file_content_hash(path) == expected
    # Each scope is dropped once hashed: at most the previous one is still unreleased.
    assert len(alive) == 8 and max(alive) <= 1
    # A file the stream cannot read names its problem as loading it does.
    path.write_text(path.read_text() + "x", encoding="utf-8")
    with pytest.raises(DatasetError, match="invalid JSON"):
        file_content_hash(path)
    for ds_path in (ROOT / "datasets").glob("*.json"):
        assert file_content_hash(ds_path) == load_dataset(ds_path).content_hash(), ds_path
