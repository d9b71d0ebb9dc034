"""Context parity through `lens run`: per-question counts match a hand count, and the checklist
warns on an arm handed at least twice another's context and on searches covering the scope."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from lens.commands.cli import main
from lens.data.dataset import Episode
from lens.memory.adapter import (
    CapabilityManifest,
    Document,
    MemoryAdapter,
    SearchResult,
    register_adapter,
)

ROOT = Path(__file__).resolve().parents[2]
EPISODES = 12


class FixedOptions(BaseModel):
    size: int = 100
    standing: int = 0
    cover_all: bool = False
    empty: bool = False


@register_adapter("parity_fixed")
class FixedAdapter(MemoryAdapter):
    """Hands over texts of known lengths: two hits of ``size`` and ``size // 2`` characters, a
    30-character document per retrieve and ``standing`` characters of standing context; with
    ``cover_all`` every search returns every episode ingested."""

    Options = FixedOptions

    def __init__(self, size: int = 100, standing: int = 0, cover_all: bool = False,
                 empty: bool = False) -> None:
        self.size, self.standing, self.cover_all, self.empty = size, standing, cover_all, empty
        self.seen: list[str] = []

    async def reset(self, scope_id: str) -> None:
        self.seen = []

    async def ingest(self, episode: Episode) -> None:
        self.seen.append(episode.episode_id)

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        if self.empty:
            return []
        if self.cover_all:
            return [SearchResult(ref_id=e, text="x") for e in self.seen][:limit]
        return [SearchResult(ref_id="s_e01", text="a" * self.size),
                SearchResult(ref_id="s_e02", text="b" * (self.size // 2))]

    async def retrieve(self, ref_id: str) -> Document | None:
        return Document(ref_id=ref_id, text="c" * 30)

    async def standing_context(self, scope_id: str, checkpoint: int) -> str | None:
        return "S" * self.standing if self.standing else None

    async def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(max_results=50, standing_context=bool(self.standing))


def _dataset(path: Path) -> Path:
    episodes = [{"episode_id": f"s_e{i:02d}", "scope_id": "s",
                 "timestamp": f"2024-01-{i:02d}T09:00:00",
                 "text": f"Day {i}: the checkout service p99 latency was {100 + i} ms."}
                for i in range(1, EPISODES + 1)]
    questions = [{"question_id": f"q{i}", "scope_id": "s", "checkpoint_after": EPISODES,
                  "question_type": "longitudinal",
                  "prompt": f"What was the checkout p99 latency on day {i}?",
                  "ground_truth": {"canonical_answer": f"{100 + i} ms",
                                   "required_evidence_refs": [f"s_e{i:02d}"],
                                   "key_facts": [f"{100 + i} ms"]}}
                 for i in (2, 5)]
    path.write_text(json.dumps({"dataset_id": "parity-tiny",
                                "scopes": [{"scope_id": "s", "episodes": episodes}],
                                "questions": questions}))
    return path


def _run(tmp_path: Path, adapters: list[dict[str, Any]], name: str = "parity") -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    data = _dataset(tmp_path / "tiny.json")
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(json.dumps({
        "name": name, "dataset": {"path": str(data)}, "adapters": adapters,
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs")}))
    assert main(["run", str(cfg), "--quiet"]) == 0
    return next(p for p in (tmp_path / "runs").iterdir() if p.name.startswith(name))


def _summary(run: Path) -> dict[str, Any]:
    return json.loads((run / "summary.json").read_text())


def _check(run: Path, cid: str) -> dict[str, Any] | None:
    return next((c for c in _summary(run)["checklist"] if c["id"] == cid), None)


def _hand_count(size: int, standing: int) -> int:
    search = json.dumps({"results": [
        {"ref_id": "s_e01", "text": "a" * size, "score": None, "metadata": {}},
        {"ref_id": "s_e02", "text": "b" * (size // 2), "score": None, "metadata": {}}]})
    retrieve = [json.dumps({"ref_id": r, "text": "c" * 30, "metadata": {}})
                for r in ("s_e01", "s_e02")]
    return len(search) + sum(len(x) for x in retrieve) + standing


def test_parity_numbers_match_a_hand_count(tmp_path: Path) -> None:
    run = _run(tmp_path, [
        {"name": "parity_fixed", "label": "small", "options": {"size": 100, "standing": 40}},
        {"name": "parity_fixed", "label": "similar", "options": {"size": 120}},
        {"name": "null"}])
    small, similar = _hand_count(100, 40), _hand_count(120, 0)
    ctx = {a: s["context"] for a, s in _summary(run)["adapters"].items()}
    assert ctx["small"]["chars_median"] == small
    assert ctx["small"]["tokens_mean"] == small // 4
    assert ctx["small"]["standing_chars_mean"] == 40
    assert ctx["similar"]["chars_mean"] == similar
    assert ctx["null"]["chars_median"] == 0
    # Two hits of twelve episodes ingested.
    assert ctx["small"]["scope_share_median"] == pytest.approx(2 / EPISODES)
    rows = list(csv.DictReader((run / "questions.csv").open()))
    by_arm = {r["adapter"]: r for r in rows}
    assert int(by_arm["small"]["context_chars"]) == small
    assert int(by_arm["small"]["context_tokens"]) == small // 4
    assert int(by_arm["small"]["standing_context_chars"]) == 40
    assert float(by_arm["small"]["search_scope_share"]) == pytest.approx(2 / EPISODES, abs=1e-4)
    assert by_arm["null"]["context_chars"] == "0"
    # Balanced contenders pass; the floor's empty context is no imbalance.
    assert _check(run, "context_parity")["status"] == "pass"
    md = (run / "report.md").read_text()
    assert "## Context parity" in md and f"{small:,}" in md


def test_checklist_warns_on_twice_the_context(tmp_path: Path) -> None:
    run = _run(tmp_path, [
        {"name": "parity_fixed", "label": "lean", "options": {"size": 100}},
        {"name": "parity_fixed", "label": "stuffed", "options": {"size": 1000}}])
    check = _check(run, "context_parity")
    assert check is not None and check["status"] == "warn"
    assert "stuffed receives" in check["detail"] and "of lean" in check["detail"]
    assert "e.g. question q" in check["detail"]
    assert "context parity" in (run / "report.md").read_text()


def test_checklist_warns_when_searches_cover_the_scope(tmp_path: Path) -> None:
    run = _run(tmp_path, [
        {"name": "parity_fixed", "label": "everything", "options": {"cover_all": True}},
        {"name": "parity_fixed", "label": "selective", "options": {"size": 100}}])
    check = _check(run, "retrieval_bypass")
    assert check is not None and check["status"] == "warn"
    assert "everything (median 100%" in check["detail"]
    assert f"{EPISODES} of {EPISODES} episodes" in check["detail"]
    assert "selective (" not in check["detail"]


def test_a_real_top_k_over_the_whole_scope_warns(tmp_path: Path) -> None:
    """recency with n above the scope size returns every episode to every search."""
    cfg = tmp_path / "bypass.yaml"
    cfg.write_text(json.dumps({
        "name": "bypass", "dataset": {"path": str(ROOT / "datasets" / "quickstart.json")},
        "adapters": [{"name": "recency", "options": {"n": 100}}, {"name": "sqlite_fts"}],
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs")}))
    assert main(["run", str(cfg), "--quiet"]) == 0
    run = next((tmp_path / "runs").iterdir())
    check = _check(run, "retrieval_bypass")
    assert check is not None and check["status"] == "warn"
    assert "recency (median 100%" in check["detail"]
    assert "sqlite_fts (" not in check["detail"]


def test_compare_warns_across_runs_naming_each_run(tmp_path: Path) -> None:
    lean = _run(tmp_path / "a", [{"name": "parity_fixed", "label": "m", "options": {"size": 100}}],
                name="lean")
    stuffed = _run(tmp_path / "b", [{"name": "parity_fixed", "label": "m",
                                     "options": {"size": 1000}}], name="stuffed")
    out = tmp_path / "cmp"
    main(["compare", str(lean), str(stuffed), "--force", "--out", str(out)])
    checks = json.loads((out / "compare.json").read_text())["checklist"]
    check = next(c for c in checks if c["id"] == "context_parity")
    assert check["status"] == "warn"
    assert check["detail"].startswith(f"{stuffed.name.split('-', 1)[1]}:m receives")


def test_a_memory_that_returns_nothing_warns(tmp_path: Path) -> None:
    """An arm whose memory stored nothing searchable scores like the floor: the checklist and
    the report name it; the floor itself and a working memory are not named."""
    run = _run(tmp_path, [
        {"name": "parity_fixed", "label": "hollow", "options": {"empty": True}},
        {"name": "parity_fixed", "label": "working", "options": {"size": 100}},
        {"name": "null"}])
    check = _check(run, "empty_memory")
    assert check is not None and check["status"] == "warn"
    assert check["failing"] == ["hollow"]
    assert "hollow (0 characters on 2 question(s))" in check["detail"]
    assert "null" not in check["detail"] and "working" not in check["detail"]
    assert "each memory handed the agent some text" in (run / "report.md").read_text()
    passing = _run(tmp_path / "ok", [{"name": "parity_fixed"}, {"name": "null"}], "ok")
    assert _check(passing, "empty_memory")["status"] == "pass"
