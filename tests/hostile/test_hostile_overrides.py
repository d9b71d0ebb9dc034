"""Hostile and careless ``--set`` values through ``lens run``: a refusal never quotes the value
(a key, a URL's password), an alias bomb or a value nested 50,000 deep is refused at once with
exit 2, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.runs import write_config
from tests.support.cli import Lens, cli_runner

SECRET = "sk-hostile-0123456789abcdef"
PASSWORD = "hunter2hunter2"


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def _refused(lens: Lens, tmp_path: Path, *sets: str) -> str:
    cfg = write_config(tmp_path, "o", ["sqlite_fts"])
    args = [x for s in sets for x in ("--set", s)]
    r = lens("run", str(cfg), "--quiet", *args)
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "Traceback" not in out
    assert not (tmp_path / "runs").exists()
    return out


# -- 3. refusals name the field, never the value -----------------------------------------------

@pytest.mark.parametrize("change", [
    f"agent.api_key_env={SECRET}",
    f"agent.api_key={SECRET}",
    f"agent.base_url=ftp://user:{PASSWORD}@example.invalid/v1",
    f"agent.base_urll={SECRET}",
    f"agent.budget.max_turns.deeper={SECRET}",
])
def test_a_refused_set_never_echoes_its_value(lens: Lens, tmp_path: Path, change: str) -> None:
    out = _refused(lens, tmp_path, change)
    assert SECRET not in out and PASSWORD not in out, out
    assert change.partition("=")[0] in out  # the field is named


# -- 11. alias bombs and deep nesting are refused at once ---------------------------------------

@pytest.mark.parametrize("field", ["agent.options", "adapters.0.options"])
def test_a_set_alias_bomb_is_refused(lens: Lens, tmp_path: Path, field: str) -> None:
    # 9**9 leaves, into a field that takes any mapping (a typed field such as agent.budget
    # refuses a list before expanding it, so it would not show the bomb).
    bomb = "[" + ", ".join(["&a [x, x, x, x, x, x, x, x, x]"] + [
        f"&{chr(98 + i)} [*{chr(97 + i)}" + f", *{chr(97 + i)}" * 8 + "]"
        for i in range(8)]) + "]"
    out = _refused(lens, tmp_path, f"{field}={{k: {bomb}}}")
    # The guard's own words (the test's folder name holds "alias" too).
    assert "YAML aliases (*name) are not allowed" in out and f"--set {field}" in out


def test_a_set_value_nested_50000_deep_is_refused(lens: Lens, tmp_path: Path) -> None:
    out = _refused(lens, tmp_path, "agent.budget=" + "[" * 50_000 + "]" * 50_000)
    assert "nested" in out and "--set agent.budget" in out


def test_an_oversized_set_value_is_refused(lens: Lens, tmp_path: Path) -> None:
    out = _refused(lens, tmp_path, "name=" + "x" * 2_000_000)
    assert "--set name" in out and len(out) < 5_000
