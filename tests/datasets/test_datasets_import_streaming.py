"""BEAM's 10M tier, MemoryAgentBench's long contexts and LongMemEval-V2's trajectory pool import
with bounded memory: a chat file of tens of megabytes, generated here in the 10M layout, imports
in a process whose peak memory grows by far less than the file (a whole-file parse costs several
times the file)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lens.data.dataset_load import load_dataset

ROOT = Path(__file__).resolve().parents[2]
FIX = Path(__file__).resolve().parent / "fixtures"
PEAK = ("import resource, sys\nfrom lens.commands.cli import main\nrc = main(sys.argv[1:])\n"
        "print('PEAK_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\nsys.exit(rc)\n")


def _peak_mb(*args: str) -> float:
    """Peak resident memory of ``lens <args>`` in a fresh interpreter, in MB."""
    out = subprocess.run([sys.executable, "-c", PEAK, *args], capture_output=True, text=True,
                         cwd=ROOT, check=True, timeout=300)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("PEAK_KB"))
    return int(line.split()[1]) / 1024


def _ten_m_chat(folder: Path, plans: int, batches: int, turns: int) -> int:
    """A chat.json in the 10M layout with long messages; returns its size in bytes."""
    (folder / "probing_questions").mkdir(parents=True)
    filler = "The plan changed again and the notes grew longer. " * 250
    mid = 0
    with (folder / "chat.json").open("w", encoding="utf-8") as fh:
        fh.write("[")
        for p in range(plans):
            out_batches = []
            for b in range(batches):
                ts = []
                for t in range(turns):
                    first = {"role": "user", "id": mid, "question_type": "main_question",
                             "content": f"Plan {p} batch {b} turn {t}: {filler}"}
                    if t == 0:
                        first["time_anchor"] = f"March-{1 + b % 28:02d}-{2024 + p}"
                    ts.append([first, {"role": "assistant", "id": mid + 1, "content": filler}])
                    mid += 2
                out_batches.append({"batch_number": b + 1, "time_anchor": None, "turns": ts})
            fh.write(("," if p else "") + json.dumps({f"plan-{p + 1}": out_batches}))
        fh.write("]")
    (folder / "probing_questions" / "probing_questions.json").write_text(json.dumps(
        {"information_extraction": [{"question": "Which plan came first?", "answer": "Plan 0",
                                     "source_chat_ids": [0, mid - 1],
                                     "rubric": ["LLM response should state: Plan 0"]}]}))
    return (folder / "chat.json").stat().st_size


@pytest.mark.slow
def test_beam_10m_layout_imports_with_memory_far_below_the_file(tmp_path: Path) -> None:
    conv = tmp_path / "chats" / "10M" / "1"
    size_mb = _ten_m_chat(conv, plans=4, batches=10, turns=30) / 1e6
    assert size_mb > 25
    small = _peak_mb("datasets", "import", "--format", "beam", str(FIX / "beam" / "chats"),
                     "--out", str(tmp_path / "small.json"))
    big = _peak_mb("datasets", "import", "--format", "beam", str(conv),
                   "--out", str(tmp_path / "big.json"))
    # One batch (about a megabyte here) is held at a time, plus the message-id map.
    assert big - small < 0.25 * size_mb, (small, big, size_mb)
    ds = load_dataset(tmp_path / "big.json")
    (scope,) = ds.scopes
    assert len(scope.episodes) == 4 * 10 * 30
    assert ds.questions[0].ground_truth.required_evidence_refs == [
        "beam_10M_1_t00001", "beam_10M_1_t01200"]


def _rows(path: Path, rows: int) -> float:
    sentence = "The keeper lit the lamp at dusk and wrote the hour in the log. "
    with path.open("w", encoding="utf-8") as fh:
        for _ in range(rows):
            fh.write(json.dumps({"context": sentence * 40_000, "questions": ["Who lit it?"],
                                 "answers": [["the keeper"]],
                                 "metadata": {"source": "ruler_qa1_197K"}}) + "\n")
    return path.stat().st_size / 1e6


@pytest.mark.slow
def test_mab_json_lines_import_one_row_at_a_time(tmp_path: Path) -> None:
    few = _rows(tmp_path / "few.jsonl", 4)
    many = _rows(tmp_path / "many.jsonl", 12)
    assert many > 25
    small = _peak_mb("datasets", "import", "--format", "memoryagentbench",
                     str(tmp_path / "few.jsonl"), "--out", str(tmp_path / "f.json"))
    big = _peak_mb("datasets", "import", "--format", "memoryagentbench",
                   str(tmp_path / "many.jsonl"), "--out", str(tmp_path / "m.json"))
    # Memory follows the row (about 2.5 MB of context), not the file: three times the rows
    # leave the peak where it was.
    assert big - small < 0.25 * (many - few), (small, big, few, many)
    assert len(load_dataset(tmp_path / "m.json").scopes) == 12


def _lme_v2_root(root: Path, trajectories: int, state_chars: int) -> float:
    """A LongMemEval-V2 data root whose pool holds ``trajectories`` of four long states each,
    and one question over three of them; returns the pool's size in MB."""
    (root / "haystacks").mkdir(parents=True)
    page = "[12] link 'Orders' [13] button 'Export' " * (state_chars // 40)
    with (root / "trajectories.jsonl").open("w", encoding="utf-8") as fh:
        for t in range(trajectories):
            states = [{"url": f"http://shop.example/{t}/{s}", "thought": "next", "action": "click",
                       "accessibility_tree": page, "screenshot": f"screenshots/t{t}/{s}.png"}
                      for s in range(4)]
            fh.write(json.dumps({"id": f"t{t}", "domain": "web", "goal": "Export the orders",
                                 "start_url": "http://shop.example/", "outcome": "success",
                                 "states": states}) + "\n")
    (root / "questions.jsonl").write_text(json.dumps(
        {"id": "q1", "domain": "web", "environment": "shopping", "question_type": "procedure",
         "question": "Which button exports the orders?", "image": None, "answer": "Export",
         "eval_function": "norm_phrase_set_match"}) + "\n")
    (root / "haystacks" / "lme_v2_small.json").write_text(json.dumps({"q1": ["t5", "t0", "t9"]}))
    return (root / "trajectories.jsonl").stat().st_size / 1e6


@pytest.mark.slow
def test_lme_v2_pool_is_indexed_and_read_one_trajectory_at_a_time(tmp_path: Path) -> None:
    pool_mb = _lme_v2_root(tmp_path / "big", trajectories=40, state_chars=200_000)
    assert pool_mb > 25
    small = _peak_mb("datasets", "import", "--format", "longmemeval-v2",
                     str(FIX / "longmemeval_v2"), "--out", str(tmp_path / "small.json"))
    big = _peak_mb("datasets", "import", "--format", "longmemeval-v2", str(tmp_path / "big"),
                   "--out", str(tmp_path / "big.json"))
    # One trajectory (under a megabyte) and the pool's offsets are held, never the pool.
    assert big - small < 0.25 * pool_mb, (small, big, pool_mb)
    ds = load_dataset(tmp_path / "big.json")
    assert [e.meta["trajectory_id"] for e in ds.scopes[0].episodes] == ["t5", "t0", "t9"]
