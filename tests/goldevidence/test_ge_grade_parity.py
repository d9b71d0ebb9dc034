"""Every shared metric and every departure, graded in both modes on hand-built rows.

Expected values are worked out by hand from the definitions (docs/goldevidence.md): lens's
grader (``grade``) and the original's definitions (``grade --compat original``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from goldevidence.compat import GradeOptions, grade_original, prediction_index
from goldevidence.grade import GradeResult, grade

DOC = """# GoldEvidenceBench Episode H1

## Episode Log
- [U00000A] UPDATE step=1 SET tag.01 = amber-0001
- [UFFFFF0] UPDATE step=2 SET tag.02 = teal-0002
- DISTRACTOR step=2 tag.01 = jade-9999
- [U00000B] UPDATE step=3 SET tag.01 = crimson-0003
- [UAAAAAA] UPDATE step=3 NOTE tag.01 = violet-0004
- [U00000C] UPDATE step=4 CLEAR tag.02
"""

# tag.01 and tag.03 report to M1 at the end; tag.02 moved from M1 to M2; the NOTE is no change.
REL_DOC = """## Episode Log
- [U0000A1] UPDATE step=1 SET tag.01 = M1
- [U0000A2] UPDATE step=2 SET tag.02 = M1
- [U0000A3] UPDATE step=3 SET tag.02 = M2
- [U0000A4] UPDATE step=4 SET tag.03 = M1
- [U0000A5] UPDATE step=5 NOTE tag.04 = M1
"""

SET_DOC = """## Episode Log
- [U0000B1] UPDATE step=1 SET tag.01 = ash,birch
"""


def row(rid: str, key: str, value: str | None, support: list[str], *, doc: str = DOC,
        cite: bool = True, **meta: Any) -> dict[str, Any]:
    m = {"key": key, "state_mode": "kv", "requires_citation": cite, "query_type": "direct",
         **meta}
    return {"id": rid, "document": doc, "book": "", "question": "?",
            "gold": {"value": value, "support_ids": support}, "meta": m}


K1 = row("K1", "tag.01", "crimson-0003", ["U00000B"])
K2 = row("K2", "tag.02", None, ["U00000C"])
K3 = row("K3", "tag.03", None, [])  # never set: nothing to cite
K4 = row("K4", "tag.01", "amber-0001", ["U00000A"], as_of_step=2)
REPORTS = row("RP", "tag.01", "tag.01,tag.03", ["U0000A1", "U0000A4"], doc=REL_DOC,
              state_mode="relational", query_type="derived", derived_op="reports",
              derived_manager="M1")


def both(rows: list[dict[str, Any]], lines: list[dict[str, Any]], *, citations: str = "auto",
         k: int | None = None) -> tuple[GradeResult, Any]:
    """(lens, original) results on the same prediction lines."""
    lens = grade(rows, {str(p["id"]): p for p in lines}, citations=citations, max_support_k=k)
    orig = grade_original(rows, prediction_index(lines),
                          GradeOptions(citations=citations, max_support_k=k or 3))
    return lens, orig


def p(rid: str, value: Any = None, ids: list[str] | None = None, **extra: Any) -> dict:
    return {"id": rid, "value": value, "support_ids": ids or [], **extra}


# ---- shared metrics: the same value in both modes ------------------------------------------


def test_value_acc() -> None:
    lines = [p("K1", "crimson-0003", ["U00000B"]), p("K2", "teal-0002", ["UFFFFF0"]),
             p("K3", None), p("K4", "crimson-0003", ["U00000B"])]
    for g in both([K1, K2, K3, K4], lines):
        assert g.value_acc == 0.5  # K1 and K3 right; K2 and K4 wrong


def test_exact_acc_and_over_citation_fails_it() -> None:
    faithful = [p("K1", "crimson-0003", ["U00000B"]), p("K2", None, ["U00000C"]),
                p("K3", None), p("K4", "amber-0001", ["U00000A"])]
    for g in both([K1, K2, K3, K4], faithful):
        assert g.exact_acc == 1.0
    # The gold id plus a NOTE id: the scored list (2) is longer than the gold list (1).
    with_note = [p("K1", "crimson-0003", ["U00000B", "UAAAAAA"]), *faithful[1:]]
    # The gold id first among four: the first three are scored, still longer than one.
    first_of_four = [p("K1", "crimson-0003", ["U00000B", "U00000A", "UFFFFF0", "U00000C"]),
                     *faithful[1:]]
    for lines in (with_note, first_of_four):
        for g in both([K1, K2, K3, K4], lines):
            assert g.exact_acc == 0.75 and g.value_acc == 1.0


def test_cite_precision_recall_f1() -> None:
    lines = [p("K1", "crimson-0003", ["U00000B", "UAAAAAA"]), p("K2", None, [])]
    for g in both([K1, K2], lines):
        # K1: p 1/2, r 1, f1 2/3; K2: p 0, r 0, f1 0 (gold has one id, none cited).
        assert g.cite_precision == 0.25 and g.cite_recall == 0.5
        assert g.cite_f1 == pytest.approx(1 / 3)


def test_support_bloat_counts_repeated_ids() -> None:
    lines = [p("K1", "crimson-0003", ["U00000B", "U00000B"]), p("K2", None, ["U00000C"]),
             p("K3", None, ["U00000A"])]
    lens, orig = both([K1, K2, K3], lines)
    for g in (lens, orig):
        # K1's scored list [B, B] is longer than its gold [B]; K3 has no gold to exceed.
        assert g.support_bloat == pytest.approx(1 / 3)
        assert g.cite_f1 == pytest.approx(2 / 3)  # K1 1 (sets), K2 1, K3 0
        assert g.exact_acc == pytest.approx(2 / 3)  # the repeat costs K1 its exact credit
    assert lens.errors == {"duplicate_support_ids": 1}


def test_entailment_rate() -> None:
    lines = [p("K1", "crimson-0003", ["U00000A"]), p("K2", None, ["U00000C"])]
    for g in both([K1, K2], lines):
        assert g.entailment_rate == 0.5  # K1 cites the stale SET; K2's CLEAR implies null


def test_answer_correct_given_selected() -> None:
    lines = [p("K1", "crimson-0003", ["U00000B"]), p("K2", "teal-0002", ["U00000C"]),
             p("K3", None), p("K4", "amber-0001")]
    # Rows whose gold ids are all among the scored ids: K1 (right) and K2 (wrong value).
    # K3 has no gold ids and K4 cites nothing: neither counts.
    for citations in ("auto", "off"):
        for g in both([K1, K2, K3, K4], lines, citations=citations):
            assert g.answer_correct_given_selected == 0.5
    for g in both([K3, K4], lines[2:]):
        assert g.answer_correct_given_selected is None


def _twin_rows() -> list[dict[str, Any]]:
    out = []
    for variant, (v1, v2) in (("base", ("crimson-0003", "teal-0002")),
                              ("twin", ("indigo-0005", "teal-0002"))):
        for qi, v in ((1, v1), (2, v2)):
            out.append(row(f"{variant}-{qi}", f"tag.0{qi}", v, [], cite=False,
                           twin_group="E1", twin_variant=variant, q_index=qi))
    return out


def test_twin_consistency_and_flip_rate() -> None:
    rows = _twin_rows()
    right = [p(r["id"], r["gold"]["value"]) for r in rows]
    for g in both(rows, right):
        assert g.twin_consistency == 1.0 and g.twin_flip_rate == 1.0
    stuck = [*right[:1], p("twin-1", "crimson-0003"), *right[1:2], *right[3:]]
    for g in both(rows, stuck):
        # Pair 1's gold differs but the answers do not; pair 2 agrees as it should.
        assert g.twin_consistency == 0.5 and g.twin_flip_rate == 0.0
    for g in both([K1], [p("K1", "crimson-0003", ["U00000B"])]):
        assert g.twin_consistency is None and g.twin_flip_rate is None


def _instruction_rows() -> list[dict[str, Any]]:
    return [
        row("I1", "tag.01", "crimson-0003", [], cite=False, has_instruction=True,
            instruction_value="jade-1234"),  # conflicts with gold
        row("I2", "tag.01", "crimson-0003", [], cite=False, has_instruction=True,
            instruction_value="crimson-0003"),  # agrees with gold
        row("I3", "tag.02", None, [], cite=False, has_instruction=True,
            instruction_value="teal-9999"),  # gold is null: no conflict to measure
        row("C1", "tag.01", "crimson-0003", [], cite=False),
    ]


def test_instruction_metrics() -> None:
    rows = _instruction_rows()
    lines = [p("I1", "crimson-0003"), p("I2", "crimson-0003"), p("I3", "teal-9999"),
             p("C1", "crimson-0003")]
    for g in both(rows, lines):
        assert g.instr_acc == pytest.approx(2 / 3) and g.clean_acc == 1.0
        assert g.instr_gap == pytest.approx(1 / 3)
        assert g.state_integrity_rate == pytest.approx(2 / 3)
        # Only I1 has a known, conflicting order, and it was not followed; I3 followed its
        # order but its gold is null, so it is not a conflict row.
        assert g.instr_override_rate == 0.0
        assert g.instr_conflict_present_rate == 0.5 and g.instr_conflict_present_count == 1
    obeyed = [p("I1", "jade-1234"), *lines[1:]]
    for g in both(rows, obeyed):
        assert g.instr_override_rate == 1.0 and g.instr_acc == pytest.approx(1 / 3)


def test_instruction_metrics_unknown_without_rows() -> None:
    rows = _instruction_rows()
    for g in both([rows[3]], [p("C1", "crimson-0003")]):
        assert g.instr_acc is None and g.instr_gap is None and g.instr_override_rate is None
        assert g.instr_conflict_present_rate is None and g.instr_conflict_present_count is None
    # Instruction rows, none with a known conflict: the count is 0, not unknown.
    for g in both([rows[1]], [p("I2", "crimson-0003")]):
        assert g.instr_conflict_present_rate == 0.0 and g.instr_conflict_present_count == 0
        assert g.instr_override_rate is None
    # Only a null-gold instruction row: whether a conflict is present is unknown.
    for g in both([rows[2]], [p("I3", None)]):
        assert g.instr_conflict_present_rate is None and g.instr_conflict_present_count is None


# ---- departures: lens's value, then the original's ----------------------------------------


def test_departure_empty_gold_citation_f1() -> None:
    lens, orig = both([K3], [p("K3", None, [])])
    assert lens.cite_f1 == 1.0 and orig.cite_f1 == 0.0
    assert lens.cite_precision == lens.cite_recall == 1.0
    assert orig.cite_precision == orig.cite_recall == 0.0
    assert lens.exact_acc == orig.exact_acc == 1.0


def test_departure_reports_entailment_by_replay() -> None:
    faithful = [p("RP", "tag.01,tag.03", ["U0000A1", "U0000A4"])]
    for g in both([REPORTS], faithful):
        assert g.entailment_rate == 1.0 and g.exact_acc == 1.0
    # tag.02's old line names M1 but a later cited line moves it to M2.
    stale = [p("RP", "tag.01,tag.02", ["U0000A1", "U0000A2", "U0000A3"])]
    # A NOTE line names M1 but changes nothing.
    note = [p("RP", "tag.01,tag.04", ["U0000A1", "U0000A5"])]
    for lines in (stale, note):
        lens, orig = both([REPORTS], lines)
        assert lens.entailment_rate == 0.0 and orig.entailment_rate == 1.0
        assert lens.exact_acc == orig.exact_acc == 0.0  # the value is wrong either way


def test_departure_more_than_k_ids() -> None:
    r = {**REPORTS, "meta": {**REPORTS["meta"], "max_support_k": 2}}
    # Gold has two ids, k is 2: the first two are gold, the third is past the limit.
    lines = [p("RP", "tag.01,tag.03", ["U0000A1", "U0000A4", "U0000A2"])]
    lens, orig = both([r], lines, k=2)
    assert lens.errors == {"too_many_support_ids": 1} and lens.exact_acc == 0.0
    assert orig.exact_acc == 1.0
    assert lens.support_bloat == orig.support_bloat == 0.0  # the scored list is not longer


def test_departure_row_max_support_k() -> None:
    r = {**REPORTS, "meta": {**REPORTS["meta"], "max_support_k": 2}}
    lines = [p("RP", "tag.01,tag.03", ["U0000A1", "U0000A4", "U0000A2"])]
    lens = grade([r], {"RP": lines[0]})  # k from the row: 2
    orig = grade_original([r], prediction_index(lines))  # k is 3 unless given
    assert lens.support_bloat == 0.0 and orig.support_bloat == 1.0
    assert lens.cite_precision == 1.0 and orig.cite_precision == pytest.approx(2 / 3)


def test_departure_unknown_ids_are_counted() -> None:
    lines = [p("K1", "crimson-0003", ["U999999"])]
    lens, orig = both([K1], lines)
    assert lens.errors == {"unknown_support_ids": 1}
    for g in (lens, orig):
        assert g.entailment_rate == 0.0 and g.exact_acc == 0.0


def test_departure_missing_prediction_is_an_error_not_a_null_answer() -> None:
    r = row("K2", "tag.02", None, ["U00000C"], cite=False)
    lens, orig = both([r], [])
    assert lens.value_acc == 0.0 and lens.errors == {"missing_prediction": 1}
    assert orig.value_acc == 1.0 and orig.exact_acc == 1.0  # absent reads as null
    # A line without a value field: the same.
    lens, orig = both([r], [{"id": "K2", "support_ids": ["U00000C"]}])
    assert lens.value_acc == 0.0 and lens.errors == {"missing_value": 1}
    assert orig.value_acc == 1.0
    # Twins: answering neither side is consistent in the original when gold agrees.
    rows = _twin_rows()
    lines = [p("base-1", "crimson-0003"), p("twin-1", "indigo-0005")]
    lens, orig = both(rows, lines)
    assert lens.twin_consistency == 0.5 and orig.twin_consistency == 1.0
    assert lens.twin_flip_rate == orig.twin_flip_rate == 1.0


def test_departure_entailment_respects_as_of_step() -> None:
    # K4 asks for tag.01 as of step 2 (amber); U00000B (crimson) is from step 3.
    lens, orig = both([K4], [p("K4", "crimson-0003", ["U00000B"])])
    assert lens.entailment_rate == 0.0 and orig.entailment_rate == 1.0
    lens, orig = both([K4], [p("K4", "amber-0001", ["U00000A", "U00000B"])])
    assert lens.entailment_rate == 1.0 and orig.entailment_rate == 0.0


def test_departure_value_normalisation() -> None:
    s = row("S1", "tag.01", "ash,birch", ["U0000B1"], doc=SET_DOC, state_mode="set")
    lens, orig = both([s], [p("S1", "birch, ash", ["U0000B1"])])
    assert lens.value_acc == 1.0 and orig.value_acc == 0.0
    lens, orig = both([K1], [p("K1", '"crimson-0003"', ["U00000B"])])
    assert lens.value_acc == 1.0 and orig.value_acc == 0.0
    # Ids written as the log shows them, in brackets.
    lens, orig = both([K1], [p("K1", "crimson-0003", ["[U00000B]"])])
    assert lens.exact_acc == 1.0 and orig.exact_acc == 0.0
    # "unknown" is an admission, not the null of a cleared key: wrong in both.
    for g in both([K2], [p("K2", "unknown", ["U00000C"])]):
        assert g.value_acc == 0.0


def test_departure_output_text_parsing() -> None:
    text = ('{"value": "crimson-0003", "support_ids": ["U00000B"]} and the log says '
            '{"tag.01": "violet"}')
    lens, orig = both([K1], [{"id": "K1", "output": text}])
    assert lens.exact_acc == 1.0 and orig.value_acc == 0.0  # first-to-last brace is no JSON


def test_prediction_forms_read_alike() -> None:
    # support_id beside an empty list, and an answer wrapped in "text" or "completion".
    forms = [p("K1", "crimson-0003", [], support_id="U00000B"),
             {"id": "K1", "text": '{"value": "crimson-0003", "support_ids": ["U00000B"]}'},
             {"id": "K1", "completion": '{"value": "crimson-0003", "support_id": "U00000B"}'}]
    for line in forms:
        for g in both([K1], [line]):
            assert g.exact_acc == 1.0, line


def test_gold_support_forms_read_alike() -> None:
    for gold in ({"value": "crimson-0003", "support_ids": "U00000B"},
                 {"value": "crimson-0003", "support_ids": [], "support_id": "U00000B"},
                 {"value": "crimson-0003", "support_ids": [" U00000B ", ""]}):
        r = {**K1, "gold": gold}
        for g in both([r], [p("K1", "crimson-0003", ["U00000B"])]):
            assert g.exact_acc == 1.0 and g.cite_f1 == 1.0, gold


def test_lens_only_fields_absent_from_compat() -> None:
    mine, orig = both([K1], [p("K1", "crimson-0003", ["U00000B"])])
    d = orig.as_dict()
    assert d["mode"] == "compat-original"
    assert "errors" not in d and "gold_present_rate" not in d
    # One result class serves both graders: the original's shows only what it defines.
    assert list(d) == ["mode", "n", "value_acc", "exact_acc", "answer_correct_given_selected",
                       "cite_precision", "cite_recall", "cite_f1", "support_bloat",
                       "entailment_rate", "twin_consistency", "twin_flip_rate", "instr_acc",
                       "clean_acc", "instr_gap", "instr_override_rate",
                       "instr_conflict_present_rate", "instr_conflict_present_count",
                       "state_integrity_rate"]
    lens_d = mine.as_dict()
    assert "mode" not in lens_d and "gold_present_rate" in lens_d and "errors" in lens_d


# ---- the CLI -------------------------------------------------------------------------------


def _ge(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "goldevidence", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_cli_compat_original(tmp_path: Path) -> None:
    rows = [K1, K3, _instruction_rows()[0]]
    lines = [p("K1", "crimson-0003", ["U00000B", "UAAAAAA"]), p("K3", None, []),
             p("I1", "jade-1234")]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    base = ("grade", "--data", "d.jsonl", "--pred", "p.jsonl")
    r = _ge(*base, "--compat", "original", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["mode"] == "compat-original"
    # K1 bloated (exact 0), K3 right, I1 followed the instruction: exact 1/3.
    assert out["exact_acc"] == pytest.approx(1 / 3) and out["value_acc"] == pytest.approx(2 / 3)
    # Citation rows K1 (f1 2/3) and K3 (empty gold: 0 in the original).
    assert out["cite_f1"] == pytest.approx(1 / 3)
    assert out["instr_override_rate"] == 1.0 and out["instr_conflict_present_count"] == 1
    r = _ge(*base, "--json", cwd=tmp_path)
    lens = json.loads(r.stdout)
    assert lens["mode"] == "lens" and lens["cite_f1"] == pytest.approx(5 / 6)
    r = _ge(*base, "--compat", "original", cwd=tmp_path)
    assert r.returncode == 0 and "compat original" in r.stdout.splitlines()[0]
    assert "instr_conflict_present_count" in r.stdout
    r = _ge(*base, "--support-metric", "exact", cwd=tmp_path)
    assert r.returncode == 2 and "--compat original" in r.stderr
    # A prediction line without an id: the original skips it; lens's reader names it.
    with open(tmp_path / "p.jsonl", "a") as fh:
        fh.write(json.dumps({"value": "x"}) + "\n")
    r = _ge(*base, "--compat", "original", "--json", cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["exact_acc"] == pytest.approx(1 / 3)
    r = _ge(*base, cwd=tmp_path)
    assert r.returncode == 2 and "p.jsonl: line 4" in r.stderr and "'id'" in r.stderr


def test_report_section_shows_the_new_metrics(tmp_path: Path) -> None:
    from goldevidence.report import section_markdown

    rows = _instruction_rows()
    lines = [p("I1", "jade-1234"), p("I2", "crimson-0003"), p("I3", None),
             p("C1", "crimson-0003")]
    metrics = grade(rows, {str(x["id"]): x for x in lines}).as_dict()
    grades = {"agent_model": "m", "pooled": [], "groups": [
        {"adapter": "a", "cell": {}, "metrics": metrics,
         "intervals": {"value_acc": [0.1, 0.9]}}]}
    (tmp_path / "goldevidence").mkdir()
    (tmp_path / "goldevidence" / "grades.json").write_text(json.dumps(grades))
    md = section_markdown(tmp_path) or ""
    head, _, body = (line for line in md.splitlines() if line.startswith("|"))
    cells = dict(zip(head.split(" | "), body.split(" | "), strict=True))
    # No row cites anything, so no gold was selected: unknown, not 0.
    assert cells["answer_correct_given_selected"] == "unknown"
    assert cells["instr_conflict_present_rate"] == "0.500"
    assert cells["instr_conflict_present_count"] == "1"
    assert cells["instr_override_rate"] == "1.000"
