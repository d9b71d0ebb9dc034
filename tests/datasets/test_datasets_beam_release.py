"""BEAM as released: truncated chats, out-of-order anchors, hostile chat files (through the CLI),
and the real release checked against the official answer generation's reading of the chats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lens.data.importers.beam import find_conversations, write_beam

ROOT = Path(__file__).resolve().parents[2]
# Beside the checkout (or beside the folder of worktrees).
REAL = next((p / "thirdparty" / "beam" / "chats" for p in (ROOT.parent, ROOT.parent.parent)
             if (p / "thirdparty" / "beam" / "chats").is_dir()),
            ROOT.parent / "thirdparty" / "beam" / "chats")


def _msg(mid: int, role: str, text: str, anchor: str | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"role": role, "id": mid, "content": text}
    if role == "user":
        m["question_type"] = "main_question"
    if anchor:
        m["time_anchor"] = anchor
    return m


def _conv(folder: Path, chat: Any, name: str = "chat.json") -> None:
    (folder / "probing_questions").mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(chat))
    if name != "chat.json":
        (folder / "chat.json").write_text(json.dumps(chat + chat))
    (folder / "probing_questions" / "probing_questions.json").write_text(json.dumps(
        {"information_extraction": [{"question": "q?", "answer": "a", "rubric": ["a"]}]}))


def _batch(n: int, anchor: str, turns: int, start: int) -> dict[str, Any]:
    return {"batch_number": n, "time_anchor": anchor,
            "turns": [[_msg(start + 2 * i, "user", f"u{i}"), _msg(start + 2 * i + 1,
                                                                  "assistant", "ok")]
                      for i in range(turns)]}


def test_truncated_chat_is_read_and_named(tmp_path: Path) -> None:
    _conv(tmp_path / "100K" / "1", [_batch(1, "March-1-2024", 2, 1)], "chat_trunecated.json")
    _conv(tmp_path / "100K" / "2", [_batch(1, "March-1-2024", 3, 1)])
    counts = write_beam(tmp_path / "100K", tmp_path / "o.json")
    assert counts["episodes"] == 2 + 3
    assert counts["notes"][0].startswith("1 of 2 conversation(s) read from chat_trunecated.json")
    assert counts["notes"][0].endswith(": beam_100K_1")
    meta = json.loads((tmp_path / "o.json").read_text())["meta"]["source"]
    assert meta["truncated_chats"] == ["beam_100K_1"]


def test_an_outlier_anchor_dates_only_its_own_batch(tmp_path: Path) -> None:
    # As in the 10M release (conversation 5, plan 1): one anchor months after the batches
    # that follow it.
    plans = [{"plan-0": [_batch(1, "June-1-2024", 1, 1)]},
             {"plan-1": [_batch(1, "March-31-2025", 2, 10), _batch(2, "July-1-2024", 2, 20),
                         _batch(3, "August-1-2024", 2, 30)]}]
    _conv(tmp_path / "10M" / "5", plans)
    counts = write_beam(tmp_path / "10M" / "5", tmp_path / "o.json")
    eps = json.loads((tmp_path / "o.json").read_text())["scopes"][0]["episodes"]
    assert [e["timestamp"][:10] for e in eps] == [
        "2024-06-01", "2024-06-01", "2024-06-01", "2024-07-01", "2024-07-01", "2024-08-01",
        "2024-08-01"]
    assert [e["meta"].get("time_anchor_out_of_order", False) for e in eps] == [
        False, True, True, False, False, False, False]
    assert any("1 batch time anchor(s) out of order" in n for n in counts["notes"])


def test_nested_brackets_chat_is_refused_by_the_cli(tmp_path: Path) -> None:
    conv = tmp_path / "chats" / "100K" / "1"
    _conv(conv, [])
    (conv / "chat.json").write_text("[" * 100_000 + "]" * 100_000)
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, "-m", "lens", "datasets", "import", "--format",
                           "beam", str(tmp_path / "chats"), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert "chat.json: JSON nested more than 64 levels deep" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def _official_messages(path: Path, tier: str) -> list[tuple[str, str]]:
    """The messages the official answer generation gives the model, in its order (its
    long-context reading of the chat: plans' first values for 10M, else batches' turns)."""
    data = json.loads(path.read_text())
    batches = ([b for plan in data for b in next(iter(plan.values()))] if tier == "10M"
               else data)
    return [(m["role"], m["content"]) for b in batches for t in b["turns"] for m in t]


@pytest.mark.skipif(not REAL.is_dir(), reason=f"BEAM release not found at {REAL}")
def test_real_release_matches_the_official_reading(tmp_path: Path) -> None:
    tier = REAL / "100K"
    convs = find_conversations(tier)
    counts = write_beam(tier, tmp_path / "b.json")
    assert counts["episodes"] == 1877
    data = json.loads((tmp_path / "b.json").read_text())
    by_scope = {s["scope_id"]: s for s in data["scopes"]}
    checked = 0
    for conv in convs:
        official_file = (conv.folder / "chat_trunecated.json"
                         if (conv.folder / "chat_trunecated.json").exists()
                         else conv.folder / "chat.json")
        want = "\n".join(f"{r}: {c}" for r, c in _official_messages(official_file, "100K"))
        got = "\n".join(e["text"] for e in by_scope[conv.scope_id]["episodes"])
        assert got == want, conv.scope_id
        checked += 1
    assert checked == 20
    assert len(data["meta"]["source"]["truncated_chats"]) == 10


# The 1M conversations whose chat file the stored copy of BEAM's repository holds (the others'
# chat.json, larger than the copy keeps, are absent); none of the 10M tier's.
REACHABLE_1M = {"3", "4", "6", "7", "8", "9", "10", "31", "32"}


@pytest.mark.slow
@pytest.mark.skipif(not (REAL / "1M").is_dir(), reason=f"BEAM 1M tier not found at {REAL / '1M'}")
def test_real_1m_conversations_match_the_official_reading(tmp_path: Path) -> None:
    tier = REAL / "1M"
    convs = find_conversations(tier)
    counts = write_beam(tier, tmp_path / "b.json")
    data = json.loads((tmp_path / "b.json").read_text())
    assert len(data["scopes"]) == len(convs)
    # Twenty probing questions per conversation.
    assert len(data["questions"]) == 20 * len(convs)
    if {c.conv_id for c in convs} == REACHABLE_1M:
        assert counts["episodes"] == 6201
        assert data["meta"]["source"]["truncated_chats"] == ["beam_1M_6"]
    by_scope = {s["scope_id"]: s for s in data["scopes"]}
    for conv in convs:
        official_file = (conv.folder / "chat_trunecated.json"
                         if (conv.folder / "chat_trunecated.json").exists()
                         else conv.folder / "chat.json")
        want = "\n".join(f"{r}: {c}" for r, c in _official_messages(official_file, "1M"))
        got = "\n".join(e["text"] for e in by_scope[conv.scope_id]["episodes"])
        assert got == want, conv.scope_id


def test_a_10m_tier_of_plan_files_only_is_refused_with_the_reason(tmp_path: Path) -> None:
    # As the stored copy of the 10M release: plan-N/chat.json without the conversation's own.
    conv = tmp_path / "chats" / "10M" / "4"
    (conv / "probing_questions").mkdir(parents=True)
    (conv / "probing_questions" / "probing_questions.json").write_text("{}")
    for n in (0, 1):
        (conv / f"plan-{n}").mkdir()
        (conv / f"plan-{n}" / "chat.json").write_text(json.dumps([_batch(1, "March-1-2024", 1,
                                                                         1)]))
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, "-m", "lens", "datasets", "import", "--format",
                           "beam", str(tmp_path / "chats" / "10M"), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert "no BEAM conversation found" in proc.stderr
    assert "2 plan folder(s) hold a chat.json (4/plan-0, ...)" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()
