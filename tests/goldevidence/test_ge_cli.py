from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def ge(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "goldevidence", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_generate_run_grade(tmp_path: Path) -> None:
    r = ge("generate", "--out", "d.jsonl", "--preset", "smoke", "--seed", "3",
           "--state-mode", "counter", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert ge("validate", "--data", "d.jsonl", cwd=tmp_path).returncode == 0
    r = ge("run", "--data", "d.jsonl", "--baseline", "ledger", "--protocol", "both", "--json",
           cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    results = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["name"] for x in results] == ["ledger open_book", "ledger closed_book"]
    assert all(x["exact_acc"] == 1.0 for x in results)
    r = ge("run", "--data", "d.jsonl", "--baseline", "naive", "--pred-out", "p.jsonl",
           cwd=tmp_path)
    assert r.returncode == 0 and "value_acc" in r.stdout
    r = ge("grade", "--data", "d.jsonl", "--pred", "p.jsonl", "--json", cwd=tmp_path)
    graded = json.loads(r.stdout)
    assert 0 < graded["value_acc"] < 1
    r = ge("train-selector", "--data", "d.jsonl", "--k", "6", "--out", "sel.json",
           "--export", "cands.jsonl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "cands.jsonl").read_text().count("\n") > 0
    r = ge("run", "--data", "d.jsonl", "--baseline", "retrieval", "--k", "6", "--rerank",
           "linear", "--selector-path", "sel.json", "--selector-only", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["value_acc"] > 0.9


def test_user_errors_exit_2_without_traceback(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"id": "x"}\n')
    r = ge("run", "--data", "bad.jsonl", "--baseline", "ledger", cwd=tmp_path)
    assert r.returncode == 2 and "bad.jsonl: line 1" in r.stderr
    assert "Traceback" not in r.stderr
    r = ge("generate", "--out", "x.jsonl", "--steps", "1", cwd=tmp_path)
    assert r.returncode == 2 and "--steps" in r.stderr and not (tmp_path / "x.jsonl").exists()
    r = ge("run", "--data", "missing.jsonl", "--baseline", "ledger", cwd=tmp_path)
    assert r.returncode == 2 and "not found" in r.stderr
    (tmp_path / "ok.jsonl").write_text("")
    r = ge("run", "--data", "bad.jsonl", "--baseline", "retrieval", cwd=tmp_path)
    assert r.returncode == 2


def test_sweep_writes_one_summary_csv(tmp_path: Path) -> None:
    r = ge("sweep", "--preset", "smoke", "--seeds", "0,1", "--k", "1,4", "--reranks",
           "none,latest_step", "--model", "goldevidence-policy/first", "--out", "runs",
           "--csv", "summary.csv", "--name", "clisweep", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "summary.csv") as fh:
        everything = list(csv.DictReader(fh))
    table = [r for r in everything if r["seed"] != "all"]
    pooled = [r for r in everything if r["seed"] == "all"]
    assert len(table) == 2 * 2 * 2  # (k × rerank) adapters × seeds
    assert len(pooled) == 4 and all(r["n"] == str(2 * int(table[0]["n"])) for r in pooled)
    assert {r["seed"] for r in table} == {"0", "1"}
    k4_none = [float(r["value_acc"]) for r in table if r["k"] == "4" and r["rerank"] == "none"]
    k4_latest = [float(r["value_acc"]) for r in table if r["k"] == "4"
                 and r["rerank"] == "latest_step"]
    assert max(k4_none) < min(k4_latest) == 1.0
    runs = list((tmp_path / "runs").glob("clisweep-*"))
    assert len(runs) == 1
    r = ge("report", str(runs[0]), cwd=tmp_path)
    assert r.returncode == 0 and "## GoldEvidence" in r.stdout


ORIGINAL_DOC = (
    "# GoldEvidenceBench Episode E0001\n\n## Episode Log\n"
    "- [U3A9F01] UPDATE step=1 SET tag.00 = amber-0001\n"
    "- DISTRACTOR step=1 tag.00 = teal-0002\n"
    "- [U0B7C22] UPDATE step=2 SET tag.00 = jade-0003\n"
    "- [UFFE013] UPDATE step=3 CLEAR tag.01\n"
)


def test_grades_rows_and_predictions_in_the_original_formats(tmp_path: Path) -> None:
    rows = [
        {"id": "E0001-Q001", "episode_id": "E0001", "document": ORIGINAL_DOC, "book": "# B\n",
         "question": "Question E0001-Q001: What is the value of tag.00?",
         "gold": {"value": "jade-0003", "support_id": "U0B7C22", "support_ids": ["U0B7C22"]},
         "meta": {"seed": 0, "requires_citation": True, "key": "tag.00", "q_index": 1,
                  "state_mode": "kv", "query_type": "direct", "derived_op": None}},
        {"id": "E0001-Q002", "episode_id": "E0001", "document": ORIGINAL_DOC, "book": "# B\n",
         "question": "Question E0001-Q002: What is the value of tag.01?",
         "gold": {"value": None, "support_id": "UFFE013", "support_ids": ["UFFE013"]},
         "meta": {"seed": 0, "requires_citation": True, "key": "tag.01", "q_index": 2,
                  "state_mode": "kv", "query_type": "direct", "derived_op": None}},
    ]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    preds = [
        {"id": "E0001-Q001", "output": 'Sure. {"value": "jade-0003", "support_ids": '
                                       '["U0B7C22"]}'},
        {"id": "E0001-Q002", "value": None, "support_id": "UFFE013"},
    ]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds))
    r = ge("grade", "--data", "d.jsonl", "--pred", "p.jsonl", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["exact_acc"] == 1.0 and out["entailment_rate"] == 1.0 and out["errors"] == {}
    r = ge("run", "--data", "d.jsonl", "--baseline", "ledger", "--json", cwd=tmp_path)
    assert json.loads(r.stdout)["exact_acc"] == 1.0
