"""``agent.reader_prompt_file``: the fixed reader asks every question in a publisher's reader
prompt read from a file, the file's sha256 stands in the run's condition, and a file lens
cannot use is refused before anything runs. Through ``lens run``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from lens.data.reader_prompts import load_reader_prompt
from tests.core.helpers import make_dataset, write_json
from tests.support.cli import Lens, cli_runner

# In the shape of mem0's ANSWER_PROMPT_ZEP (memobase-locomo prompts.py), its Jinja braces made
# single; {memories} is one of lens's declared aliases of {history}.
PUBLISHER = ("You are an intelligent memory assistant.\n\nMemories:\n\n{memories}\n\n"
             "Question: {question}\nAnswer (a JSON {{\"answer\": ...}} is fine):\n")


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _config(tmp_path: Path, name: str, agent: dict[str, Any]) -> Path:
    ds = tmp_path / "ds.json"
    if not ds.exists():
        write_json(ds, make_dataset(n_episodes=4, checkpoints=(4,)))
    replies = tmp_path / "replies.yaml"
    replies.write_text(yaml.safe_dump({"rules": [{"contains": "Memories:", "text": "Paris"}],
                                       "default": "lens wording"}), encoding="utf-8")
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": name, "dataset": {"path": str(ds)}, "adapters": [{"name": "sqlite_fts"}],
        "agent": {"model": "scripted/replies.yaml", "mode": "fixed_reader", "top_k": 2,
                  **agent},
        "out_dir": str(tmp_path / "runs")}), encoding="utf-8")
    return cfg


def _run_dir(tmp_path: Path, name: str) -> Path:
    return next((tmp_path / "runs").glob(f"{name}-*"))


def test_the_publishers_prompt_asks_every_question(lens: Lens, tmp_path: Path) -> None:
    prompt_file = tmp_path / "answer_prompt.txt"
    prompt_file.write_text(PUBLISHER, encoding="utf-8")
    # A relative path is the config file's folder's.
    done = lens("run", str(_config(tmp_path, "file", {"reader_prompt_file": prompt_file.name})),
                "--quiet")
    assert done.returncode == 0, done.stderr
    run = _run_dir(tmp_path, "file")
    records = [json.loads(line) for line in
               (run / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    assert records
    asked = {q["question_id"]: q["prompt"] for q in
             json.loads((tmp_path / "ds.json").read_text(encoding="utf-8"))["questions"]}
    shown: dict[str, int] = {}
    for rec in records:
        prompt = rec["transcript"][0]["content"]
        assert prompt.startswith("You are an intelligent memory assistant.\n\nMemories:\n\n")
        assert prompt.endswith(f"Question: {asked[rec['question_id']]}\n"
                               'Answer (a JSON {"answer": ...} is fine):\n')
        assert "### Session 1:" in prompt and "History Chats" not in prompt
        assert rec["answer"] == "Paris"
        # The report counts the memory's text in the publisher's prompt as its context.
        history = prompt.split("Memories:\n\n", 1)[1].rsplit("\n\nQuestion: ", 1)[0]
        shown[rec["question_id"]] = len(history)
    rows = csv.DictReader(io.StringIO((run / "questions.csv").read_text(encoding="utf-8")))
    assert {r["question_id"]: int(r["context_chars"]) for r in rows} == shown
    assert all(v > 0 for v in shown.values())
    answerer = json.loads((run / "manifest.json").read_text(encoding="utf-8"))["condition"][
        "answerer"]
    read = load_reader_prompt(prompt_file)
    assert answerer["reading"] == "file"
    assert answerer["prompt_file"] == {"name": "answer_prompt.txt", "sha256": read.sha256}

    # lens's own wording: another prompt hash, another condition.
    assert lens("run", str(_config(tmp_path, "lens", {})), "--quiet").returncode == 0
    builtin = json.loads((_run_dir(tmp_path, "lens") / "manifest.json").read_text("utf-8"))
    ours = json.loads((run / "manifest.json").read_text("utf-8"))
    assert builtin["condition"]["answerer"]["prompt_hash"] != answerer["prompt_hash"]
    assert "prompt_file" not in builtin["condition"]["answerer"]
    assert builtin["condition_hash"] != ours["condition_hash"]


@pytest.mark.parametrize(("content", "expected"), [
    (None, "file not found; give the path of a text file holding the reader prompt"),
    (b"x" * (1024 * 1024 + 1), "1048577 bytes, over the 1048576 byte limit of a prompt file"),
    (b"\xff{history} {question}", "not UTF-8 text; re-save it as UTF-8"),
    (b"Memories: {{memories}}\nQuestion: {{question}}",
     "no {history} placeholder (or its aliases {memories}, {context}) for the retrieved "
     "memories; no {question} placeholder; Jinja-style placeholders such as {{memories}} are "
     "literal text here: write them with single braces ({memories})"),
    (b"{history}\n{speaker_1_user_id}: {question} {0}",
     "unknown placeholders {0}, {speaker_1_user_id} (lens fills {history}, {question}, "
     "{now_line}, {memories}, {context}; write a literal brace twice)"),
    (b"{history} {question} {", "not a template (Single '{' encountered in format string); "
     "write a literal brace twice"),
])
def test_a_prompt_file_lens_cannot_use_is_refused(lens: Lens, tmp_path: Path,
                                                  content: bytes | None, expected: str) -> None:
    prompt_file = tmp_path / "reader.txt"
    if content is not None:
        prompt_file.write_bytes(content)
    cfg = _config(tmp_path, "bad", {"reader_prompt_file": str(prompt_file)})
    for command in (("run", str(cfg)), ("plan", str(cfg))):
        done = lens(*command)
        assert done.returncode == 2, (command, done.stderr)
        assert (f"{cfg}: field agent.reader_prompt_file: {prompt_file}: {expected}"
                in done.stderr), done.stderr
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()  # nothing half-written


@pytest.mark.parametrize(("agent", "expected"), [
    ({"mode": "tool_agent", "top_k": None},
     "'reader_prompt_file' applies to mode 'fixed_reader' only"),
    ({"reading": "direct"}, "'reading' chooses one of lens's reader prompts and "
                            "'reader_prompt_file' replaces them; remove one"),
])
def test_the_setting_belongs_to_the_fixed_reader(lens: Lens, tmp_path: Path,
                                                 agent: dict[str, Any], expected: str) -> None:
    prompt_file = tmp_path / "reader.txt"
    prompt_file.write_text(PUBLISHER, encoding="utf-8")
    settings = {"reader_prompt_file": str(prompt_file), **agent}
    cfg = _config(tmp_path, "misplaced", {k: v for k, v in settings.items() if v is not None})
    if agent.get("mode") == "tool_agent":
        data = yaml.safe_load(cfg.read_text(encoding="utf-8"))
        del data["agent"]["top_k"]
        cfg.write_text(yaml.safe_dump(data), encoding="utf-8")
    done = lens("run", str(cfg))
    assert done.returncode == 2 and expected in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
