"""Hostile judge prompt files through ``lens score --judge-prompt-file``: a file that is not
JSON or YAML (a symlink to a credentials file) is refused without quoting its content, a file
nested 100,000 deep (YAML or Python) or over the size cap is refused with exit 2, and none of
them reaches the judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.protocols.builders import LME_FAITHFUL, imported, stored_run
from tests.support.cli import Lens, cli_runner

SECRET = "AKIAHOSTILESECRET0123"


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _score(lens: Lens, tmp_path: Path, prompt_file: Path) -> str:
    run = stored_run(tmp_path / "runs", imported(tmp_path, "longmemeval"),
                     {"faithful": LME_FAITHFUL})
    (tmp_path / "judge.yaml").write_text(yaml.safe_dump({"rules": [], "default": "yes"}))
    r = lens("score", str(run), "--tier", "2", "--protocol", "longmemeval",
             "--judge", "scripted/judge.yaml", "--judge-prompt-file", str(prompt_file))
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "Traceback" not in out and "judge_prompt_file" in out
    assert not (run / "scores.json").exists()
    return out


# -- 4. a file that is not JSON or YAML is refused without its content -----------------------

@pytest.mark.parametrize("content", [
    f"[default]\naws_access_key_id = {SECRET}\naws_secret_access_key: x: y\n",
    f"aws_access_key_id: {SECRET}\n\tbad: [\n",
    f"{SECRET}: {{unclosed\n",
])
def test_a_credentials_file_behind_a_symlink_is_not_quoted(lens: Lens, tmp_path: Path,
                                                           content: str) -> None:
    creds = tmp_path / "credentials"
    creds.write_text(content)
    link = tmp_path / "prompts.yaml"
    link.symlink_to(creds)
    out = _score(lens, tmp_path, link)
    assert SECRET not in out, out


def test_prompt_ids_from_the_file_are_quoted_safely(lens: Lens, tmp_path: Path) -> None:
    bad = tmp_path / "prompts.yaml"
    bad.write_text(json.dumps({"\x1b[2Jwiped" + SECRET * 40: "x"}))
    out = _score(lens, tmp_path, bad)
    assert "\x1b" not in out and len(out) < 3_000


# -- 13. deep nesting and size ------------------------------------------------------------------

@pytest.mark.parametrize("name,text", [
    ("deep.yaml", "a: " + "[" * 100_000 + "]" * 100_000),
    ("deep.json", "{\"a\": " + "[" * 100_000 + "]" * 100_000 + "}"),
    ("deep.py", "x = " + "-" * 100_000 + "1\n"),
    ("deep2.py", "x = " + "(" * 100_000 + ")" * 100_000 + "\n"),
    ("nested.py", "def get_anscheck_prompt():\n" + "".join(
        "    " * (i + 1) + "if a:\n" for i in range(3_000)) + "    " * 3_001 + "pass\n"),
])
def test_a_deeply_nested_prompt_file_is_refused(lens: Lens, tmp_path: Path, name: str,
                                                text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    _score(lens, tmp_path, path)


def test_an_oversized_prompt_file_is_refused(lens: Lens, tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("longmemeval-factual@1: '" + "{question} {gold} {answer} "
                    + "x" * 2_000_000 + "'\n")
    out = _score(lens, tmp_path, path)
    assert "byte" in out


@pytest.mark.parametrize(("kind", "said"), [("folder", "a folder"),
                                             ("device", "not a regular file"),
                                             ("missing", "file not found")])
def test_a_prompt_file_that_is_no_file_says_what_it_is(lens: Lens, tmp_path: Path, kind: str,
                                                      said: str) -> None:
    path = {"folder": tmp_path, "device": Path("/dev/null"),
            "missing": tmp_path / "absent.yaml"}[kind]
    out = _score(lens, tmp_path, path)
    assert said in out, out


# -- 8. lens run reads its judge prompt file before answering anything -------------------------

@pytest.mark.parametrize("problem", ["missing", "not_yaml"])
def test_lens_run_refuses_a_bad_prompt_file_before_any_answer(lens: Lens, tmp_path: Path,
                                                               problem: str) -> None:
    from tests.cli.runs import write_config

    prompt_file = tmp_path / "official.yaml"
    if problem == "not_yaml":
        prompt_file.write_text(f"{SECRET}: {{unclosed\n")
    cfg = write_config(tmp_path, "p", ["sqlite_fts"], judge={"model": "scripted/judge.yaml"},
                       scoring={"protocol": "longmemeval",
                                "judge_prompt_file": str(prompt_file)})
    r = lens("run", str(cfg), "--quiet", "--limit", "2")
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "scoring.judge_prompt_file" in out and "Traceback" not in out
    assert SECRET not in out
    assert not (tmp_path / "runs").exists()
