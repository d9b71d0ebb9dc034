"""``lens cache`` and the runtime open only lens's own cache file: another application's SQLite
database (even one with a ``completions`` table) and a file that is not SQLite are refused with
exit 2 and left byte-identical; a cache lens made before its mark is still read and cleared."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from lens.commands.cli import main
from lens.models.base import Completion, CompletionRequest, Message, Usage
from lens.models.cache import APPLICATION_ID, ModelCache, NotLensCache, cache_key

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def lens(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """The CLI's own entry point in this process (one test below runs it as a subprocess)."""
    def run(*args: str) -> Result:
        code = main(list(args))
        out = capsys.readouterr()
        return Result(code, out.out, out.err)
    return run


def test_refusal_through_a_real_subprocess(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    before = other_app_db(path)
    out = subprocess.run([sys.executable, "-m", "lens", "cache", "clear", "--path", str(path)],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 2, out
    assert "not a lens model cache" in out.stderr and "Traceback" not in out.stderr
    assert path.read_bytes() == before


def other_app_db(path: Path) -> bytes:
    """Another program's database that happens to have a ``completions`` table."""
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE completions (id INTEGER PRIMARY KEY, prompt TEXT, answer TEXT);"
        "INSERT INTO completions (prompt, answer) VALUES ('2+2', '4'), ('hi', 'hello');"
        "CREATE TABLE settings (k TEXT, v TEXT);")
    db.commit()
    db.close()
    return path.read_bytes()


def put_one(cache: ModelCache, text: str = "a") -> None:
    req = CompletionRequest(messages=[Message(role="user", content=text)])
    cache.put(cache_key(provider="openai", model="m", base_url=None, request=req),
              Completion(text=text, provider="openai", model="m",
                         usage=Usage(prompt_tokens=1, completion_tokens=1)))


@pytest.mark.parametrize("action", [["stats"], ["stats", "--json"], ["clear"],
                                    ["clear", "--model", "openai/m"]])
def test_another_apps_sqlite_is_refused_and_unchanged(
        tmp_path: Path, action: list[str], lens: Callable[..., Result]) -> None:
    path = tmp_path / "app.db"
    before = other_app_db(path)
    out = lens("cache", *action, "--path", str(path))
    assert out.returncode == 2, out
    assert "not a lens model cache" in out.stderr and str(path) in out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]  # no -wal, no -shm


@pytest.mark.parametrize("content", [b"this is not sqlite\n" * 300,
                                     b"SQLite format 3\x00" + b"\xff" * 200])
def test_a_file_that_is_not_sqlite_is_refused_and_unchanged(
        tmp_path: Path, content: bytes, lens: Callable[..., Result]) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    for action in ("stats", "clear"):
        out = lens("cache", action, "--path", str(path))
        assert out.returncode == 2, out
        assert "not a lens model cache" in out.stderr and "Traceback" not in out.stderr
        assert path.read_bytes() == content


def test_another_applications_id_is_named(tmp_path: Path,
                                                 lens: Callable[..., Result]) -> None:
    path = tmp_path / "stamped.db"
    db = sqlite3.connect(path)
    db.execute("PRAGMA application_id = 1234")
    db.execute("CREATE TABLE completions (key TEXT)")
    db.commit()
    db.close()
    before = path.read_bytes()
    out = lens("cache", "clear", "--path", str(path))
    assert out.returncode == 2 and "application_id 0x000004d2" in out.stderr
    assert path.read_bytes() == before


def test_a_run_config_pointing_at_another_apps_db_is_refused(tmp_path: Path) -> None:
    # The runtime opens the cache through the same check as the commands.
    path = tmp_path / "app.db"
    before = other_app_db(path)
    with pytest.raises(NotLensCache, match="not a lens model cache"):
        ModelCache(path)
    assert path.read_bytes() == before


def test_new_cache_carries_the_mark(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "models.sqlite"
    cache = ModelCache(path)
    put_one(cache)
    cache.close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert db.execute("PRAGMA user_version").fetchone()[0] == 1
    db.close()
    assert ModelCache.kind(path) == "lens"


def unmarked_cache(path: Path) -> None:
    """A cache as lens wrote it before the mark: its two tables, no application_id."""
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE completions (key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT "
        "NOT NULL, created REAL NOT NULL, completion TEXT NOT NULL);"
        "CREATE TABLE runs (run_id TEXT PRIMARY KEY, hits INTEGER NOT NULL, misses INTEGER "
        "NOT NULL, updated REAL NOT NULL);")
    db.commit()
    db.close()
    cache = ModelCache.__new__(ModelCache)  # write rows without the constructor's marking
    cache.path = path
    cache._lock = threading.Lock()
    cache._db = sqlite3.connect(path, isolation_level=None)
    put_one(cache, "x")
    put_one(cache, "y")
    cache.close()


def test_cache_from_before_the_mark(tmp_path: Path,
                                                 lens: Callable[..., Result]) -> None:
    path = tmp_path / "old.sqlite"
    unmarked_cache(path)
    assert ModelCache.kind(path) == "unmarked"
    before = path.read_bytes()
    out = lens("cache", "stats", "--path", str(path), "--json")
    assert out.returncode == 0, out.stderr
    assert '"entries": 2' in out.stdout
    assert path.read_bytes() == before  # stats reads, never marks
    out = lens("cache", "clear", "--path", str(path))
    assert out.returncode == 0 and "deleted 2" in out.stdout, out
    assert ModelCache.kind(path) == "lens"  # marked once written


def test_empty_file_is_no_cache_and_left_alone(tmp_path: Path,
                                                 lens: Callable[..., Result]) -> None:
    path = tmp_path / "empty.sqlite"
    path.write_bytes(b"")
    for action in ("stats", "clear"):
        out = lens("cache", action, "--path", str(path))
        assert out.returncode == 0 and "no cache" in out.stdout, out
    assert path.read_bytes() == b""


def test_huge_names_in_the_cache_are_cut(tmp_path: Path,
                                                 lens: Callable[..., Result]) -> None:
    path = tmp_path / "c.sqlite"
    cache = ModelCache(path)
    put_one(cache)
    cache.get("missing")
    cache.record_run("r" * 1_000_000)
    cache.close()
    out = lens("cache", "stats", "--path", str(path))
    assert out.returncode == 0, out.stderr
    assert len(out.stdout) < 5_000 and "characters cut" in out.stdout


def test_lens_run_refuses_another_apps_db_as_its_cache(tmp_path: Path) -> None:
    import yaml

    from tests.core.helpers import make_dataset, write_json

    path = tmp_path / "app.db"
    before = other_app_db(path)
    ds = write_json(tmp_path / "ds.json", make_dataset(n_episodes=4, checkpoints=(4,),
                                                       questions_per_checkpoint=1))
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "c", "dataset": {"path": str(ds)}, "adapters": [{"name": "null"}],
        # Never reached: the cache is opened (and refused) before the first call.
        "agent": {"model": "openai/x", "base_url": "http://127.0.0.1:9/v1"},
        "cache": {"path": str(path)}, "out_dir": str(tmp_path / "runs")}), encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "lens", "run", str(cfg), "--quiet"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 2, out
    assert f"{path}: not a lens model cache" in out.stderr and "Traceback" not in out.stderr
    assert path.read_bytes() == before
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
