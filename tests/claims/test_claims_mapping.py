"""A format lens has no reader for, reproduced by writing only a mapping file: JSON, JSON lines
and CSV, several judge runs, LoCoMo's category 5; and the mapping's errors (exit 2, each naming
the file, the field and the fix)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.support.cli import Lens, cli_runner

HERE = Path(__file__).parent
EXCERPT = HERE / "data" / "memobase" / "memobase_eval_0710_excerpt.json"


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _rows() -> list[dict[str, object]]:
    """Eight answers, three judge runs each; two in category 5."""
    out = []
    runs = [(1, 1, 1), (1, 1, 0), (1, 0, 0), (0, 0, 0), (1, 1, 1), (0, 1, 1), (1, 0, 1),
            (0, 0, 1)]
    for n, r in enumerate(runs):
        out.append({"qid": f"q{n}", "q": f"question {n}", "gold": f"gold {n}",
                    "pred": f"gold {n}" if r[0] else "something else",
                    "cat": 5 if n >= 6 else 1 + n % 4,
                    "judges": {"r1": r[0], "r2": r[1], "r3": r[2]}})
    return out


MAPPING = """\
items: results
fields:
  id: qid
  question: q
  gold: gold
  answer: pred
  category: cat
  verdicts: [judges.r1, judges.r2, judges.r3]
"""


def test_a_json_file_with_three_judge_runs_and_category_5(lens: Lens, tmp_path: Path) -> None:
    (tmp_path / "res.json").write_text(json.dumps({"results": _rows()}))
    (tmp_path / "map.yaml").write_text(MAPPING)
    published = {"source": "a vendor's blog", "rows": {"vendor": {"overall": 50.0}}}
    (tmp_path / "pub.json").write_text(json.dumps(published))
    r = lens("claims", "check", "res.json", "--mapping", "map.yaml", "--published", "pub.json",
             "--no-leniency")
    assert r.returncode == 0, r.stderr
    # Per answer: q0 3/3, q1 2/3, q2 1/3, q3 0/3, q4 3/3, q5 2/3, and in category 5 q6 2/3,
    # q7 1/3. Majority vote: 4 of 6 without category 5, 5 of 8 with it; the mean of the runs'
    # accuracies: 3.67 of 6 and 4.67 of 8. None prints as 50, and each is listed.
    for figure in ("66.67% (4 of 6)", "62.50% (5 of 8)", "61.11% (3.67 of 6)",
                   "58.33% (4.67 of 8)"):
        assert figure in r.stdout
    assert "1 answer(s) would have to flip from correct to wrong (a count of 3 of 6)" in r.stdout
    r = lens("claims", "check", "res.json", "--mapping", "map.yaml", "--runs", "majority",
             "--category5", "out", "--no-leniency")
    assert "majority vote per answer over 3 runs (a tie counts wrong), category 5 left out" \
        in r.stdout and "as named on the command line" in r.stdout
    # Neither named nor published: the default is the mean of the runs, and says it is a default.
    r = lens("claims", "check", "res.json", "--mapping", "map.yaml", "--no-leniency")
    assert "Arithmetic: mean of the 3 runs' accuracies" in r.stdout
    assert "no published figure to match: lens's default" in r.stdout
    assert "verdicts as stored" not in r.stdout


def test_the_same_results_as_json_lines_and_csv(lens: Lens, tmp_path: Path) -> None:
    rows = _rows()
    (tmp_path / "res.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with (tmp_path / "res.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["qid", "q", "gold", "pred", "cat", "r1", "r2", "r3"])
        for r in rows:
            j = r["judges"]
            assert isinstance(j, dict)
            w.writerow([r["qid"], r["q"], r["gold"], r["pred"], r["cat"], j["r1"], j["r2"],
                        j["r3"]])
    (tmp_path / "jl.yaml").write_text(MAPPING.replace("items: results\n", ""))
    (tmp_path / "csv.yaml").write_text(MAPPING.replace("items: results\n", "").replace(
        "judges.r1, judges.r2, judges.r3", "r1, r2, r3"))
    for data, mapping in (("res.jsonl", "jl.yaml"), ("res.csv", "csv.yaml")):
        out = lens("claims", "check", data, "--mapping", mapping, "--runs", "majority",
                   "--category5", "in", "--no-leniency")
        assert out.returncode == 0, out.stderr
        assert "62.50% (5 of 8)" in out.stdout, data


def test_a_mapping_reproduces_memobase_from_the_committed_excerpt(lens: Lens,
                                                                  tmp_path: Path) -> None:
    """The mem0 evaluation format, read by a mapping a user writes, gives the reader's figure."""
    (tmp_path / "mem0.yaml").write_text(
        'items: "*"\nfields:\n  question: question\n  gold: answer\n  answer: response\n'
        '  category: category\n  verdicts: [llm_score]\n  scores: [f1_score]\n')
    data = json.loads(EXCERPT.read_text())
    correct = sum(x["llm_score"] for v in data.values() for x in v)
    n = sum(len(v) for v in data.values())
    expect = f"{100 * correct / n:.2f}% ({correct} of {n})"
    by_mapping = lens("claims", "check", str(EXCERPT), "--mapping", "mem0.yaml", "--no-f1",
                      "--no-leniency", "--grader", "none")
    by_reader = lens("claims", "check", str(EXCERPT), "--reader", "memobase", "--no-f1",
                     "--no-leniency", "--grader", "none")
    assert by_mapping.returncode == by_reader.returncode == 0, by_mapping.stderr
    assert expect in by_mapping.stdout and expect in by_reader.stdout
    # The reader knows memobase's own labels of the categories; a mapping may declare them.
    assert "single_hop (their code)" in by_reader.stdout


