"""``lens cache stats|clear`` on a real cache file, in-process and as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lens.commands.cli import main
from lens.models.base import Completion, CompletionRequest, Message, Usage
from lens.models.cache import ModelCache, cache_key


def fill(path: Path) -> None:
    cache = ModelCache(path)
    for provider, model, n in (("openai", "gpt-x", 3), ("llama_cpp", "qwen", 2)):
        for i in range(n):
            req = CompletionRequest(messages=[Message(role="user", content=f"q{i}")])
            key = cache_key(provider=provider, model=model, base_url=None, request=req)
            cache.put(key, Completion(text=f"a{i}", provider=provider, model=model,
                                      usage=Usage(prompt_tokens=3, completion_tokens=1)))
    cache.get("missing")
    cache.get(cache_key(provider="openai", model="gpt-x", base_url=None,
                        request=CompletionRequest(messages=[Message(role="user", content="q0")])))
    cache.record_run("run-1")
    cache.close()


def test_stats_and_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.sqlite"
    fill(path)
    assert main(["cache", "stats", "--path", str(path), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["entries"] == 5
    assert {m["model"]: m["entries"] for m in stats["models"]} == {
        "llama_cpp/qwen": 2, "openai/gpt-x": 3}
    assert stats["runs"][0] == {**stats["runs"][0], "run_id": "run-1", "hits": 1, "misses": 1}
    assert main(["cache", "stats", "--path", str(path)]) == 0
    table = capsys.readouterr().out
    assert "entries: 5" in table and "hit rate 50%" in table
    assert main(["cache", "clear", "--path", str(path), "--model", "openai/gpt-x"]) == 0
    assert "deleted 3" in capsys.readouterr().out
    main(["cache", "stats", "--path", str(path), "--json"])
    assert json.loads(capsys.readouterr().out)["entries"] == 2
    assert main(["cache", "clear", "--path", str(path)]) == 0
    assert "deleted 2" in capsys.readouterr().out
    main(["cache", "stats", "--path", str(path), "--json"])
    after = json.loads(capsys.readouterr().out)
    assert after["entries"] == 0 and after["runs"] == []


def test_missing_folder_and_corrupt_cache(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "stats", "--path", str(tmp_path / "none.sqlite")]) == 0
    assert "no cache yet" in capsys.readouterr().out
    assert main(["cache", "stats", "--path", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    assert main(["cache", "clear", "--path", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "not a lens model cache" in err and "Traceback" not in err


def test_cache_location_from_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "from-config.sqlite"
    fill(path)
    cfg = tmp_path / "run.yaml"
    cfg.write_text("dataset: {path: d.json}\nadapters: [{name: sqlite_fts}]\n"
                   "agent: {model: scripted/policy}\ncache: {path: from-config.sqlite}\n")
    assert main(["cache", "stats", "--config", str(cfg), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["path"] == str(path)


def test_subprocess(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    fill(path)
    out = subprocess.run([sys.executable, "-m", "lens", "cache", "stats", "--path", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "openai/gpt-x" in out.stdout
