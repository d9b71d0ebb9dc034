"""The fact matcher against its labelled corpus: near-misses rejected, paraphrases accepted.

Each case of tests/scoring/data/fact_matcher_corpus.jsonl is (fact, answer, expected) with a
class. Expected matches are paraphrases; expected non-matches are near-misses (another id, date,
figure, unit or entity, a denial, the opposite direction). ``bench/fact_matcher.py`` prints the
same figures per class.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from lens.scoring.text.facts import AnswerText, match_fact

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "scoring" / "data" / "fact_matcher_corpus.jsonl"
CLASSES = {"identifier", "date", "tolerance", "unit", "subject", "negation", "direction",
           "number_words", "duration", "format", "agent"}


def _rows() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()
            if line.strip()]


ROWS = _rows()
RESULTS = {r["id"]: match_fact(r["fact"], AnswerText(r["answer"])).matched for r in ROWS}


def _rates(rows: list[dict]) -> tuple[float, float, float]:
    """(recall on paraphrases, share of near-misses rejected, precision)."""
    pos = [r for r in rows if r["expected"]]
    neg = [r for r in rows if not r["expected"]]
    tp = sum(RESULTS[r["id"]] for r in pos)
    fp = sum(RESULTS[r["id"]] for r in neg)
    return tp / len(pos), 1 - fp / len(neg), tp / (tp + fp) if tp + fp else 0.0


def test_corpus_is_large_labelled_and_covers_every_class() -> None:
    assert len(ROWS) >= 200
    assert len({r["id"] for r in ROWS}) == len(ROWS)
    for r in ROWS:
        assert set(r) >= {"id", "class", "fact", "answer", "expected", "source", "batch"}, r
        assert isinstance(r["expected"], bool)
        assert r["source"].split(":")[0] in {"standard", "quickstart", "datagen"}
    kinds = Counter((r["class"], r["expected"]) for r in ROWS)
    for cls in CLASSES:
        # Every class has near-misses to reject and paraphrases to accept.
        assert kinds[(cls, True)] >= 4 and kinds[(cls, False)] >= 4, cls
    assert kinds[("agent", True)] >= 40


def test_near_misses_rejected_and_paraphrases_accepted() -> None:
    recall, rejected, _ = _rates(ROWS)
    assert rejected >= 0.95
    assert recall >= 0.90


@pytest.mark.parametrize("cls", sorted(CLASSES))
def test_each_class_rejects_its_near_misses(cls: str) -> None:
    rows = [r for r in ROWS if r["class"] == cls]
    _, rejected, _ = _rates(rows)
    assert rejected >= 0.9, [r["id"] for r in rows if not r["expected"] and RESULTS[r["id"]]]


def test_agent_style_paraphrases() -> None:
    """Findings restated in other words over several sentences, the way agents answer."""
    rows = [r for r in ROWS if r["class"] == "agent"]
    recall, _, precision = _rates(rows)
    assert recall >= 0.6
    assert precision >= 0.9


def test_holdout_batches_hold_the_targets() -> None:
    """Cases written after the matcher (each batch measured once before any fix it prompted)."""
    rows = [r for r in ROWS if r["batch"].startswith("holdout")]
    assert len(rows) >= 100
    recall, rejected, _ = _rates(rows)
    assert rejected >= 0.95
    assert recall >= 0.85


def test_anchor_facts_of_shipped_sources_exist_in_the_shipped_data() -> None:
    """Cases that cite a shipped dataset use its real ids (the near-misses alter them)."""
    texts = {}
    for name in ("standard", "quickstart"):
        data = json.loads((ROOT / "datasets" / f"{name}.json").read_text(encoding="utf-8"))
        texts[name] = json.dumps(data)
    cited = [r for r in ROWS if r["expected"] and r["class"] == "identifier"]
    assert cited
    for r in cited:
        assert r["fact"] in texts[r["source"].split(":")[0]], r["id"]


def test_bench_prints_the_table() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "bench.fact_matcher"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    lines = out.splitlines()
    assert lines[0].startswith("| class | cases |")
    for cls in CLASSES:
        assert any(line.startswith(f"| {cls} |") for line in lines), cls
    total = next(line for line in lines if line.startswith("| **all** |"))
    assert f"| {len(ROWS)} |" in total
