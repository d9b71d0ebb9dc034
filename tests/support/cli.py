"""``lens ARGS`` through the CLI's entry point in the test's own process: the real command line
(argument parsing, exit codes, what reaches stdout and stderr) without the seconds a subprocess
spends importing lens. A test module makes it a fixture::

    @pytest.fixture
    def lens(tmp_path, monkeypatch, capsys) -> Lens:
        return cli_runner(tmp_path, monkeypatch, capsys)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from lens.commands.cli import main


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


Lens = Callable[..., Result]


def cli_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
               capsys: pytest.CaptureFixture[str]) -> Lens:
    """Runs ``lens ARGS`` from ``tmp_path`` with a cache of its own and no API key."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LENS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def run(*args: str) -> Result:
        capsys.readouterr()
        code = main(list(args))
        out = capsys.readouterr()
        return Result(code, out.out, out.err)

    return run
