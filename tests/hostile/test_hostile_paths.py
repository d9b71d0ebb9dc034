"""Paths that are not what they claim (a file as out_dir, a folder or a text file as the model
cache, a FIFO or a device as the dataset or config), a pasted key and megabyte-sized fields: each
is refused before any work with exit 2, one bounded message naming the file and the field, and
nothing written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent / "corpus"
BASE = ("dataset: {path: good.json}\nadapters: [{name: sqlite_fts}]\n"
        "agent: {model: scripted/policy}\n")


def lens(*args: str, cwd: Path, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120, env=env)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    shutil.copy(CORPUS / "good.json", tmp_path / "good.json")
    return tmp_path


def refused(res: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.count("lens: error:") == 1, res.stderr
    assert "Traceback" not in res.stderr
    for text in expected:
        assert text in res.stderr, res.stderr


def test_out_dir_that_is_a_file(work: Path) -> None:
    (work / "c.yaml").write_text(BASE + "out_dir: good.json\n", encoding="utf-8")
    before = snapshot(work)
    refused(lens("run", "c.yaml", cwd=work), "c.yaml: field 'out_dir'", "is not a folder")
    assert snapshot(work) == before


def test_out_flag_that_is_a_file(work: Path) -> None:
    (work / "c.yaml").write_text(BASE, encoding="utf-8")
    before = snapshot(work)
    refused(lens("run", "c.yaml", "--out", "good.json/runs", cwd=work), "--out good.json/runs",
            "is not a folder")
    assert snapshot(work) == before


@pytest.mark.parametrize(("make", "expected"), [
    (lambda p: p.mkdir(), "is a folder"),
    (lambda p: p.write_text("not a database\n", encoding="utf-8"), "is not an SQLite database"),
])
def test_cache_path_that_is_not_a_database(work: Path, make: object, expected: str) -> None:
    make(work / "cache.db")  # type: ignore[operator]
    (work / "c.yaml").write_text(BASE + "cache: {path: cache.db}\nout_dir: runs\n",
                                 encoding="utf-8")
    before = snapshot(work)
    refused(lens("run", "c.yaml", cwd=work), "c.yaml: field 'cache.path'", expected)
    assert snapshot(work) == before and not (work / "runs").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")
def test_fifo_dataset_and_config_do_not_hang(work: Path) -> None:
    os.mkfifo(work / "pipe.json")
    (work / "c.yaml").write_text(BASE.replace("good.json", "pipe.json") + "out_dir: runs\n",
                                 encoding="utf-8")
    refused(lens("run", "c.yaml", cwd=work), "pipe.json: not a regular file",
            "field 'dataset.path'")
    os.mkfifo(work / "pipe.yaml")
    refused(lens("run", "pipe.yaml", cwd=work), "pipe.yaml: not a regular file")
    res = lens("datasets", "validate", "pipe.json", cwd=work)
    assert res.returncode == 2 and "pipe.json: not a regular file" in res.stdout
    assert not (work / "runs").exists()


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_device_as_dataset_and_config(work: Path) -> None:
    (work / "c.yaml").write_text(BASE.replace("good.json", "/dev/zero") + "out_dir: runs\n",
                                 encoding="utf-8")
    refused(lens("run", "c.yaml", cwd=work), "/dev/zero: not a regular file")
    refused(lens("run", "/dev/zero", cwd=work), "/dev/zero: not a regular file")
    assert not (work / "runs").exists()


def test_relative_out_dir_resolves_against_the_config_folder(work: Path) -> None:
    """As the README says of every relative path in a config."""
    sub = work / "configs"
    sub.mkdir()
    (sub / "c.yaml").write_text(BASE.replace("good.json", "../good.json")
                                + "out_dir: runs\nreport: false\nscoring: {enabled: false}\n",
                                encoding="utf-8")
    res = lens("run", "configs/c.yaml", "--quiet", cwd=work)
    assert res.returncode == 0, res.stderr
    assert len(list((sub / "runs").iterdir())) == 1
    assert not (work / "runs").exists()


def test_pasted_key_is_refused_without_being_echoed(work: Path) -> None:
    key = "sk-proj-PASTEDKEY0123456789abcdef"
    (work / "c.yaml").write_text(BASE.replace("scripted/policy", f"openai/x, api_key_env: {key}")
                                 + "out_dir: runs\n", encoding="utf-8")
    res = lens("run", "c.yaml", cwd=work)
    refused(res, "field 'agent.api_key_env'", "not the key itself")
    assert "PASTEDKEY" not in res.stdout + res.stderr
    assert not (work / "runs").exists()


def test_a_huge_field_is_never_echoed_whole(work: Path) -> None:
    data = json.loads((work / "good.json").read_text())
    data["questions"][0]["question_type"] = "T" * 5_000_000  # an enum error quotes its input
    data["questions"][0]["ground_truth"]["key_facts"] = ["F" * 3_000]
    (work / "huge.json").write_text(json.dumps(data), encoding="utf-8")
    res = lens("datasets", "validate", "huge.json", cwd=work)
    assert res.returncode == 2
    assert "$.questions[0].question_type" in res.stdout
    assert "$.questions[0].ground_truth.key_facts[0]: String should have at most 2000" \
        in res.stdout
    assert len(res.stdout) < 10_000
    (work / "c.yaml").write_text(BASE.replace("good.json", "huge.json") + "out_dir: runs\n",
                                 encoding="utf-8")
    res = lens("run", "c.yaml", cwd=work)
    refused(res, "huge.json")
    assert len(res.stderr) < 10_000


def test_a_scope_selection_without_questions_is_refused(work: Path) -> None:
    data = json.loads((work / "good.json").read_text())
    extra = json.loads(json.dumps(data["scopes"][0]).replace('": "s', '": "t'))
    data["scopes"].append(extra)
    (work / "two.json").write_text(json.dumps(data), encoding="utf-8")
    (work / "c.yaml").write_text("dataset: {path: two.json, scopes: [t]}\nadapters: "
                                 "[{name: sqlite_fts}]\nagent: {model: scripted/policy}\n"
                                 "out_dir: runs\n", encoding="utf-8")
    refused(lens("run", "c.yaml", cwd=work), "c.yaml: field 'dataset.scopes'", "no questions")
    assert not (work / "runs").exists()