def test_a_bad_mapping_names_every_problem_and_exits_2(lens: Lens, tmp_path: Path) -> None:
    (tmp_path / "res.json").write_text(json.dumps({"results": _rows()}))
    (tmp_path / "bad.yaml").write_text("items: results\nformat: xml\nfields:\n  question: q\n"
                                       "  gold: gold\n  verdict: [x]\n")
    r = lens("claims", "check", "res.json", "--mapping", "bad.yaml")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert "bad.yaml: the mapping has 3 problem(s)" in r.stderr
    assert "field 'format'" in r.stderr and "json, jsonl or csv" in r.stderr
    assert "field 'fields.answer': missing" in r.stderr
    assert "field 'fields.verdict': not a mapping field" in r.stderr
    assert not (tmp_path / "out").exists()


def test_a_mapping_whose_fields_are_not_in_the_file(lens: Lens, tmp_path: Path) -> None:
    (tmp_path / "res.json").write_text(json.dumps({"results": _rows()}))
    (tmp_path / "map.yaml").write_text(MAPPING.replace("answer: pred", "answer: prediction"))
    r = lens("claims", "check", "res.json", "--mapping", "map.yaml", "--out", "out")
    assert r.returncode == 2
    assert "res.json: 8 problem(s) reading it with map.yaml" in r.stderr
    assert "item 0: no field 'prediction' (fields.answer in map.yaml)" in r.stderr
    (tmp_path / "map.yaml").write_text(MAPPING.replace("items: results", "items: rows"))
    r = lens("claims", "check", "res.json", "--mapping", "map.yaml", "--out", "out")
    assert r.returncode == 2 and "no items at 'rows'" in r.stderr
    assert not (tmp_path / "out").exists()


def test_a_results_file_that_is_not_json(lens: Lens, tmp_path: Path) -> None:
    (tmp_path / "res.json").write_text('{"results": [')
    (tmp_path / "map.yaml").write_text(MAPPING)
    r = lens("claims", "check", "res.json", "--mapping", "map.yaml")
    assert r.returncode == 2 and "invalid JSON at line 1" in r.stderr
    r = lens("claims", "check", "missing.json", "--reader", "zep")
    assert r.returncode == 2 and "missing.json: no such file" in r.stderr
    r = lens("claims", "check", "res.json")
    assert r.returncode == 2 and "--reader" in r.stderr
    r = lens("claims", "check", str(EXCERPT), str(EXCERPT), "--reader", "memobase")
    assert r.returncode == 2 and "memobase reads 1" in r.stderr and "left unread" in r.stderr


TABLE = """\
source: the mem0 paper's Table 1, LLM-judge column
columns: [Single-Hop, Multi-Hop, Open Domain, Temporal]
rows:
  Mem0: {Single-Hop: 67.13, Multi-Hop: 51.15, Open Domain: 72.93, Temporal: 55.51, overall: 66.88}
  Mem0-Graph: {Single-Hop: 65.71, Multi-Hop: 47.19, Open Domain: 75.71, Temporal: 58.13,
               overall: 68.44}
  LangMem: {Single-Hop: 62.23, Multi-Hop: 47.92, Open Domain: 71.12, Temporal: 23.43,
            overall: 58.10}
  Zep: {Single-Hop: 61.70, Multi-Hop: 41.35, Open Domain: 76.60, Temporal: 49.31, overall: 65.99}
  OpenAI: {Single-Hop: 63.79, Multi-Hop: 42.92, Open Domain: 62.29, Temporal: 21.71,
           overall: 52.90}
"""


def test_a_published_table_file_and_its_one_assignment(lens: Lens, tmp_path: Path) -> None:
    (tmp_path / "table.yaml").write_text(TABLE)
    r = lens("claims", "assign", "table.yaml")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("reproduces every row") == 1
    assert "Single-Hop = category 1, Multi-Hop = category 3, Open Domain = category 4, " \
           "Temporal = category 2 (not LoCoMo's own assignment)" in r.stdout
    (tmp_path / "bad.yaml").write_text(TABLE.replace("Temporal]", "Temporal, Adversarial]")
                                       .replace("source:", "sauce:"))
    bad = lens("claims", "assign", "bad.yaml")
    assert bad.returncode == 2
    assert "field 'source'" in bad.stderr and "field 'sauce'" in bad.stderr
    wrong = lens("claims", "assign", "nothing.yaml")
    assert wrong.returncode == 2 and "neither a built-in table" in wrong.stderr
