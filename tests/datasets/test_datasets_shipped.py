"""The shipped datasets: sizes the issue asks for, strict validity, and reproducibility from
the generator parameters recorded in their own metadata."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from lens.data.datagen.checks import strict_problems
from lens.data.datagen.generate import ScopeSpec, dumps, generate_dataset
from lens.data.dataset import QuestionType
from lens.data.dataset_load import load_dataset

DATASETS = Path(__file__).resolve().parents[2] / "datasets"


@pytest.mark.parametrize("name", ["quickstart.json", "standard.json"])
def test_shipped_file_is_strictly_valid_and_regenerates_byte_for_byte(name: str) -> None:
    path = DATASETS / name
    ds = load_dataset(path)
    assert strict_problems(ds, str(path)) == []
    raw = json.loads(path.read_text(encoding="utf-8"))
    specs = [ScopeSpec(**s) for s in raw["meta"]["generator"]["scopes"]]
    assert dumps(generate_dataset(specs, raw["dataset_id"])) == path.read_text(encoding="utf-8")


def test_quickstart_is_small_enough_for_a_small_local_model() -> None:
    ds = load_dataset(DATASETS / "quickstart.json")
    assert len(ds.scopes) == 1
    assert 25 <= len(ds.scopes[0].episodes) <= 35
    assert 8 <= len(ds.questions) <= 12
    assert {q.question_type for q in ds.questions} == set(QuestionType)
    assert max(len(e.text.split()) for e in ds.scopes[0].episodes) <= 300


def test_standard_has_six_scopes_across_the_four_domains() -> None:
    ds = load_dataset(DATASETS / "standard.json")
    assert len(ds.scopes) >= 6
    assert {s.meta["domain"] for s in ds.scopes} == {"ops", "clinical", "finance", "support"}
    per_scope = Counter(q.scope_id for q in ds.questions)
    for s in ds.scopes:
        assert len(s.episodes) >= 120
        assert per_scope[s.scope_id] >= 24
    assert len(ds.questions) >= 144
    assert {q.question_type for q in ds.questions} == set(QuestionType)
